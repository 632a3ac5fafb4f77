"""Attacks on llm_judge's client by its endpoint (docs/fault-model.md, "Attacks"): a
server that trickles its answer, a server that asks to be called later."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from judge_support import CAPITAL, JUDGE

from rewardkit import RewardSet

pytest.importorskip("httpx")


def judge_set(base_url: str, **params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"judge": {
        "reward": "llm_judge", "params": {**JUDGE, "base_url": base_url, **params}}}})


def _serve(answer: Any) -> Iterator[tuple[str, list[float]]]:
    """A loopback server calling ``answer(connection, n)`` for its n-th request; yields
    its base URL and when each request arrived."""
    listener = socket.create_server(("127.0.0.1", 0))
    arrivals: list[float] = []
    stop = threading.Event()

    def handle(conn: socket.socket, n: int) -> None:
        with conn:
            conn.recv(65536)
            with contextlib.suppress(OSError):  # the client hung up
                answer(conn, n, stop)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            arrivals.append(time.monotonic())
            threading.Thread(target=handle, args=(conn, len(arrivals)), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", arrivals
    stop.set()
    listener.close()


def _reply(status: str, body: bytes, headers: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n{headers}\r\n"
            ).encode() + body


GOOD = json.dumps({"choices": [{"message": {"content": "Score: 9"}}]}).encode()


@pytest.fixture
def slow_loris() -> Iterator[tuple[str, list[float]]]:
    """Sends the headers at once, then one byte of the body every 0.5 s."""
    def answer(conn: socket.socket, n: int, stop: threading.Event) -> None:
        reply = _reply("200 OK", GOOD)
        head, body = reply[:reply.index(b"\r\n\r\n") + 4], reply[reply.index(b"\r\n\r\n") + 4:]
        conn.sendall(head)
        for byte in body:
            if stop.wait(0.5):
                return
            conn.sendall(bytes([byte]))
    yield from _serve(answer)


@pytest.fixture
def busy_then_fine() -> Iterator[tuple[str, list[float]]]:
    """Answers its first request 429 with ``Retry-After: 2``, then a verdict."""
    def answer(conn: socket.socket, n: int, stop: threading.Event) -> None:
        if n == 1:
            conn.sendall(_reply("429 Too Many Requests", b"{}", "Retry-After: 2\r\n"))
        else:
            conn.sendall(_reply("200 OK", GOOD))
    yield from _serve(answer)


def test_request_timeout_bounds_a_whole_request_against_a_trickling_server(slow_loris):
    url, arrivals = slow_loris
    rs = judge_set(url, request_timeout=1, retries=1, backoff=0.05)
    start = time.monotonic()
    score = rs.score([{"prompt": CAPITAL, "completion": "paris"}])[0].scores["judge"]
    took = time.monotonic() - start
    # two attempts of 1 s each, not the body's 60 bytes at 0.5 s (30 s per attempt)
    assert score.status == "error" and "request timed out (after 2 attempts)" in score.reason
    assert took < 6, took
    assert len(arrivals) == 2


def test_retry_after_on_429_is_honoured(busy_then_fine):
    url, arrivals = busy_then_fine
    rs = judge_set(url, retries=2, backoff=0.05)
    score = rs.score([{"prompt": CAPITAL, "completion": "paris"}])[0].scores["judge"]
    assert score.status == "ok" and score.value == pytest.approx(0.9)
    assert len(arrivals) == 2
    assert arrivals[1] - arrivals[0] >= 1.9  # the server's 2 s, not the 0.05 s backoff
