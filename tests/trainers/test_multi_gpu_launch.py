"""Multi-GPU TRL through accelerate + DeepSpeed, vLLM on by default, and the vLLM server.

The machine is described by a :class:`Hardware` value (what ``detect_hardware`` returns on
a real machine, or what ``REWARDKIT_GPUS`` / ``REWARDKIT_VLLM`` say): the commands are the
real ones ``rewardkit train`` builds and runs for that machine."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from backend_venvs import ROOT
from rewardkit_trainers.launch.hardware import Hardware, detect_hardware
from rewardkit_trainers.launch.plan import Job, NodePlacement
from rewardkit_trainers.launch.runner import dry_run, load_run, run_jobs

from rewardkit import ConfigError


def write_config(tmp_path: Path, **train) -> Path:
    (tmp_path / "train.jsonl").write_text(
        "".join(json.dumps({"prompt": f"{i}+1=?", "reference": str(i + 1)}) + "\n"
                for i in range(4)))
    section = {"backend": "trl", "model": "Qwen/Qwen2.5-0.5B-Instruct",
               "dataset": {"train": "train.jsonl"}, "output_dir": "out", "max_steps": 2,
               **train}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"rewards": {"fmt": {"reward": "soft_format"}},
                                    "train": section}))
    return path


# ---------------------------------------------------------------- detection


def test_detection_follows_the_documented_overrides():
    assert detect_hardware({"REWARDKIT_GPUS": "8", "REWARDKIT_VLLM": "1"}) == Hardware(8, True)
    assert detect_hardware({"REWARDKIT_GPUS": "0", "REWARDKIT_VLLM": "false"}) == \
        Hardware(0, False)


def test_no_visible_device_means_no_gpu():
    assert detect_hardware({"CUDA_VISIBLE_DEVICES": "", "REWARDKIT_VLLM": "0"}).gpus == 0


def test_a_malformed_override_is_a_clear_error():
    with pytest.raises(ValueError, match="REWARDKIT_GPUS='many': expected a GPU count"):
        detect_hardware({"REWARDKIT_GPUS": "many"})
    with pytest.raises(ValueError, match="REWARDKIT_VLLM='maybe'"):
        detect_hardware({"REWARDKIT_GPUS": "1", "REWARDKIT_VLLM": "maybe"})


# ---------------------------------------------------------------- TRL


def test_four_gpus_launch_accelerate_with_deepspeed_zero3_and_vllm_colocate(tmp_path):
    config = write_config(tmp_path)
    plan = load_run(config, hardware=Hardware(gpus=4, vllm=True), placement=NodePlacement())
    out = tmp_path / "out"
    assert plan.launched
    described = dry_run(plan)
    [job] = described["commands"]
    assert job["argv"] == [
        "accelerate", "launch", "--config_file", str(out / "accelerate-zero3.yaml"),
        "--num_processes", "4",
        "-m", "rewardkit_trainers.launch.trl_train",
        "--config", str(config), "--train", str(out / "rewardkit-train.json")]
    assert job["env"] == {}
    accel = yaml.safe_load((out / "accelerate-zero3.yaml").read_text())
    assert accel["distributed_type"] == "DEEPSPEED"
    assert accel["num_processes"] == 4 and accel["num_machines"] == 1
    assert accel["deepspeed_config"] == {
        "zero_stage": 3, "offload_optimizer_device": "none", "offload_param_device": "none",
        "zero3_init_flag": True, "zero3_save_16bit_model": True}
    resolved = json.loads((out / "rewardkit-train.json").read_text())
    assert resolved["gpus"] == 4 and resolved["vllm"]["enabled"] is True
    grpo = described["grpo_config"]
    assert grpo["use_vllm"] is True and grpo["vllm_mode"] == "colocate"
    assert grpo["use_cpu"] is False
    assert described["hardware"] == {"gpus": 4, "vllm": True, "nodes": 1, "node_rank": 0}


def test_one_gpu_trains_in_process_with_vllm_colocate(tmp_path):
    plan = load_run(write_config(tmp_path), hardware=Hardware(gpus=1, vllm=True),
                    placement=NodePlacement())
    assert not plan.launched
    described = dry_run(plan)
    assert "commands" not in described
    assert described["grpo_config"]["use_vllm"] is True
    assert described["grpo_config"]["vllm_mode"] == "colocate"


@pytest.mark.parametrize("hardware", [Hardware(0, True), Hardware(4, False)],
                         ids=["no-gpu", "no-vllm"])
def test_vllm_stays_off_without_a_gpu_or_without_vllm(tmp_path, hardware):
    described = dry_run(load_run(write_config(tmp_path), hardware=hardware,
                         placement=NodePlacement()))
    assert described["grpo_config"]["use_vllm"] is False


def test_vllm_off_in_the_config_stays_off(tmp_path):
    config = write_config(tmp_path, vllm={"enabled": False})
    described = dry_run(load_run(config, hardware=Hardware(1, True), placement=NodePlacement()))
    assert described["grpo_config"]["use_vllm"] is False


def test_server_mode_starts_trl_vllm_serve_on_its_own_gpu_before_the_trainer(tmp_path):
    # 6 prompts x 8 completions split over the 3 training GPUs (8 prompts would not)
    config = write_config(tmp_path, batch_size=6, vllm={"mode": "server", "server_port": 8123})
    plan = load_run(config, hardware=Hardware(gpus=4, vllm=True), placement=NodePlacement())
    described = dry_run(plan)
    assert described["grpo_config"]["per_device_train_batch_size"] == 16
    server, trainer = described["commands"]
    assert server["argv"] == [
        "trl", "vllm-serve", "--model", "Qwen/Qwen2.5-0.5B-Instruct",
        "--tensor-parallel-size", "1", "--gpu-memory-utilization", "0.5",
        "--host", "127.0.0.1", "--port", "8123"]
    assert server["env"] == {"CUDA_VISIBLE_DEVICES": "3"}
    assert server["background"] is True
    assert server["ready_url"] == "http://127.0.0.1:8123/health/"
    assert trainer["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2"}
    assert trainer["argv"][4:6] == ["--num_processes", "3"]
    grpo = described["grpo_config"]
    assert (grpo["vllm_mode"], grpo["vllm_server_host"], grpo["vllm_server_port"]) == \
        ("server", "127.0.0.1", 8123)


def test_server_mode_on_one_gpu_is_refused(tmp_path):
    config = write_config(tmp_path, vllm={"mode": "server"})
    plan = load_run(config, hardware=Hardware(gpus=1, vllm=True), placement=NodePlacement())
    with pytest.raises(ConfigError) as err:
        dry_run(plan)
    assert "train.vllm.mode" in err.value.render()
    assert "needs more GPUs than vllm.tensor_parallel_size (1)" in err.value.render()


def test_the_second_node_launches_with_its_machine_rank(tmp_path):
    plan = load_run(write_config(tmp_path, bf16=True), hardware=Hardware(gpus=8, vllm=True),
                    placement=NodePlacement(num_nodes=2, rank=1, head_ip="10.0.0.1", port=29517))
    [job] = dry_run(plan)["commands"]
    assert job["argv"][:17] == [
        "accelerate", "launch", "--config_file", str(tmp_path / "out/accelerate-zero3.yaml"),
        "--num_processes", "16", "--num_machines", "2", "--machine_rank", "1",
        "--main_process_ip", "10.0.0.1", "--main_process_port", "29517",
        "-m", "rewardkit_trainers.launch.trl_train", "--config"]
    accel = yaml.safe_load((tmp_path / "out/accelerate-zero3.yaml").read_text())
    assert (accel["machine_rank"], accel["mixed_precision"]) == (1, "bf16")


def test_deepspeed_none_is_plain_ddp(tmp_path):
    plan = load_run(write_config(tmp_path, deepspeed="none"), hardware=Hardware(2, False),
                    placement=NodePlacement())
    [job] = dry_run(plan)["commands"]
    assert job["argv"][3].endswith("accelerate-ddp.yaml")
    accel = yaml.safe_load(Path(job["argv"][3]).read_text())
    assert accel["distributed_type"] == "MULTI_GPU" and "deepspeed_config" not in accel


def test_inside_a_launcher_it_trains_in_process(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "0")
    plan = load_run(write_config(tmp_path), hardware=Hardware(4, True), placement=NodePlacement())
    assert not plan.launched


def test_the_example_dry_runs_on_the_machine_it_is_told_through_the_cli(tmp_path):
    config = ROOT / "examples" / "gsm8k-rlvr-multi-gpu.yaml"
    env = {**os.environ, "REWARDKIT_GPUS": "4", "REWARDKIT_VLLM": "1"}
    env.pop("REWARDKIT_NUM_NODES", None)
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "train", str(config),
                           "--dry-run", "--json", "--output-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr
    described = json.loads(proc.stdout)
    assert described["commands"][0]["argv"][:6] == [
        "accelerate", "launch", "--config_file", str(tmp_path / "out/accelerate-zero3.yaml"),
        "--num_processes", "4"]
    assert described["grpo_config"]["use_vllm"] is True
    assert described["grpo_config"]["bf16"] is True


def test_a_tiny_built_model_trains_in_one_process_whatever_the_gpus(tmp_path):
    config = tmp_path / "quick.yaml"
    config.write_text((ROOT / "examples" / "quickstart.yaml").read_text())
    plan = load_run(config, hardware=Hardware(4, False), placement=NodePlacement(),
                    output_dir=str(tmp_path / "out"))
    assert not plan.launched


# ---------------------------------------------------------------- ms-swift


def test_swift_on_gpus_with_vllm_runs_colocate_on_every_gpu(tmp_path):
    config = write_config(tmp_path, backend="swift")
    plan = load_run(config, hardware=Hardware(gpus=2, vllm=True), placement=NodePlacement())
    [job] = dry_run(plan)["commands"]
    argv = job["argv"]
    assert argv[argv.index("--use_vllm") + 1] == "true"
    assert argv[argv.index("--vllm_mode") + 1] == "colocate"
    assert job["env"] == {"NPROC_PER_NODE": "2"}


def test_swift_without_a_gpu_generates_without_vllm(tmp_path):
    plan = load_run(write_config(tmp_path, backend="swift"), hardware=Hardware(0, True),
                    placement=NodePlacement())
    argv = dry_run(plan)["commands"][0]["argv"]
    assert argv[argv.index("--use_vllm") + 1] == "false"


# ---------------------------------------------------------------- running the jobs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Console:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def rule(self, text: str) -> None:
        self.lines.append(text)

    def print(self, text: str, **_kw: object) -> None:
        self.lines.append(str(text))


def test_a_background_server_is_up_before_the_next_job_and_gone_after(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    server = Job("server", [sys.executable, "-m", "http.server", str(port),
                            "--bind", "127.0.0.1"], tmp_path, background=True, ready_url=url)
    client = Job("client", [sys.executable, "-c",
                            f"import urllib.request; urllib.request.urlopen({url!r}, timeout=5)"],
                 tmp_path)
    assert run_jobs([server, client], Console()) == 0
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_a_server_that_dies_before_it_is_ready_stops_the_run(tmp_path):
    dead = Job("server", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path,
               background=True, ready_url=f"http://127.0.0.1:{free_port()}/")
    marker = tmp_path / "ran"
    after = Job("trainer", [sys.executable, "-c", f"open({str(marker)!r}, 'w')"], tmp_path)
    console = Console()
    assert run_jobs([dead, after], console) == 1
    assert not marker.exists()
    assert any("exited with code 3 before" in line for line in console.lines)


# ---------------------------------------------------------------- one launched process


@pytest.mark.slow  # ~18 s: a launched process trains
def test_a_launched_process_trains_with_the_resolved_train_section(tmp_path):
    """What each `accelerate launch -m rewardkit_trainers.launch.trl_train` process runs, run here
    as the single process of a CPU machine."""
    pytest.importorskip("trl")
    config = tmp_path / "quick.yaml"
    config.write_text((ROOT / "examples" / "quickstart.yaml").read_text())
    plan = load_run(config, hardware=Hardware(0, False), placement=NodePlacement(),
                    output_dir=str(tmp_path / "out"), max_steps=2)
    train_file = tmp_path / "rewardkit-train.json"
    train_file.write_text(plan.train.model_dump_json())
    env = {**os.environ, "RANK": "0", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, "-m", "rewardkit_trainers.launch.trl_train",
                           "--config", str(config), "--train", str(train_file)],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "2 steps" in proc.stdout
    assert (tmp_path / "out" / "final" / "config.json").exists()
    assert (tmp_path / "out" / "reward_curves.csv").exists()


def test_sigterm_to_rewardkit_train_stops_the_background_server(tmp_path):
    """A spot interruption sends SIGTERM to the training command's process group; the
    server, in its own group, must not outlive it."""
    port = free_port()
    pid_file = tmp_path / "server.pid"
    server_code = (
        "import os, http.server, pathlib, sys\n"
        "pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))\n"
        "handler = http.server.SimpleHTTPRequestHandler\n"
        "http.server.HTTPServer(('127.0.0.1', int(sys.argv[2])), handler).serve_forever()\n")
    jobs = {
        "server": [sys.executable, "-c", server_code, str(pid_file), str(port)],
        "trainer": [sys.executable, "-c",
                    "import time; print('training', flush=True); time.sleep(120)"],
        "url": f"http://127.0.0.1:{port}/",
        "cwd": str(tmp_path),
    }
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    script = tmp_path / "run.py"
    script.write_text(
        "import json, sys\n"
        "from pathlib import Path\n"
        "from rewardkit_trainers.launch.plan import Job\n"
        "from rewardkit_trainers.launch.runner import run_jobs\n"
        "class Console:\n"
        "    def rule(self, *a, **k): pass\n"
        "    def print(self, *a, **k): pass\n"
        f"spec = json.loads(Path({str(tmp_path / 'jobs.json')!r}).read_text())\n"
        "cwd = Path(spec['cwd'])\n"
        "server = Job('server', spec['server'], cwd, background=True, ready_url=spec['url'])\n"
        "trainer = Job('trainer', spec['trainer'], cwd)\n"
        "sys.exit(run_jobs([server, trainer], Console()))\n")
    # its own process group, which gets the SIGTERM, as the SageMaker entrypoint sends it
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            process_group=0)
    try:
        assert proc.stdout.readline().strip() == "training"
        server_pid = int(pid_file.read_text())
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(server_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the server outlived rewardkit train")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
