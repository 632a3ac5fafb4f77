"""``rewardkit serve`` with ``executor: ray``: a real server process on 127.0.0.1 joins the
tests' three-node cluster, its process-mode reward is scored by Ray actors (they hold a
cluster CPU while the service runs), its answers are those of ``rewardkit score`` on the
same rows, and SIGTERM drains it to exit 0 with its actors gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import ray
import yaml

from rewardkit.execution import ray as ray_executor
from rewardkit.execution.ray_cluster import with_auth_mode

RAY_ENV = ("RAY_ADDRESS",)
START_TIMEOUT = 40.0
REQUEST_TIMEOUT = 30.0
EXIT_TIMEOUT = 20.0

ROWS = [{"prompt": "q", "reference": "7", "completion": "<answer>7</answer>"},
        {"prompt": "q", "reference": "7", "completion": "<answer>8</answer>"},
        {"prompt": "r", "reference": "12", "completion": "so 12"}]


def config(address: str, executor: str) -> dict[str, Any]:
    return {"executor": executor, "ray": {"address": address, "actors": 1},
            "rewards": {"answer": {"reward": "math_answer", "mode": "process",
                                   "timeout": 10}}}


def post(url: str, body: Any) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT) as resp:
        assert resp.status == 200
        return json.loads(resp.read())


def free_cpus() -> float:
    return float(ray.available_resources().get("CPU", 0.0))


def wait_for_cpus(expected: float, deadline: float) -> float:
    """The cluster's free CPUs once they are ``expected`` (resource reports lag)."""
    while (cpus := free_cpus()) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return cpus


def test_serve_scores_on_ray_like_rewardkit_score_and_drains_on_sigterm(
        ray_cluster: Any, tmp_path: Path) -> None:
    t0 = time.monotonic()
    ray_executor._close_executors()  # no actor of an earlier test holds a CPU
    total = float(ray.cluster_resources()["CPU"])
    assert wait_for_cpus(total, t0 + 20) == total
    address = ray_cluster.address
    cfg = tmp_path / "rewards.yaml"
    cfg.write_text(yaml.safe_dump(config(address, "ray")), encoding="utf-8")
    env = with_auth_mode({k: v for k, v in os.environ.items() if k not in RAY_ENV})
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from rewardkit.cli import main; "
         "sys.exit(main())", "serve", str(cfg), "--port", "0",
         "--port-file", str(port_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not port_file.exists():
            assert proc.poll() is None and time.monotonic() < deadline, \
                f"server did not start (exit {proc.poll()})"
            time.sleep(0.05)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"

        native = post(f"{url}/score", {"samples": ROWS})
        # the service's actor holds one of the cluster's CPUs: the rows went to Ray
        assert wait_for_cpus(total - 1, time.monotonic() + 20) == total - 1
        prompts = [r["prompt"] for r in ROWS]
        openrlhf = post(f"{url}/openrlhf", {
            "query": [r["prompt"] + r["completion"] for r in ROWS], "prompts": prompts,
            "labels": [r["reference"] for r in ROWS]})

        local_cfg = tmp_path / "local.yaml"
        local_cfg.write_text(yaml.safe_dump(config(address, "local")), encoding="utf-8")
        samples = tmp_path / "rows.jsonl"
        samples.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
        out = tmp_path / "out.jsonl"
        subprocess.run([sys.executable, "-c", "import sys; from rewardkit.cli import main; "
                        "sys.exit(main())", "score", str(local_cfg), str(samples),
                        "--out", str(out), "--json"],
                       check=True, capture_output=True, timeout=60, env=env)
        scored = [json.loads(line) for line in out.read_text().splitlines()]

        assert native["rewards"] == [r["reward"] for r in scored] == [1.0, 0.0, 1.0]
        for ours, theirs in zip(native["rows"], scored, strict=True):
            assert ours["components"] == {
                name: {k: c[k] for k in ("value", "status", "reason")}
                for name, c in theirs["components"].items()}
        assert openrlhf["rewards"] == [r["reward"] for r in scored]

        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=EXIT_TIMEOUT)
        assert proc.returncode == 0, err[-2000:]
        # the driver is gone and so is its actor: the CPU is free again
        assert wait_for_cpus(total, time.monotonic() + 20) == total
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 90


CLOSE_AFTER_SHUTDOWN = """
import sys, ray
from rewardkit.config.models import RaySettings
from rewardkit.execution.ray import RayExecutor
executor = RayExecutor(RaySettings.model_validate({"address": sys.argv[1], "actors": 1}))
ray.shutdown()  # what Ray's own exit hook does before rewardkit's runs
executor.close()
print("initialized" if ray.is_initialized() else "closed")
"""


def test_closing_after_ray_shut_down_does_not_connect_again(ray_cluster: Any) -> None:
    """At exit Ray's hook shuts Ray down before rewardkit's closes the executors; ray.kill
    auto-initialises Ray, so closing then connected again, and the late connection's
    teardown aborted `rewardkit serve` at exit ("free(): corrupted unsorted chunks",
    SIGABRT after "stopped")."""
    env = with_auth_mode({k: v for k, v in os.environ.items() if k not in RAY_ENV})
    done = subprocess.run([sys.executable, "-c", CLOSE_AFTER_SHUTDOWN, ray_cluster.address],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "closed"
