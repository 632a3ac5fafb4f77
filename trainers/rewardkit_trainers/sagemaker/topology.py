"""Who am I in the cluster: SageMaker's resourceconfig.json -> rank, node count, head.

SageMaker writes ``/opt/ml/input/config/resourceconfig.json`` on every node
(``{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"], ...}``). Rank is the index
of the current host in the sorted host list, the head is the first host. The path can
be moved with ``REWARDKIT_RESOURCE_CONFIG``; without the file, ``SM_HOSTS`` and
``SM_CURRENT_HOST`` are used. Host names resolve through DNS (retried: the names of
other nodes may appear a little after start) unless ``REWARDKIT_HOST_MAP`` (a JSON
object ``{"algo-1": "127.0.0.1", ...}``) names them, as tests do.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"


class TopologyError(RuntimeError):
    """The node cannot tell its place in the cluster, or cannot reach the head."""


def _natural_key(host: str) -> tuple[object, ...]:
    # algo-2 sorts before algo-10
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", host))


@dataclass(frozen=True)
class Topology:
    """This node's place in the job."""

    hosts: tuple[str, ...]
    current_host: str

    @property
    def rank(self) -> int:
        return self.hosts.index(self.current_host)

    @property
    def num_nodes(self) -> int:
        return len(self.hosts)

    @property
    def head_host(self) -> str:
        return self.hosts[0]

    @property
    def is_head(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_hosts(cls, hosts: list[str], current_host: str) -> Topology:
        ordered = tuple(sorted(set(hosts), key=_natural_key))
        if not ordered:
            raise TopologyError("the host list is empty")
        if current_host not in ordered:
            raise TopologyError(f"current host {current_host!r} is not in hosts {list(ordered)}")
        return cls(hosts=ordered, current_host=current_host)


def load_topology(env: Mapping[str, str] | None = None) -> Topology:
    """Read resourceconfig.json (or ``SM_HOSTS``/``SM_CURRENT_HOST``); a single local node
    when neither exists."""
    env = os.environ if env is None else env
    path = Path(env.get("REWARDKIT_RESOURCE_CONFIG") or DEFAULT_RESOURCE_CONFIG)
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Topology.from_hosts(list(data["hosts"]), str(data["current_host"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise TopologyError(f"{path}: unreadable resource config ({exc})") from None
    if env.get("SM_HOSTS") and env.get("SM_CURRENT_HOST"):
        try:
            hosts = json.loads(env["SM_HOSTS"])
        except ValueError:
            raise TopologyError(f"SM_HOSTS is not a JSON list: {env['SM_HOSTS']!r}") from None
        return Topology.from_hosts(list(hosts), env["SM_CURRENT_HOST"])
    return Topology.from_hosts(["localhost"], "localhost")


def host_resolver(env: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """A host -> IP function: ``REWARDKIT_HOST_MAP`` entries first, then DNS."""
    env = os.environ if env is None else env
    mapping: dict[str, str] = json.loads(env.get("REWARDKIT_HOST_MAP") or "{}")

    def resolve(host: str) -> str:
        if host in mapping:
            return mapping[host]
        return socket.gethostbyname(host)

    return resolve


def resolve_with_retries(
    host: str,
    resolve: Callable[[str], str],
    timeout_s: float = 300.0,
    interval_s: float = 2.0,
) -> str:
    """Resolve ``host``, retrying until ``timeout_s``; a :class:`TopologyError` after that."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return resolve(host)
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise TopologyError(
                    f"cannot resolve host {host!r} after {timeout_s:.0f}s: {exc}"
                ) from None
            time.sleep(interval_s)


def port_open(host: str, port: int, timeout_s: float = 3.0) -> bool:
    """Whether ``host:port`` accepts a TCP connection now."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_for_port(host: str, port: int, timeout_s: float, interval_s: float = 1.0) -> None:
    """Block until ``host:port`` accepts TCP connections, or raise :class:`TopologyError`."""
    deadline = time.monotonic() + timeout_s
    last: OSError | None = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=min(5.0, interval_s * 5)):
                return
        except OSError as exc:
            last = exc
            time.sleep(interval_s)
    raise TopologyError(
        f"cannot reach the head node at {host}:{port} after {timeout_s:.0f}s "
        f"({last}); is the head node up and the port open between nodes?"
    )
