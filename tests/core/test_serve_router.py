"""Several ``rewardkit serve`` services behind one address: the HAProxy configuration
docs/serve.md shows (read from the docs, its addresses replaced by two services on
127.0.0.1 standing for two nodes), run by a real HAProxy. Skipped where ``haproxy`` is
not installed (``apt-get install haproxy``)."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_serve import GOOD, Server, request
from test_serve_instances import poll, start

DOCS = Path(__file__).resolve().parents[2] / "docs" / "serve.md"
CONFIG = """
rewards:
  fmt:
    reward: soft_format
"""
TOKEN = "router-test-token"

pytestmark = pytest.mark.skipif(shutil.which("haproxy") is None,
                                reason="haproxy is not installed")


def documented_config() -> str:
    blocks = re.findall(r"```haproxy\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "docs/serve.md shows one HAProxy configuration"
    return str(blocks[0])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def served_requests(url: str) -> float:
    """The /score requests answered 200 by the service at ``url`` (its own /metrics)."""
    _, _, body = request(url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    for line in body.decode().splitlines():
        if line.startswith('rewardkit_serve_requests_total{endpoint="/score",code="200"}'):
            return float(line.split()[-1])
    return 0.0


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Server]]:
    monkeypatch.setenv("REWARDKIT_SERVE_TOKEN", TOKEN)
    started = []
    for k in range(2):
        folder = tmp_path / f"node{k}"
        folder.mkdir()
        started.append(start(folder, CONFIG))
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def router(tmp_path: Path, nodes: list[Server]) -> Iterator[str]:
    port = free_port()
    config = documented_config().replace("bind :8000", f"bind 127.0.0.1:{port}")
    for k, node in enumerate(nodes, start=1):
        config = config.replace(f"10.0.0.{k}:8000", node.url.removeprefix("http://"))
    assert "10.0.0." not in config
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(config, encoding="utf-8")
    proc = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"haproxy exited: {proc.communicate()[0][-2000:]}")
        try:
            return request(url + "/health")[0] == 200
        except OSError:
            return False

    poll("HAProxy answering /health", answering)
    yield url
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def score(url: str, token: str | None = TOKEN) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    status, _, _ = request(url + "/score", {"samples": [{"prompt": "q", "completion": GOOD}]},
                           headers=headers)
    return status


def test_the_documented_haproxy_spreads_requests_and_survives_a_stopped_node(
        router: str, nodes: list[Server]) -> None:
    statuses: list[int] = []
    counts: list[float] = []

    def both_served() -> bool:
        statuses.append(score(router))
        counts[:] = [served_requests(node.url) for node in nodes]
        return len(statuses) >= 30 and min(counts) > 0

    poll("requests through HAProxy reaching both services", both_served)
    assert set(statuses) == {200}, statuses
    assert sum(counts) == len(statuses), counts  # each answered by one service
    # the token goes through the router and the node checks it
    assert score(router, token=None) == 401
    assert score(router, token="wrong") == 401
    # one node drains and exits: every request still answered, by the other
    assert nodes[0].stop() == 0
    after = [score(router) for _ in range(20)]
    assert set(after) == {200}, after
    assert served_requests(nodes[1].url) >= counts[1] + 20
