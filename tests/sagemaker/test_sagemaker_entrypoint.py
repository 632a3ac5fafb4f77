"""The container entrypoint on one node and its failure paths, as real processes."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest
from sm_harness import STUBS, Cluster, free_port, s3_keys, wait_for


def trl_spec(bucket: str, **extra) -> dict:
    return {
        "backend": "trl",
        "command": [sys.executable, str(STUBS / "stub_trl.py")],
        "checkpoint_s3": f"s3://{bucket}/ckpt/steps",
        "output_s3": f"s3://{bucket}/out",
        "sync_interval_s": 600,  # only the end-of-run / signal sync uploads
        **extra,
    }


def flagged(s3, bucket: str) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for key in s3_keys(s3, bucket, "ckpt/steps/"):
        step, name = key.split("/")[2:4]
        found.setdefault(step, set())
        if name.startswith("sync_completed_"):
            found[step].add(int(name.removeprefix("sync_completed_").removesuffix(".flag")))
    return found


def test_sigterm_syncs_complete_checkpoints_then_a_restart_resumes(
    cluster: Cluster, s3, bucket, tmp_path
):
    events = tmp_path / "events.log"
    env = {"STUB_LOG": str(events), "STUB_HANG_AT": "3"}
    node = cluster.start(trl_spec(bucket), ["algo-1"], "algo-1", "run1", env)
    wait_for(lambda: events.exists() and "hanging 3" in events.read_text(), 60, "step 3 save")
    assert flagged(s3, bucket) == {}  # the periodic sync has not run yet

    node.proc.send_signal(signal.SIGTERM)  # spot interruption notice
    assert node.wait(60) == 143, node.output()
    # complete steps went up in the last sync; the half-written step 3 did not
    assert flagged(s3, bucket) == {"checkpoint-1": {0}, "checkpoint-2": {0}}
    assert not node.failure.exists()

    env = {"STUB_LOG": str(events)}
    node = cluster.start(trl_spec(bucket), ["algo-1"], "algo-1", "run2", env)  # a fresh disk
    assert node.wait(60) == 0, node.output()
    assert events.read_text().splitlines()[-4:] == ["start 2", "saved 3", "saved 4", "done"]
    assert flagged(s3, bucket) == {f"checkpoint-{i}": {0} for i in range(1, 5)}
    final = s3_keys(s3, bucket, "out/local/final-model/")
    assert final == ["out/local/final-model/config.json", "out/local/final-model/model.safetensors"]


def test_keep_last_prunes_old_steps_but_keeps_the_newest(cluster: Cluster, s3, bucket, tmp_path):
    spec = trl_spec(bucket, keep_last=2, sync_interval_s=0.2)
    node = cluster.start(spec, ["algo-1"], "algo-1", "run", {"STUB_LOG": str(tmp_path / "e")})
    assert node.wait(60) == 0, node.output()
    assert flagged(s3, bucket) == {"checkpoint-3": {0}, "checkpoint-4": {0}}


def test_a_training_failure_becomes_the_failure_reason(cluster: Cluster, tmp_path):
    spec = {"backend": "trl", "command": [sys.executable, str(STUBS / "stub_trl.py")]}
    env = {"STUB_LOG": str(tmp_path / "e"), "STUB_FAIL": "CUDA out of memory (stub)"}
    node = cluster.start(spec, ["algo-1"], "algo-1", "run", env)
    assert node.wait(60) == 1
    reason = node.failure.read_text()
    assert reason.startswith(
        "rewardkit: training command failed with exit code 1 on algo-1 (rank 0)"
    )
    assert "CUDA out of memory (stub)" in reason


def test_a_worker_that_cannot_reach_the_head_exits_with_a_readable_error(cluster: Cluster):
    port = free_port()  # nothing listens there
    spec = {"backend": "easyr1", "command": ["true"], "ray_port": port, "connect_timeout_s": 2}
    node = cluster.start(spec, ["algo-1", "algo-2"], "algo-2", "run")
    assert node.wait(60) == 1
    reason = node.failure.read_text()
    assert reason.startswith(
        f"rewardkit: algo-2 (rank 1) cannot join the head algo-1 (127.0.0.1:{port}): "
        f"cannot reach the head node at 127.0.0.1:{port}"
    ), reason


def test_trl_on_two_nodes_runs_accelerate_on_each_with_its_machine_rank(
    cluster: Cluster, s3, bucket, tmp_path
):
    events = tmp_path / "events.log"
    # `accelerate` here is a stand-in (tests/sagemaker/stubs/bin) that records its options
    env = {
        "STUB_LOG": str(events),
        "PATH": f"{STUBS / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }
    spec = trl_spec(bucket, gpus_per_node=4, dist_port=29517)
    nodes = [cluster.start(spec, ["algo-1", "algo-2"], h, "run", env) for h in ("algo-1", "algo-2")]
    assert [n.wait(60) for n in nodes] == [0, 0], nodes[0].output() + nodes[1].output()
    lines = events.read_text().splitlines()
    for rank in (0, 1):
        assert (f"accelerate machine {rank} of 2 main 127.0.0.1:29517 processes 8 "
                "DEEPSPEED zero 3") in lines
    assert flagged(s3, bucket) == {f"checkpoint-{i}": {0, 1} for i in range(1, 5)}
    final = s3_keys(s3, bucket, "out/local/final-model/")
    assert final == ["out/local/final-model/config.json", "out/local/final-model/model.safetensors"]


def swift_server_spec(port: int, **extra) -> dict:
    command = ["swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-0.5B-Instruct",
               "--use_vllm", "true", "--vllm_mode", "server", "--vllm_server_port", str(port)]
    return {"backend": "swift", "command": command, "gpus_per_node": 4,
            "server_ready_timeout_s": 60, **extra}


def test_swift_server_mode_starts_swift_rollout_before_training_and_stops_it(
        cluster: Cluster, tmp_path):
    # `swift` is a stand-in (tests/sagemaker/stubs/bin): a real HTTP server answering
    # ms-swift's /health/ route for `rollout`, a client that must reach it for `rlhf`
    port = free_port()
    log, pid_file = tmp_path / "swift.log", tmp_path / "rollout.pid"
    env = {"STUB_LOG": str(log), "STUB_ROLLOUT_PID": str(pid_file),
           "PATH": f"{STUBS / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    node = cluster.start(swift_server_spec(port), ["algo-1"], "algo-1", "run", env)
    assert node.wait(90) == 0, node.output()
    (run,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert run["health"] == {"status": "ok"}
    assert (run["CUDA_VISIBLE_DEVICES"], run["NPROC_PER_NODE"]) == ("0,1,2", "3")
    assert run["argv"] == [*swift_server_spec(port)["command"][1:],
                           "--output_dir", str(node.checkpoint_dir), "--add_version", "false",
                           "--vllm_server_host", "127.0.0.1"]
    assert "starting the rollout server: swift rollout --model Qwen/Qwen2.5-0.5B-Instruct " \
        f"--vllm_tensor_parallel_size 1 --host 127.0.0.1 --port {port}" in node.output()
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped (and reaped) before the entrypoint exited


def test_a_rollout_server_that_dies_is_the_failure_reason(cluster: Cluster, tmp_path):
    env = {"STUB_LOG": str(tmp_path / "swift.log"), "STUB_ROLLOUT_EXIT": "3",
           "PATH": f"{STUBS / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    node = cluster.start(swift_server_spec(free_port()), ["algo-1"], "algo-1", "run", env)
    assert node.wait(60) == 1
    assert node.failure.read_text().startswith(
        "rewardkit: the rollout server (swift rollout) exited with code 3 before http://")
    assert not (tmp_path / "swift.log").exists()
