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


def _answering(body: dict[str, Any]) -> Iterator[tuple[str, list[float]]]:
    """A server answering every request 200 with ``body``."""
    data = json.dumps(body).encode()

    def answer(conn: socket.socket, n: int, stop: threading.Event) -> None:
        conn.sendall(_reply("200 OK", data))
    yield from _serve(answer)


def _cut(finish_reason: str | None) -> dict[str, Any]:
    """"Score: 10" cut after its first digit, as a judge stopped at max_tokens answers."""
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Score: 1"},
                         "finish_reason": finish_reason}]}


def test_an_answer_cut_at_max_tokens_is_no_verdict() -> None:
    for url, _ in _answering(_cut("length")):
        score = judge_set(url).score([{"prompt": CAPITAL, "completion": "paris"}])[0]
        judged = score.scores["judge"]
        assert judged.status == "error", (judged.value, judged.reason)
        assert judged.value is None and "max_tokens" in judged.reason


@pytest.mark.parametrize("finish_reason", ["stop", None])
def test_an_answer_that_ended_is_read_as_its_verdict(finish_reason: str | None) -> None:
    for url, _ in _answering(_cut(finish_reason)):
        judged = judge_set(url).score([{"prompt": CAPITAL, "completion": "paris"}])[0]
        assert (judged.scores["judge"].status, judged.scores["judge"].value) == ("ok", 0.1)


#: a process scoring one row, then another, against a judge whose first answer reports
#: a billion tokens used; prints how long the second row took
_BILLION_TOKENS = """
import json, sys, time
from rewardkit import RewardSet
url = sys.argv[1]
rs = RewardSet.from_dict({"rewards": {"judge": {"reward": "llm_judge", "params": {
    **json.loads(sys.argv[2]), "base_url": url, "tpm": 6000}}}})
first = rs.score([{"prompt": "capital of france", "completion": "paris 1"}])[0]
started = time.monotonic()
second = rs.score([{"prompt": "capital of france", "completion": "paris 2"}])[0]
print(json.dumps([first.scores["judge"].status, second.scores["judge"].status,
                  time.monotonic() - started]), flush=True)
"""


def test_a_reply_reporting_a_billion_tokens_does_not_stall_the_node(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    body = {"choices": [{"message": {"role": "assistant", "content": "Score: 9"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10 ** 9,
                      "total_tokens": 10 ** 9 + 10}}
    env = {**os.environ, "RK_BUDGET_DIR": str(tmp_path / "budget")}
    for url, arrivals in _answering(body):
        worker = subprocess.Popen(
            [sys.executable, "-c", _BILLION_TOKENS, url, json.dumps(JUDGE)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            out, err = worker.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.communicate()
            pytest.fail("a second judge request was still waiting 60 s after a reply "
                        "reported a billion tokens (the node's TPM bucket in debt)")
        assert worker.returncode == 0, err
        first, second, took = json.loads(out)
        # 6000 tokens a minute: a request of this judge costs ~30 tokens, so no
        # correction may hold the next one back longer than a minute's refill
        assert (first, second) == ("ok", "ok")
        assert took < 30, took
        assert len(arrivals) == 2


#: a process whose node TPM bucket is a minute in debt scores one row under a 1 s
#: component timeout, then exits
_IN_DEBT = """
import json, sys
from rewardkit import RewardSet
from rewardkit_judge.llm_judge import rate_budgets
url = sys.argv[1]
params = {**json.loads(sys.argv[2]), "base_url": url, "tpm": 6000}
_, tokens = rate_budgets([url], params["model"], None, params["tpm"])
tokens.charge(6000.0)  # a minute of the rate: as deep as a charge may leave it
rs = RewardSet.from_dict({"rewards": {"judge": {"reward": "llm_judge", "timeout": 1,
                                                "params": params}}})
score = rs.score([{"prompt": "capital of france", "completion": "paris"}])[0]
print(json.dumps(score.scores["judge"].status), flush=True)
"""


def test_a_wait_for_the_token_bucket_ends_with_the_components_timeout(tmp_path: Any) -> None:
    """The wait is on the event loop: the timeout cancels it, and no thread sleeping in
    the bucket holds the process's exit until the debt is paid."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "RK_BUDGET_DIR": str(tmp_path / "budget")}
    for url, arrivals in _answering(json.loads(GOOD)):
        started = time.monotonic()
        worker = subprocess.run([sys.executable, "-c", _IN_DEBT, url, json.dumps(JUDGE)],
                                capture_output=True, text=True, env=env, timeout=120)
        took = time.monotonic() - started
        assert worker.returncode == 0, worker.stderr
        assert json.loads(worker.stdout) == "timeout"
        assert arrivals == []
        assert took < 30, took  # the debt is 60 s; start-up and the 1 s timeout far less
