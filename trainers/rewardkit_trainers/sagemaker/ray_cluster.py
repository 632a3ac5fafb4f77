"""Ray bootstrap for multi-node EasyR1/verl jobs.

SageMaker starts every node at once, in no order. The head (rank 0) starts the Ray
head, creates a named detached status actor and waits until every node joined (or
fails clearly after a timeout). Workers retry joining until the head is up, then have
nothing to run: they poll the status actor and leave when the head declares training
over, or when the head can no longer be reached. Ray is imported lazily: TRL and
ms-swift images need not have it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rewardkit_trainers.sagemaker.topology import TopologyError, port_open, wait_for_port

log = logging.getLogger("rewardkit.sagemaker")

STATUS_ACTOR = "rewardkit_status"
NAMESPACE = "rewardkit"


class ClusterError(RuntimeError):
    """The Ray cluster could not be formed."""


def _ray_executable() -> str:
    candidate = Path(sys.executable).with_name("ray")
    return str(candidate) if candidate.exists() else "ray"


def start_node(
    node_ip: str, port: int, head_address: str | None, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``ray start --block`` as a child in its own process group (head when
    ``head_address`` is None). ``REWARDKIT_RAY_START_ARGS`` adds options (tests pass
    ``--num-cpus 1`` and per-node ports and temp dirs)."""
    cmd = [
        _ray_executable(),
        "start",
        "--block",
        "--node-ip-address",
        node_ip,
        "--disable-usage-stats",
    ]
    if head_address is None:
        cmd += ["--head", "--port", str(port), "--include-dashboard", "false"]
    else:
        cmd += ["--address", head_address]
    cmd += shlex.split(env.get("REWARDKIT_RAY_START_ARGS", ""))
    log.info("starting ray: %s", shlex.join(cmd))
    # Ray >= 2.5x drains a node for 30 s on SIGTERM (for Serve); training is over when
    # we stop a node, so skip that unless the job's environment asks for it.
    env = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0", **env}
    return subprocess.Popen(cmd, env=env, process_group=0)


def stop_node(proc: subprocess.Popen[bytes] | None, timeout_s: float = 30.0) -> None:
    """Stop a node started by :func:`start_node`: SIGTERM to ``ray start``, which stops
    its processes (a signal to the whole group makes it wait for them), then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.terminate()
        proc.wait(timeout=timeout_s)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait()


def wait_until_listening(
    proc: subprocess.Popen[bytes], ip: str, port: int, timeout_s: float
) -> None:
    """Head: wait for the GCS port of the node ``proc`` is starting; fail when it exits."""
    deadline = time.monotonic() + timeout_s
    while not port_open(ip, port, timeout_s=1.0):
        if proc.poll() is not None:
            raise ClusterError(
                f"ray start --head exited with code {proc.returncode} (see the log above)"
            )
        if time.monotonic() > deadline:
            raise ClusterError(f"the Ray head did not listen on {ip}:{port} in {timeout_s:.0f}s")
        time.sleep(0.5)


def connect(address: str, timeout_s: float, interval_s: float = 2.0) -> None:
    """``ray.init(address)`` with retries until ``timeout_s``."""
    import ray

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            ray.init(
                address=address,
                namespace=NAMESPACE,
                logging_level=logging.WARNING,
                log_to_driver=False,
            )
            return
        except Exception as exc:  # ConnectionError/RuntimeError/TimeoutError by version
            if time.monotonic() >= deadline:
                raise ClusterError(f"cannot join the Ray cluster at {address}: {exc}") from None
            time.sleep(interval_s)


def alive_nodes() -> int:
    """Number of alive nodes in the connected cluster."""
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))


def wait_for_nodes(expected: int, timeout_s: float, interval_s: float = 1.0) -> None:
    """Head: block until ``expected`` nodes are alive, or raise :class:`ClusterError`."""
    deadline = time.monotonic() + timeout_s
    count = alive_nodes()
    while count < expected:
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"only {count} of {expected} nodes joined the Ray cluster within "
                f"{timeout_s:.0f}s; check the worker nodes' logs (algo-2 ...) for join errors"
            )
        time.sleep(interval_s)
        count = alive_nodes()
    log.info("all %s nodes joined the Ray cluster", expected)


class _TrainingStatus:
    """Shared state of the run, held by the head in a named detached actor."""

    def __init__(self) -> None:
        self.state = "starting"
        self.step: int | None = None
        self.detail = ""

    def set_state(self, state: str, detail: str = "") -> None:
        self.state, self.detail = state, detail

    def set_step(self, step: int) -> None:
        self.step = step if self.step is None else max(self.step, step)

    def get(self) -> dict[str, Any]:
        return {"state": self.state, "step": self.step, "detail": self.detail}


def create_status() -> Any:
    """Head: create (or reuse) the named detached status actor; returns its handle."""
    import ray

    cls = ray.remote(num_cpus=0)(_TrainingStatus)
    return cls.options(name=STATUS_ACTOR, lifetime="detached", get_if_exists=True).remote()


def get_status(timeout_s: float, interval_s: float = 1.0) -> Any:
    """Worker: the status actor's handle, waiting for the head to create it."""
    import ray

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return ray.get_actor(STATUS_ACTOR, namespace=NAMESPACE)
        except ValueError:
            if time.monotonic() >= deadline:
                raise ClusterError("the head never published its status actor") from None
            time.sleep(interval_s)


class Worker:
    """A worker node's life: join, then stay until the head says training ended."""

    def __init__(self, head_ip: str, port: int, node_ip: str, env: dict[str, str]) -> None:
        self.head_ip, self.port, self.node_ip, self.env = head_ip, port, node_ip, env
        self.proc: subprocess.Popen[bytes] | None = None
        self.last: dict[str, Any] = {"state": "starting", "step": None, "detail": ""}

    def join(self, timeout_s: float) -> None:
        """Retry joining until ``timeout_s``; a :class:`TopologyError` names the head."""
        deadline = time.monotonic() + timeout_s
        address = f"{self.head_ip}:{self.port}"
        while True:
            left = deadline - time.monotonic()
            wait_for_port(self.head_ip, self.port, timeout_s=max(left, 1.0))
            self.proc = start_node(self.node_ip, self.port, address, self.env)
            time.sleep(2.0)
            if self.proc.poll() is None:
                break
            if time.monotonic() >= deadline:
                raise TopologyError(
                    f"could not join the Ray head at {address} within {timeout_s:.0f}s "
                    f"(ray start exited with {self.proc.returncode})"
                )
            log.warning("ray start exited with %s; retrying", self.proc.returncode)
        connect(address, timeout_s=max(deadline - time.monotonic(), 30.0))

    def wait_until_done(
        self, poll_s: float = 5.0, head_lost_after_s: float = 60.0, stop: Any = None
    ) -> str:
        """Poll the head's status; return ``"succeeded"``/``"failed"`` when it says so,
        ``"head-lost"`` when it stayed unreachable for ``head_lost_after_s``, or
        ``"stopped"`` when the ``stop`` event (SIGTERM) is set."""
        import ray

        status = get_status(timeout_s=head_lost_after_s)
        unreachable_since: float | None = None
        while True:
            if stop is not None and stop.is_set():
                return "stopped"
            # A TCP probe first: a driver whose GCS vanished may block in ray.get.
            reachable = port_open(self.head_ip, self.port)
            if reachable:
                try:
                    self.last = ray.get(status.get.remote(), timeout=max(poll_s, 10.0))
                except Exception as exc:  # actor died, GCS gone, timeout
                    log.warning("status poll failed: %s", exc)
                    reachable = False
            if reachable:
                unreachable_since = None
                if self.last["state"] in ("succeeded", "failed"):
                    return str(self.last["state"])
            else:
                now = time.monotonic()
                unreachable_since = unreachable_since or now
                if now - unreachable_since >= head_lost_after_s:
                    return "head-lost"
            if stop is not None:
                stop.wait(poll_s)
            else:
                time.sleep(poll_s)

    def leave(self) -> None:
        """Disconnect and stop the local Ray node."""
        import ray

        started = time.monotonic()
        if ray.is_initialized():
            ray.shutdown()
        log.info("disconnected from Ray in %.1fs", time.monotonic() - started)
        stop_node(self.proc)
        log.info("left the cluster in %.1fs", time.monotonic() - started)
