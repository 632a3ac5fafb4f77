"""ms-swift's vLLM server mode: ``swift rollout`` started before ``swift rlhf``, waited on
and stopped, by ``rewardkit train`` and by the SageMaker entrypoint.

vLLM needs a GPU, so where a command runs here ``swift`` is tests/sagemaker/stubs/bin/swift:
a real HTTP server answering ms-swift's ``/health/`` route for ``rollout``, and a client
that must reach it for ``rlhf``. Both command lines are parsed by ms-swift's own argument
classes in .venv-swift."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from backend_venvs import ROOT, run_in_venv
from rewardkit_trainers.launch.hardware import Hardware
from rewardkit_trainers.launch.plan import NodePlacement
from rewardkit_trainers.launch.runner import dry_run, jobs, load_run

from rewardkit import ConfigError

STUB_BIN = ROOT / "tests" / "sagemaker" / "stubs" / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(tmp_path: Path, port: int, **vllm) -> Path:
    (tmp_path / "train.jsonl").write_text(
        "".join(json.dumps({"prompt": f"{i}+1=?", "reference": str(i + 1)}) + "\n"
                for i in range(4)))
    section = {"backend": "swift", "model": "Qwen/Qwen2.5-0.5B-Instruct",
               "dataset": {"train": "train.jsonl"}, "output_dir": "out", "max_steps": 2,
               "num_generations": 4, "batch_size": 3,
               "vllm": {"mode": "server", "server_port": port, **vllm}}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"rewards": {"fmt": {"reward": "soft_format"}},
                                    "train": section}))
    return path


def gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_server_mode_starts_swift_rollout_on_its_own_gpus_before_the_trainer(tmp_path):
    config = write_config(tmp_path, 8123, tensor_parallel_size=2, gpu_memory_utilization=0.8)
    plan = load_run(config, hardware=Hardware(gpus=4, vllm=True), placement=NodePlacement())
    server, trainer = dry_run(plan)["commands"]
    assert server["argv"] == [
        "swift", "rollout", "--model", "Qwen/Qwen2.5-0.5B-Instruct",
        "--vllm_tensor_parallel_size", "2", "--vllm_gpu_memory_utilization", "0.8",
        "--host", "127.0.0.1", "--port", "8123"]
    assert server["env"] == {"CUDA_VISIBLE_DEVICES": "2,3"}
    assert server["background"] is True
    assert server["ready_url"] == "http://127.0.0.1:8123/health/"
    argv = trainer["argv"]
    assert argv[:2] == ["swift", "rlhf"]
    at = argv.index("--use_vllm")
    assert argv[at:at + 8] == ["--use_vllm", "true", "--vllm_mode", "server",
                               "--vllm_server_host", "127.0.0.1", "--vllm_server_port", "8123"]
    assert "--vllm_gpu_memory_utilization" not in argv  # the server's, not the trainer's
    assert trainer["env"] == {"CUDA_VISIBLE_DEVICES": "0,1", "NPROC_PER_NODE": "2"}
    # 3 prompts x 4 completions over the 2 training GPUs
    assert argv[argv.index("--per_device_train_batch_size") + 1] == "6"


def test_server_mode_without_a_gpu_left_for_training_is_refused(tmp_path):
    plan = load_run(write_config(tmp_path, 8123), hardware=Hardware(gpus=1, vllm=True),
                    placement=NodePlacement())
    with pytest.raises(ConfigError) as err:
        dry_run(plan)
    assert "train.vllm.mode" in err.value.render()
    assert "needs more GPUs than vllm.tensor_parallel_size (1)" in err.value.render()


def test_both_commands_parse_with_ms_swift_own_arguments(tmp_path):
    config = write_config(tmp_path, 8123)
    plan = load_run(config, hardware=Hardware(gpus=2, vllm=True), placement=NodePlacement())
    server, trainer = jobs(plan)
    result = {}
    for job in (server, trainer):
        argv_file = tmp_path / f"{job.argv[1]}.json"
        argv_file.write_text(json.dumps(job.argv))
        result[job.argv[1]] = run_in_venv("swift", "swift_args_check.py", str(argv_file))
    assert result["rollout"]["unknown"] == []
    assert result["rollout"]["parsed"] == {
        "model": "Qwen/Qwen2.5-0.5B-Instruct", "host": "127.0.0.1", "port": 8123,
        "vllm_tensor_parallel_size": 1, "vllm_data_parallel_size": 1,
        "vllm_gpu_memory_utilization": 0.5}
    assert result["rlhf"]["unknown"] == []
    parsed = result["rlhf"]["parsed"]
    assert (parsed["use_vllm"], parsed["vllm_mode"], parsed["vllm_server_host"],
            parsed["vllm_server_port"]) == (True, "server", ["127.0.0.1"], [8123])


def test_rewardkit_train_starts_waits_for_and_stops_the_rollout_server(tmp_path):
    port = free_port()
    config = write_config(tmp_path, port)
    log, pid_file = tmp_path / "swift.log", tmp_path / "rollout.pid"
    env = {**os.environ, "PATH": f"{STUB_BIN}{os.pathsep}{os.environ['PATH']}",
           "REWARDKIT_GPUS": "2", "REWARDKIT_VLLM": "1", "STUB_LOG": str(log),
           "STUB_ROLLOUT_PID": str(pid_file), "STUB_ROLLOUT_DELAY": "2"}
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "train", str(config)],
                          env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert run["health"] == {"status": "ok"}  # the trainer started once /health/ answered
    assert (run["CUDA_VISIBLE_DEVICES"], run["NPROC_PER_NODE"]) == ("0", None)
    assert run["argv"][run["argv"].index("--vllm_server_port") + 1] == str(port)
    assert gone(int(pid_file.read_text())), "the rollout server outlived rewardkit train"


def test_a_rollout_server_that_dies_stops_the_run_before_training(tmp_path):
    config = write_config(tmp_path, free_port())
    log = tmp_path / "swift.log"
    env = {**os.environ, "PATH": f"{STUB_BIN}{os.pathsep}{os.environ['PATH']}",
           "REWARDKIT_GPUS": "2", "REWARDKIT_VLLM": "1", "STUB_LOG": str(log),
           "STUB_ROLLOUT_EXIT": "3"}
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "train", str(config)],
                          env=env, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 1
    assert "exited with code 3 before" in proc.stdout
    assert not log.exists()  # swift rlhf never ran
