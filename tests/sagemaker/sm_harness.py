"""Helpers of the SageMaker tests: free ports, a moto server process, S3 listings, and
node processes running the container entrypoint (one session each, killed by id)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

STUBS = Path(__file__).parent / "stubs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    """A moto server (S3, SageMaker, CloudWatch Logs, ...) on a free loopback port."""
    port = free_port()
    fd, log = tempfile.mkstemp(prefix="moto-", suffix=".log")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=fd,
        stderr=subprocess.STDOUT,
    )
    os.close(fd)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=2).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"moto server did not start; see {log}") from None
            time.sleep(0.2)


def s3_keys(s3, bucket: str, prefix: str = "") -> list[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))


def kill_session(sid: int) -> None:
    """SIGKILL every process of the session ``sid`` (a node we started)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(stat.parent.name), signal.SIGKILL)


@dataclass
class Node:
    """One container: the entrypoint process of one host."""

    host: str
    proc: subprocess.Popen[bytes]
    log: Path
    failure: Path
    checkpoint_dir: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.host} still running after {timeout}s:\n{self.output()[-4000:]}"
            ) from None


@dataclass
class Cluster:
    """Starts entrypoint processes as SageMaker would, one per host, all on loopback."""

    base: Path
    env: dict[str, str]
    nodes: list[Node] = field(default_factory=list)

    def start(
        self,
        spec: dict,
        hosts: list[str],
        host: str,
        tag: str,
        extra_env: dict[str, str] | None = None,
    ) -> Node:
        folder = self.base / tag / host
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "resourceconfig.json").write_text(
            json.dumps({"current_host": host, "hosts": hosts, "network_interface_name": "lo"})
        )
        (folder / "rewardkit-run.json").write_text(json.dumps(spec))
        env = {
            **os.environ,
            **self.env,
            "REWARDKIT_RESOURCE_CONFIG": str(folder / "resourceconfig.json"),
            "REWARDKIT_RUN_SPEC": str(folder / "rewardkit-run.json"),
            "REWARDKIT_HOST_MAP": json.dumps({h: "127.0.0.1" for h in hosts}),
            "REWARDKIT_FAILURE_FILE": str(folder / "failure"),
            "REWARDKIT_CHECKPOINT_DIR": str(folder / "checkpoints"),
            "PYTHONUNBUFFERED": "1",
            "RAY_USAGE_STATS_ENABLED": "0",
            **(extra_env or {}),
        }
        log = folder / "node.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rewardkit_trainers.sagemaker"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # one session per node: kill_session() reaches it all
                cwd=folder,
            )
        node = Node(host, proc, log, folder / "failure", folder / "checkpoints")
        self.nodes.append(node)
        return node

    def kill_all(self) -> None:
        for node in self.nodes:
            kill_session(node.proc.pid)
            node.proc.wait()


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
