"""Multi-node EasyR1 on a real Ray cluster: three entrypoint processes on loopback
(algo-1 head, algo-2 and algo-3 workers), each with its own resourceconfig.json and
checkpoint folder, a stub EasyR1 driver that saves one shard per node through Ray
tasks, and checkpoints in a moto S3."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sm_harness import STUBS, Cluster, free_port, kill_session, s3_keys, wait_for

pytest.importorskip("ray", reason="multi-node tests need ray")

HOSTS = ["algo-1", "algo-2", "algo-3"]


def ray_args(short_tmp: Path, host: str) -> str:
    """Per-node Ray options so three nodes share one machine: one CPU each, their own
    temp dir (socket paths) and ports."""
    ports = {
        "--dashboard-agent-listen-port": free_port(),
        "--dashboard-agent-grpc-port": free_port(),
        "--metrics-export-port": free_port(),
        "--runtime-env-agent-port": free_port(),
    }
    args = [f"--num-cpus 1 --object-store-memory 78643200 --temp-dir {short_tmp / host}"]
    if host == HOSTS[0]:
        ports["--dashboard-port"] = free_port()
    args += [f"{k} {v}" for k, v in ports.items()]
    return " ".join(args)


def spec(bucket: str, port: int, **extra) -> dict:
    return {
        "backend": "easyr1",
        "command": [sys.executable, str(STUBS / "stub_easyr1.py")],
        "merge_command": [
            sys.executable,
            str(STUBS / "stub_merge.py"),
            "--local_dir",
            "{local_dir}",
        ],
        "checkpoint_s3": f"s3://{bucket}/ckpt/steps",
        "output_s3": f"s3://{bucket}/out",
        "keep_last": 2,
        "ray_port": port,
        "sync_interval_s": 0.3,
        "poll_interval_s": 0.3,
        "join_timeout_s": 90,
        "connect_timeout_s": 90,
        "final_wait_s": 60,
        "head_lost_after_s": 3,
        **extra,
    }


def flags(s3, bucket: str) -> dict[int, set[int]]:
    found: dict[int, set[int]] = {}
    for key in s3_keys(s3, bucket, "ckpt/steps/"):
        parts = key.split("/")
        step = int(parts[2].removeprefix("global_step_"))
        found.setdefault(step, set())
        if parts[3].startswith("sync_completed_"):
            found[step].add(int(parts[3].removeprefix("sync_completed_").removesuffix(".flag")))
    return found


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    """Ray's temp root: short, as its socket paths must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="rk", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=["no-token-file", "token-file"])
def home(request, tmp_path: Path) -> dict[str, str]:
    """The nodes' home folder, without and with ``~/.ray/auth_token`` (Ray 2.60 writes it
    at any local ``ray.init()``; with it, a node's ``ray start`` turned token auth on)."""
    folder = tmp_path / "home"
    if request.param == "token-file":
        (folder / ".ray").mkdir(parents=True)
        (folder / ".ray" / "auth_token").write_text("0" * 32 + "\n")
    folder.mkdir(exist_ok=True)
    return {"HOME": str(folder)}


def start_cluster(
    cluster: Cluster, tag: str, run_spec: dict, env: dict[str, str], short: Path
) -> list:
    return [
        cluster.start(
            run_spec,
            HOSTS,
            host,
            tag,
            {**env, "REWARDKIT_RAY_START_ARGS": ray_args(short / tag, host)},
        )
        for host in HOSTS
    ]


@pytest.mark.slow  # ~55 s a case: a Ray job on the moto server killed mid-save, restarted
def test_killed_mid_save_then_restarted_resumes_from_the_last_complete_step(
    cluster: Cluster, s3, bucket, tmp_path, ray_tmp, home
):
    events = tmp_path / "events.log"
    env = {"STUB_LOG": str(events), "STUB_HANG_AT": "3", **home}
    run1 = start_cluster(cluster, "run1", spec(bucket, free_port()), env, ray_tmp)
    wait_for(
        lambda: events.exists() and "hanging 3" in events.read_text(),
        150,
        "the step-3 save",
        interval=0.5,
    )
    assert events.read_text().splitlines()[0] == "start 0 nodes 3"
    wait_for(lambda: flags(s3, bucket).get(2) == {0, 1, 2}, 30, "every node's flag of step 2")
    assert 3 not in flags(s3, bucket)  # written on disk, tracker not updated: not uploaded
    for node in run1:
        assert (node.checkpoint_dir / "global_step_3" / "actor").is_dir()  # mid-save on every node

    kill_session(run1[0].proc.pid)  # the head instance is lost
    for worker in run1[1:]:
        assert worker.wait(60) == 0, worker.output()[-3000:]
        assert "training ended (head-lost)" in worker.output()
    assert not run1[1].failure.exists() and not run1[2].failure.exists()
    cluster.kill_all()

    # node algo-3 died mid-upload of step 3 in some other attempt: two flags of three
    for rank in (0, 1):
        s3.put_object(
            Bucket=bucket, Key=f"ckpt/steps/global_step_3/sync_completed_{rank}.flag", Body=b"{}"
        )
    s3.put_object(Bucket=bucket, Key="ckpt/steps/global_step_3/actor/stale.pt", Body=b"stale")

    run2 = start_cluster(
        cluster, "run2", spec(bucket, free_port()), {"STUB_LOG": str(events), **home}, ray_tmp
    )
    codes = [node.wait(150) for node in run2]
    assert codes == [0, 0, 0], "\n\n".join(n.output()[-3000:] for n in run2)
    lines = events.read_text().splitlines()
    assert lines[lines.index("hanging 3") + 1 :] == [
        "start 2 nodes 3",
        "saved 3",
        "saved 4",
        "done",
    ]
    # keep_last=2 pruned steps 1 and 2; the re-done step 3 has every flag and no stale file
    assert flags(s3, bucket) == {3: {0, 1, 2}, 4: {0, 1, 2}}
    assert "ckpt/steps/global_step_3/actor/stale.pt" not in s3_keys(s3, bucket)
    merged = s3.get_object(Bucket=bucket, Key="out/local/final-model/model.safetensors")
    assert merged["Body"].read().decode() == "s4r0+s4r1+s4r2"


@pytest.mark.slow  # ~13 s a case: the head waits out nodes that never join
def test_head_fails_clearly_when_not_every_node_joins(
    cluster: Cluster, s3, bucket, tmp_path, ray_tmp, home
):
    run_spec = spec(bucket, free_port(), join_timeout_s=3)
    env = {"STUB_LOG": str(tmp_path / "e"), "REWARDKIT_RAY_START_ARGS": ray_args(ray_tmp, "algo-1"),
           **home}
    head = cluster.start(run_spec, HOSTS, "algo-1", "run", env)
    assert head.wait(120) == 1, head.output()
    assert head.failure.read_text().startswith(
        "rewardkit: only 1 of 3 nodes joined the Ray cluster within 3s"
    )
