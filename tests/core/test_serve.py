"""``rewardkit serve``: a real server process on 127.0.0.1 (a free port), real HTTP.

The server runs as a user runs it (``python tests/core/faulty_cli.py serve ...``: the CLI
with the misbehaving rewards of faulty_rewards.py registered); each test bounds its waits
(server start, every request, the drain) so a hang fails instead of blocking the suite.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
FAULTY_CLI = str(HERE / "faulty_cli.py")
START_TIMEOUT = 60.0
REQUEST_TIMEOUT = 30.0

CONFIG = """
aggregate: weighted_sum
on_error: "null"
rewards:
  fmt:
    reward: soft_format
    weight: {schedule: linear, start: 0.0, end: 1.0, steps: 10}
  length:
    reward: good
    weight: 0.1
  fragile:
    reward: raises
    weight: 1.0
"""

SLOW_CONFIG = """
rewards:
  slow:
    reward: slow_async
    params: {delay: 2.0}
"""

GOOD = "<think>a</think><answer>1</answer>"


@dataclass
class Server:
    proc: subprocess.Popen[str]
    url: str

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


def start(tmp_path: Path, config: str, *args: str, env: dict[str, str] | None = None,
          timeout: float = START_TIMEOUT) -> Server:
    """``rewardkit serve`` (the CLI with the test rewards registered) once it has written
    its port file; a test failure naming its error if it exits or takes ``timeout`` s."""
    cfg = tmp_path / "rewards.yaml"
    cfg.write_text(config, encoding="utf-8")
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [sys.executable, FAULTY_CLI, "serve", str(cfg), "--port", "0",
         "--port-file", str(port_file), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})})
    deadline = time.monotonic() + timeout
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"server did not start (exit {proc.returncode}): {err[-2000:]}")
        time.sleep(0.05)
    return Server(proc, f"http://127.0.0.1:{int(port_file.read_text())}")


def request(url: str, body: Any = None, *, raw: bytes | None = None,
            headers: dict[str, str] | None = None, method: str | None = None,
            timeout: float = REQUEST_TIMEOUT) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request; HTTP errors are answers, not exceptions."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json",
                                          **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start(tmp_path_factory.mktemp("serve"), CONFIG)
    yield srv
    assert srv.stop() == 0


def test_native_score_matches_rewardkit_score_on_the_same_rows(server: Server,
                                                               tmp_path: Path):
    """Per-component values and statuses, the step (a weight schedule) and the fault
    model (a reward that raises: status error, total null under on_error null) are the
    ones ``rewardkit score`` writes for the same rows at the same step."""
    rows = [{"prompt": "q", "completion": GOOD},
            {"prompt": "q", "completion": "boom " + GOOD},
            {"prompt": "r", "completion": "no layout", "reference": "1", "task": "x"}]
    code, _, body = request(f"{server.url}/score", {"samples": rows, "step": 5})
    assert code == 200, body
    got = json.loads(body)
    assert got["step"] == 5
    assert got["rows"][1]["components"]["fragile"]["status"] == "error"
    assert got["rows"][1]["reward"] is None and got["rewards"][1] is None
    assert got["metrics"]["components"]["fmt"]["weight"] == pytest.approx(0.5)

    (tmp_path / "rewards.yaml").write_text(CONFIG, encoding="utf-8")
    samples = tmp_path / "rows.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    subprocess.run([sys.executable, FAULTY_CLI, "score", str(tmp_path / "rewards.yaml"),
                    str(samples), "--out", str(tmp_path / "out.jsonl"), "--step", "5",
                    "--json"], check=True, capture_output=True, timeout=120)
    scored = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert got["rewards"] == [r["reward"] for r in scored]
    for ours, theirs in zip(got["rows"], scored, strict=True):
        assert ours["components"] == {
            name: {k: c[k] for k in ("value", "status", "reason")}
            for name, c in theirs["components"].items()}


def test_openrlhf_remote_rm_fn_reads_rewards(server: Server):
    """OpenRLHF's client, ``openrlhf/utils/remote_rm_utils.py`` (OpenRLHF/OpenRLHF at
    9b8641c181296428ec764a8626ddccd750a780b0): ``remote_rm_fn(api_url, queries, prompts,
    labels)`` posts ``{"query": queries, "prompts": prompts, "labels": labels}`` as JSON
    with ``Content-Type: application/json``; ``request_api_wrapper`` raises on a non-2xx
    status, parses the body as JSON, asserts ``"rewards" in response`` and returns
    ``response.get("rewards")``, which becomes ``torch.tensor(scores)``: a flat list of
    numbers (a None would fail there). The older release (07c34b303e86fcdffa755e9e25c28cca
    5b44c675) posts ``{"query": queries}`` alone."""
    prompts = ["<|user|>2+2?<|assistant|>", "<|user|>3+3?<|assistant|>", "<|user|>hi"]
    responses = [GOOD, "boom", "ab"]
    queries = [p + r for p, r in zip(prompts, responses, strict=True)]
    # step 10: fmt weighs 1.0, length 0.1 (the completion's length, capped at 10), fragile
    # 1.0; the raising sample's null total is the fallback 0.0. With the prompts, the
    # completion is the query after its prompt ("ab": length 2); without, the whole query
    # (soft_format then fails: the prompt's text precedes the think block)
    expected = {True: [3.0, 0.0, 0.2 + 1.0], False: [2.0, 0.0, 1.0 + 1.0]}
    for data in ({"query": queries, "prompts": prompts, "labels": ["4", "6", "x"]},
                 {"query": queries}):
        code, _, body = request(f"{server.url}/openrlhf?step=10", data,
                                headers={"Content-Type": "application/json"})
        assert 200 <= code < 300
        response = json.loads(body)
        assert "rewards" in response, response
        scores = response.get("rewards")
        assert isinstance(scores, list) and len(scores) == len(queries)
        assert all(isinstance(s, float) for s in scores)  # torch.tensor(scores) works
        assert scores == pytest.approx(expected["prompts" in data])


def test_slime_remote_rm_takes_the_answer_as_the_reward(server: Server):
    """slime's client, ``slime/rollout/rm_hub/__init__.py`` (THUDM/slime at
    701749b73cc0a292b76659beb937b74f0a8f1915): ``remote_rm(args, sample)`` posts
    ``{"prompt": sample.prompt, "response": sample.response, "label": sample.label}`` as
    JSON to ``args.rm_url``, calls ``raise_for_status()`` and returns ``await resp.json()``
    as the sample's reward; without ``--reward-key`` slime uses it as the number."""
    payload = {"prompt": "2+2?", "response": GOOD, "label": "4"}
    code, _, body = request(f"{server.url}/slime?step=10", payload)
    assert 200 <= code < 300
    reward = json.loads(body)
    assert isinstance(reward, float) and reward == pytest.approx(3.0)
    code, _, body = request(f"{server.url}/slime", {**payload, "response": "boom"})
    assert code == 200 and json.loads(body) == 0.0  # null total: the fallback


@pytest.mark.parametrize(("path", "raw", "message"), [
    ("/score", b"{not json", "not JSON"),
    ("/score", b"[1, 2]", "must be a JSON object"),
    ("/score", b'{"samples": [{"prompt": "q"}]}', "samples[0]: no 'completion' key"),
    ("/score", b'{"samples": [{"completion": 84}]}', "not text"),
    ("/score", b'{"samples": [{"completion": "a"}], "step": -1}', "'step'"),
    ("/score", b'{"samples": [{"completion": NaN}]}', "not standard JSON"),
    ("/score", b"\xff\xfe", "not UTF-8"),
    ("/openrlhf", b'{"query": "one string"}', "'query' must be a list of strings"),
    ("/openrlhf", b'{"query": ["a", "b"], "prompts": ["a"]}', "'prompts' has 1 items"),
    ("/slime", b'{"prompt": "q"}', "no 'response' key"),
    ("/score?step=x", b'{"samples": [{"completion": "a"}]}', "query string"),
    ("/nowhere", b"{}", "no such endpoint"),
])
def test_bad_requests_get_a_clear_400_or_404(server: Server, path: str, raw: bytes,
                                             message: str):
    code, headers, body = request(server.url + path, raw=raw)
    assert code == (404 if path == "/nowhere" else 400)
    assert headers["Content-Type"] == "application/json"
    error = json.loads(body)["error"]
    assert message in error and "Traceback" not in error


def test_health_and_prometheus_metrics(server: Server):
    code, _, body = request(f"{server.url}/health")
    assert code == 200
    assert json.loads(body) == {"status": "ok", "components": ["fmt", "length", "fragile"],
                                "in_flight": 0, "queued": 0}
    request(f"{server.url}/score", {"samples": [{"completion": "boom"}]})
    code, headers, body = request(f"{server.url}/metrics")
    assert code == 200 and headers["Content-Type"].startswith("text/plain")
    metrics = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            metrics[name] = float(value)
    assert metrics['rewardkit_serve_requests_total{endpoint="/score",code="200"}'] >= 1
    assert metrics['rewardkit_serve_component_status_total{component="fragile",'
                   'status="error"}'] >= 1
    assert metrics["rewardkit_serve_rows_total"] >= 1
    assert metrics["rewardkit_serve_null_totals_total"] >= 1
    assert metrics['rewardkit_serve_request_seconds_bucket{le="+Inf"}'] == \
        metrics["rewardkit_serve_request_seconds_count"] >= 1
    assert metrics["rewardkit_serve_queue_depth"] == 0


def test_size_limits_413_without_reading_the_body(tmp_path: Path):
    srv = start(tmp_path, CONFIG, "--max-body-bytes", "1000", "--max-rows", "3")
    try:
        big = {"samples": [{"completion": "x" * 2000}]}
        code, _, body = request(f"{srv.url}/score", big)
        assert code == 413 and "--max-body-bytes" in json.loads(body)["error"]
        many = {"samples": [{"completion": "a"}] * 4}
        code, _, body = request(f"{srv.url}/score", many)
        assert code == 413 and "--max-rows" in json.loads(body)["error"]
        code, _, _ = request(f"{srv.url}/score", {"samples": [{"completion": "a"}] * 3})
        assert code == 200
    finally:
        assert srv.stop() == 0


def test_bearer_token(tmp_path: Path):
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n", encoding="utf-8")
    srv = start(tmp_path, CONFIG, "--token-file", str(token_file))
    try:
        rows = {"samples": [{"completion": GOOD}]}
        for headers in ({}, {"Authorization": "Bearer wrong"},
                        {"Authorization": "s3cret-token"}):
            code, resp_headers, _ = request(f"{srv.url}/score", rows, headers=headers)
            assert code == 401 and resp_headers["WWW-Authenticate"] == "Bearer"
        assert request(f"{srv.url}/metrics")[0] == 401
        assert request(f"{srv.url}/health")[0] == 200  # probes need no token
        ok = {"Authorization": "Bearer s3cret-token"}
        assert request(f"{srv.url}/score", rows, headers=ok)[0] == 200
        assert request(f"{srv.url}/metrics", headers=ok)[0] == 200
    finally:
        assert srv.stop() == 0


def _in_background(url: str, body: Any) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(request(url, body)))
    thread.start()
    return thread, answers


def _wait_for(url: str, key: str, value: int) -> None:
    deadline = time.monotonic() + REQUEST_TIMEOUT
    while json.loads(request(f"{url}/health")[2])[key] != value:
        assert time.monotonic() < deadline, f"/health never showed {key} {value}"
        time.sleep(0.05)


def test_back_pressure_503_with_retry_after_when_the_queue_is_full(tmp_path: Path):
    # --max-batch-rows 1: each request a batch of its own (else the third request's row
    # would join the second's batch); the queue then holds one waiting request
    srv = start(tmp_path, SLOW_CONFIG, "--workers", "1", "--queue", "1",
                "--retry-after", "3", "--max-batch-rows", "1")
    try:
        slow = {"samples": [{"completion": "slow"}]}
        first, first_answer = _in_background(f"{srv.url}/score", slow)
        _wait_for(srv.url, "in_flight", 1)
        second, second_answer = _in_background(f"{srv.url}/score", slow)
        _wait_for(srv.url, "queued", 1)
        code, headers, body = request(f"{srv.url}/score", slow)
        assert code == 503 and headers["Retry-After"] == "3"
        assert "queue is full" in json.loads(body)["error"]
        for thread in (first, second):
            thread.join(timeout=REQUEST_TIMEOUT)
        assert [a[0] for a in first_answer + second_answer] == [200, 200]
        assert request(f"{srv.url}/score", slow)[0] == 200  # the queue emptied
    finally:
        assert srv.stop() == 0


def test_sigterm_finishes_in_flight_batches_then_exits(tmp_path: Path):
    srv = start(tmp_path, SLOW_CONFIG, "--workers", "1")
    slow = {"samples": [{"completion": "slow"}, {"completion": "slow too"}]}
    thread, answers = _in_background(f"{srv.url}/score", slow)
    _wait_for(srv.url, "in_flight", 1)
    started = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    thread.join(timeout=REQUEST_TIMEOUT)
    assert srv.proc.wait(timeout=REQUEST_TIMEOUT) == 0
    assert time.monotonic() - started < 15
    (code, _, body), = answers
    assert code == 200 and json.loads(body)["rewards"] == [1.0, 1.0]
    with pytest.raises(urllib.error.URLError):  # no longer listening
        urllib.request.urlopen(f"{srv.url}/health", timeout=5)
    assert "finishing 1 request(s)" in srv.proc.stderr.read()


def test_openrlhf_query_that_does_not_start_with_its_prompt_is_not_paid(tmp_path: Path):
    """The policy's cheapest win on ``/openrlhf``: a query whose text does not begin with
    its prompt (a decode that does not round-trip) would be scored whole, prompt included,
    and a few-shot prompt holds graded answers (``#### The final answer is 5``): a
    response of nothing would be paid in full. Such a row is not scored: it gets
    ``--null-reward`` and is counted, the other rows are scored as usual."""
    srv = start(tmp_path, (Path(__file__).parents[2] / "examples" / "gsm8k-rlvr.yaml")
                .read_text(encoding="utf-8"), "--null-reward", "-1")
    try:
        prompt = "Question: 1+4?\nAnswer: 5\n#### The final answer is 5\n\nQuestion: 2+3?\n"
        honest = prompt + "Answer: 2+3 = 5\n#### The final answer is 5"
        shifted = " " + prompt + "Answer: no idea"  # does not start with its prompt
        code, _, body = request(f"{srv.url}/openrlhf", {
            "query": [honest, shifted], "prompts": [prompt, prompt], "labels": ["5", "5"]})
        assert code == 200, body
        assert json.loads(body)["rewards"] == [1.5, -1.0]
        metrics = request(f"{srv.url}/metrics")[2].decode()
        assert 'rewardkit_serve_unmatched_prompts_total 1' in metrics
    finally:
        assert srv.stop() == 0


def _raw(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=REQUEST_TIMEOUT)


def _answer(sock: socket.socket) -> str:
    """The whole answer on ``sock``, up to the server closing it: the status line and
    headers may come in a write of their own, so one ``recv`` can end before the body."""
    parts = []
    while part := sock.recv(4096):
        parts.append(part)
    return b"".join(parts).decode()


def _status(answer: str) -> int:
    """The status of a raw answer, in whichever HTTP/1.x the server answered."""
    version, code = answer.split(" ", 2)[:2]
    assert version in ("HTTP/1.0", "HTTP/1.1"), answer[:100]
    return int(code)


def test_a_body_that_never_arrives_gets_408(tmp_path: Path):
    """The server waits --read-timeout for the rest of the body, then answers 408 (not
    before: the clock starts before the headers are even sent) and serves on."""
    srv = start(tmp_path, CONFIG, "--read-timeout", "2")
    try:
        slow = _raw(srv.url)
        started = time.monotonic()
        slow.sendall(b"POST /score HTTP/1.0\r\nContent-Length: 100\r\n\r\n{\"samples\"")
        answer = _answer(slow)
        waited = time.monotonic() - started
        assert _status(answer) == 408 and "--read-timeout" in answer
        assert 2 <= waited < 12
        slow.close()
        assert request(f"{srv.url}/score", {"samples": [{"completion": GOOD}]})[0] == 200
    finally:
        assert srv.stop() == 0


def test_idle_connections_beyond_the_cap_get_503(tmp_path: Path):
    """Connections beyond --max-connections (idle clients each hold a thread until
    --read-timeout) get 503 at once; the server serves again once they are gone."""
    srv = start(tmp_path, CONFIG, "--max-connections", "3")
    try:
        idle = [_raw(srv.url) for _ in range(3)]
        refused_by = time.monotonic() + REQUEST_TIMEOUT
        while True:  # the server counts a connection once it has accepted it
            code, headers, body = request(f"{srv.url}/health")
            if code == 503 or time.monotonic() > refused_by:
                break
            time.sleep(0.05)
        assert code == 503 and headers["Retry-After"] == "1"
        assert "too many open connections" in json.loads(body)["error"]
        for sock in idle:
            sock.close()
        deadline = time.monotonic() + REQUEST_TIMEOUT
        while request(f"{srv.url}/health")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert request(f"{srv.url}/score", {"samples": [{"completion": GOOD}]})[0] == 200
    finally:
        assert srv.stop() == 0


def test_process_mode_workers_are_gone_after_the_drain(tmp_path: Path):
    """A process-mode reward scores in the worker pool, as under ``rewardkit score``;
    SIGTERM leaves no worker process behind."""
    srv = start(tmp_path, "rewards:\n  pid: {reward: worker_pid}\n")
    code, _, body = request(f"{srv.url}/score", {"samples": [{"completion": "a"}] * 4})
    assert code == 200, body
    pids = {int(v) for v in json.loads(body)["rewards"]}
    assert srv.proc.pid not in pids
    assert srv.stop() == 0
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        assert time.monotonic() < deadline, f"workers {pids} outlived the server"
        time.sleep(0.1)


# --- issue 37: one deadline per request; every bad request answered; options checked ---

REQUEST_HEAD = b"POST /score HTTP/1.0\r\nContent-Length: 60\r\n\r\n"


class Trickler:
    """A client that sends its request one byte at a time, ``every`` seconds apart, for at
    most ``for_s`` seconds (each byte well within any per-read timeout), and reads what
    the server answers."""

    def __init__(self, url: str, every: float = 0.25, for_s: float = 60.0) -> None:
        self.sock = _raw(url)
        self.sock.settimeout(REQUEST_TIMEOUT)
        self.every = every
        self.until = time.monotonic() + for_s
        self.data = REQUEST_HEAD + b" " * 1000
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self) -> None:
        for i in range(len(self.data)):
            if time.monotonic() > self.until:
                return
            try:
                self.sock.send(self.data[i:i + 1])
            except OSError:  # the server closed the connection
                return
            time.sleep(self.every)

    def answer(self) -> str:
        """What the server wrote before closing; TimeoutError if it never closed."""
        try:
            return _answer(self.sock)
        except ConnectionResetError:
            return ""

    def close(self) -> None:
        self.until = 0.0
        self.sock.close()


def test_a_trickling_client_gets_408_at_the_request_deadline(tmp_path: Path):
    """--read-timeout bounds the whole request (headers and body together), not each
    read: a client sending a byte every 0.25 s is answered 408 once the deadline passes
    (before, each byte restarted the clock and the connection was held for as long as
    the client trickled)."""
    srv = start(tmp_path, CONFIG, "--read-timeout", "2")
    try:
        slow = Trickler(srv.url)
        started = time.monotonic()
        answer = slow.answer()
        waited = time.monotonic() - started
        slow.close()
        assert _status(answer) == 408 and "--read-timeout" in answer, answer
        assert 1.5 <= waited < 15
        assert request(f"{srv.url}/score", {"samples": [{"completion": GOOD}]})[0] == 200
    finally:
        assert srv.stop() == 0


def test_trickling_clients_at_the_connection_cap_do_not_starve_a_normal_client(
        tmp_path: Path):
    """As many trickling clients as --max-connections hold every slot only until their
    request deadline: a normal client is served again within a few deadlines (before,
    it got 503 for as long as they trickled)."""
    srv = start(tmp_path, CONFIG, "--max-connections", "3", "--read-timeout", "2")
    slow = [Trickler(srv.url) for _ in range(3)]
    try:
        deadline = time.monotonic() + 20
        while (code := request(f"{srv.url}/health")[0]) != 200:  # no body: a 503 at
            assert code == 503  # accept cannot break its pipe
            assert time.monotonic() < deadline, "the trickling clients still hold every slot"
            time.sleep(0.2)
        assert request(f"{srv.url}/score", {"samples": [{"completion": GOOD}]})[0] == 200
    finally:
        for client in slow:
            client.close()
        assert srv.stop() == 0


def test_sigterm_closes_a_connection_still_reading_its_request(tmp_path: Path):
    """The drain does not wait for a client still sending its request (default
    --read-timeout 30): it is answered 503 and closed, and the server exits at once
    (before, SIGTERM waited for the trickling client). --max-connections 1 shows when
    the server holds the connection (/health then gets 503)."""
    srv = start(tmp_path, CONFIG, "--max-connections", "1")
    slow = Trickler(srv.url)
    try:
        deadline = time.monotonic() + REQUEST_TIMEOUT
        while request(f"{srv.url}/health")[0] != 503:  # the server holds the connection
            assert time.monotonic() < deadline, "the trickling client was never accepted"
            time.sleep(0.05)
        started = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 10
        assert _status(slow.answer()) == 503
    finally:
        slow.close()
        srv.stop()


def _raw_request(url: str, data: bytes) -> str:
    sock = _raw(url)
    try:
        sock.sendall(data)
        return _answer(sock)
    finally:
        sock.close()


@pytest.mark.parametrize(("head", "message"), [
    (b"Content-Length: \xb2", "bad Content-Length"),  # '\xb2' is a digit to str.isdigit
    (b"Content-Length: " + b"9" * 5000, "bad Content-Length"),
])
def test_a_content_length_that_is_not_ascii_digits_gets_400(server: Server, head: bytes,
                                                            message: str):
    answer = _raw_request(server.url, b"POST /score HTTP/1.0\r\n" + head + b"\r\n\r\n{}")
    assert _status(answer) == 400, answer[:200]
    error = json.loads(answer.split("\r\n\r\n", 1)[1])["error"]
    assert message in error and len(error) < 200


@pytest.mark.parametrize(("path", "raw", "message"), [
    ("/score?step=%C2%B2", b'{"samples": [{"completion": "a"}]}', "query string"),
    ("/slime?step=" + "9" * 5000, b'{"response": "a"}', "query string"),
    ("/score", b'{"samples": [{"completion": "a", "n": ' + b"9" * 5000 + b"}]}",
     "a number too long"),
    ("/score", b'{"samples": [{"completion": "a"}], "step": ' + b"9" * 40 + b"}", "'step'"),
])
def test_odd_digits_and_huge_numbers_get_400(server: Server, path: str, raw: bytes,
                                             message: str):
    code, _, body = request(server.url + path, raw=raw)
    assert code == 400, body[:200]
    error = json.loads(body)["error"]
    assert message in error and len(error) < 300


def test_a_reward_raising_keyboard_interrupt_in_a_request_thread_gets_a_one_line_500(
        tmp_path: Path):
    """No Ctrl-C reaches a request thread: a KeyboardInterrupt there is the reward's own
    raise. The request is answered 500 with one line (before, the connection dropped with
    a traceback) and the server serves on."""
    srv = start(tmp_path, "rewards:\n  k: {reward: raises_interrupt}\n")
    try:
        code, _, body = request(f"{srv.url}/score", {"samples": [{"completion": "interrupt"}]})
        assert code == 500 and "KeyboardInterrupt" in json.loads(body)["error"]
        assert request(f"{srv.url}/score", {"samples": [{"completion": "a"}]})[0] == 200
    finally:
        assert srv.stop() == 0
    assert "Traceback" not in srv.proc.stderr.read()


def _serve_refused(tmp_path: Path, *args: str) -> str:
    """stderr of a ``rewardkit serve`` that must refuse its options (exit 2) at once."""
    return _serve_refused_with(tmp_path, CONFIG, *args)


def _serve_refused_with(tmp_path: Path, config: str, *args: str) -> str:
    """stderr of a ``rewardkit serve`` of ``config`` that must refuse to start (exit 2)."""
    cfg = tmp_path / "rewards.yaml"
    cfg.write_text(config, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, FAULTY_CLI, "serve", str(cfg), "--port", "0",
                             *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=10)
        pytest.fail(f"serve accepted {args} and ran")
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert cfg.read_text(encoding="utf-8") == config
    return err


@pytest.mark.parametrize(("args", "message"), [
    (("--null-reward", "nan"), "--null-reward"),
    (("--null-reward", "inf"), "--null-reward"),
    (("--read-timeout", "inf"), "--read-timeout"),
    (("--read-timeout", "1e300"), "--read-timeout"),
    (("--keep-alive", "0"), "--keep-alive"),
    (("--keep-alive", "nan"), "--keep-alive"),
    (("--tokenizer", "/nonexistent/tokenizer"), "--tokenizer"),
    (("--no-strip", "--strip-suffix", "</s>"), "--no-strip"),
    (("--strip-suffix", ""), "--strip-suffix"),
])
def test_options_that_are_not_finite_or_bounded_are_refused(tmp_path: Path,
                                                            args: tuple[str, ...],
                                                            message: str):
    assert message in _serve_refused(tmp_path, *args)


def test_a_port_file_naming_an_input_is_refused(tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    err = _serve_refused(tmp_path, "--port-file", str(tmp_path / "rewards.yaml"))
    assert "--port-file" in err
    err = _serve_refused(tmp_path, "--token-file", str(token), "--port-file", str(token))
    assert "--port-file" in err and token.read_text(encoding="utf-8") == "s3cret\n"


# --- issue 43 #4: routing by metadata on endpoints whose trainers send none ---

ROUTED_CONFIG = """
rewards:
  math_len:
    reward: good
    when: {task: math}
  everyone:
    reward: good
    weight: 0.0
"""


def test_a_config_routing_by_metadata_is_refused_where_the_trainer_sends_none(
        tmp_path: Path):
    """OpenRLHF and slime send no metadata: a component routed by ``when: {task: math}``
    would skip every row there and the trainer would get --null-reward for all of them.
    The server says so at start, and answers 400 on those endpoints when a row carries
    none of the keys the routing reads; rows that carry them (native, or slime's body
    with ``metadata``) are scored."""
    srv = start(tmp_path, ROUTED_CONFIG)
    try:
        code, _, body = request(f"{srv.url}/openrlhf", {"query": ["q a"], "prompts": ["q"]})
        assert code == 400 and "when" in json.loads(body)["error"], body
        assert "task" in json.loads(body)["error"]
        code, _, body = request(f"{srv.url}/slime", {"prompt": "q", "response": "abc"})
        assert code == 400 and "when" in json.loads(body)["error"], body
        code, _, body = request(f"{srv.url}/slime", {"prompt": "q", "response": "abc",
                                                     "metadata": {"task": "math"}})
        assert code == 200 and json.loads(body) == 3.0
        code, _, body = request(f"{srv.url}/score",
                                {"samples": [{"completion": "abc", "task": "math"}]})
        assert code == 200 and json.loads(body)["rewards"] == [3.0]
    finally:
        assert srv.stop() == 0
    err = srv.proc.stderr.read()
    assert "math_len" in err and "/openrlhf" in err and "when" in err


# --- issue 39 #1: connections: no reset at any burst, keep-alive, only 503 beyond ---

CHEAP_CONFIG = "rewards:\n  fmt: {reward: soft_format}\n"


def _burst_outcome(port: int) -> str:
    """What one fresh connection posting one slime sample got: the status, or the error."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT * 2)
    try:
        conn.request("POST", "/slime", body=json.dumps({"prompt": "q", "response": GOOD}))
        resp = conn.getresponse()
        resp.read()
        if resp.status == 503 and not resp.getheader("Retry-After"):
            return "503 without Retry-After"
        return str(resp.status)
    except (OSError, http.client.HTTPException) as exc:
        return type(exc).__name__
    finally:
        conn.close()


def _burst(url: str, n: int) -> Counter[str]:
    port = int(url.rsplit(":", 1)[1])
    outcomes: list[str] = []
    gate = threading.Barrier(n)

    def client() -> None:
        gate.wait()
        outcomes.append(_burst_outcome(port))

    threads = [threading.Thread(target=client) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=REQUEST_TIMEOUT * 4)
    return Counter(outcomes)


def test_a_burst_of_128_connections_gets_no_reset(tmp_path: Path):
    """128 clients connecting at the same moment (OpenRLHF posts one sample per request
    from every engine at once) each get an answer, 200 or the documented 503 with
    Retry-After: the listen backlog was the standard library's 5, and the kernel reset
    most of them before the server saw them."""
    srv = start(tmp_path, CHEAP_CONFIG)
    try:
        outcomes = _burst(srv.url, 128)
    finally:
        assert srv.stop() == 0
    assert sum(outcomes.values()) == 128
    assert set(outcomes) <= {"200", "503"}, outcomes
    assert outcomes["200"] >= 1


def test_beyond_the_connection_cap_a_client_that_sent_its_request_reads_the_503(
        tmp_path: Path):
    """A connection refused at accept has often sent its request already: the 503 is
    written and the request read off before the socket is closed, so the client reads
    the 503, not a reset (closing a socket with unread bytes resets the connection)."""
    srv = start(tmp_path, CHEAP_CONFIG, "--max-connections", "1")
    try:
        hold = _raw(srv.url)
        deadline = time.monotonic() + REQUEST_TIMEOUT
        while request(f"{srv.url}/health")[0] != 503:  # the server counts `hold` as open
            assert time.monotonic() < deadline, "the held connection was never accepted"
            time.sleep(0.05)
        results: list[str] = []
        while len(results) < 20:
            sock = _raw(srv.url)
            try:
                sock.sendall(b"POST /slime HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Length: 4000000\r\n\r\n" + b" " * 4000000)
                results.append(_answer(sock).split("\r\n", 1)[0])
            except OSError as exc:
                results.append(type(exc).__name__)
            sock.close()
            assert time.monotonic() < deadline
        hold.close()
    finally:
        assert srv.stop() == 0
    assert set(results) == {"HTTP/1.0 503 Service Unavailable"}, Counter(results)


def test_http_1_1_keep_alive_serves_many_requests_on_one_connection(server: Server):
    """A client that keeps its connection (requests' Session, aiohttp, http.client) sends
    request after request on it: HTTP/1.1 answers without closing."""
    conn = http.client.HTTPConnection(server.url.removeprefix("http://"),
                                      timeout=REQUEST_TIMEOUT)
    try:
        conn.request("GET", "/health")
        first = conn.getresponse()
        first.read()
        sock = conn.sock
        assert first.version == 11 and not first.will_close
        for _ in range(5):
            conn.request("POST", "/slime", body=json.dumps({"prompt": "q", "response": GOOD}))
            resp = conn.getresponse()
            assert resp.status == 200 and json.loads(resp.read()) >= 0
            assert conn.sock is sock
    finally:
        conn.close()


def test_an_idle_kept_alive_connection_does_not_hold_the_drain(tmp_path: Path):
    """A client that keeps its connection open and sends nothing more does not hold
    SIGTERM's drain: its connection is closed, without an answer to a request it never
    sent."""
    srv = start(tmp_path, CHEAP_CONFIG)
    conn = http.client.HTTPConnection(srv.url.removeprefix("http://"),
                                      timeout=REQUEST_TIMEOUT)
    conn.request("GET", "/health")
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 200 and not resp.will_close
    started = time.monotonic()
    assert srv.stop() == 0
    assert time.monotonic() - started < 15
    assert conn.sock is not None and conn.sock.recv(100) == b""
    conn.close()


# --- issue 39 #3: the end-of-sequence and pad strings the trainer sends are not scored ---

EXAMPLE = str(HERE.parents[1] / "examples" / "gsm8k-rlvr.yaml")
PROMPT = "Question: 2+3?\nAnswer:"
RIGHT = " 2+3 = 5\n#### The final answer is 5"


def _example(tmp_path: Path, *args: str) -> Server:
    return start(tmp_path, Path(EXAMPLE).read_text(encoding="utf-8"), *args)


def test_the_end_of_sequence_string_openrlhf_decodes_is_not_scored(tmp_path: Path):
    """OpenRLHF posts the decoded sequence with its end-of-sequence token
    (``...is 5<|im_end|>``): a reward anchored at the end of the output paid 0 there
    where ``rewardkit score`` pays on the completion. The service strips the common
    end-of-sequence and pad strings from the end of the response by default."""
    srv = _example(tmp_path)
    try:
        queries = [PROMPT + RIGHT, PROMPT + RIGHT + "<|im_end|>",
                   PROMPT + RIGHT + "<|endoftext|><|endoftext|>", PROMPT + RIGHT + "</s>"]
        code, _, body = request(f"{srv.url}/openrlhf", {"query": queries,
                                                        "prompts": [PROMPT] * 4,
                                                        "labels": ["5"] * 4})
        assert code == 200, body
        assert json.loads(body)["rewards"] == [1.5] * 4
        code, _, body = request(f"{srv.url}/slime", {"prompt": PROMPT, "label": "5",
                                                     "response": RIGHT + "<|im_end|>"})
        assert code == 200 and json.loads(body) == 1.5, body
    finally:
        assert srv.stop() == 0


def test_the_strings_stripped_come_from_the_option_or_the_tokenizer(tmp_path: Path):
    """--strip-suffix names the strings (replacing the defaults); --tokenizer reads the
    eos and pad tokens of a local tokenizer's tokenizer_config.json; --no-strip scores
    the text as sent."""
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": {"content": "<|my_eos|>"}, "pad_token": "[PAD]"}), encoding="utf-8")
    cases = [(("--strip-suffix", "<END>"), RIGHT + "<END>", 1.5),
             (("--strip-suffix", "<END>"), RIGHT + "<|im_end|>", 0.5),
             (("--tokenizer", str(tok)), RIGHT + "<|my_eos|>[PAD][PAD]", 1.5),
             (("--no-strip",), RIGHT + "<|im_end|>", 0.5)]
    for i, (args, response, reward) in enumerate(cases):
        folder = tmp_path / str(i)
        folder.mkdir()
        srv = _example(folder, *args)
        try:
            code, _, body = request(f"{srv.url}/slime", {"prompt": PROMPT, "label": "5",
                                                         "response": response})
            assert code == 200 and json.loads(body) == reward, (args, response, body)
        finally:
            assert srv.stop() == 0


# --- issue 39 #5: a config that needs whole groups is refused on per-sample endpoints ---

GROUP_CONFIG = """
aggregate: normalize_then_sum
rewards:
  fmt: {reward: soft_format}
"""


def test_a_config_needing_whole_groups_is_refused_at_start(tmp_path: Path):
    """slime and current OpenRLHF send one sample per request: scored alone, a sample of
    a normalize_then_sum config is standardised within a group of one and every sample
    was paid 0.0, right or wrong. Such a config is refused at start (exit 2), saying
    why and what to do."""
    err = _serve_refused_with(tmp_path, GROUP_CONFIG)
    assert "normalize_then_sum" in err and "whole group" in err and "--native-only" in err


def test_native_only_serves_whole_groups_and_refuses_the_per_sample_endpoints(
        tmp_path: Path):
    """With --native-only the config is served on /score, where a client sends each
    group whole (rows carrying 'group'); /openrlhf and /slime answer 400 saying why."""
    srv = start(tmp_path, GROUP_CONFIG, "--native-only")
    try:
        for path, body in (("/slime", {"prompt": "q", "response": GOOD}),
                           ("/openrlhf", {"query": ["q" + GOOD], "prompts": ["q"]})):
            code, _, answer = request(f"{srv.url}{path}", body)
            assert code == 400 and "whole group" in json.loads(answer)["error"], answer
        rows = [{"prompt": "q", "completion": GOOD, "group": 1},
                {"prompt": "q", "completion": "no layout", "group": 1}]
        code, _, answer = request(f"{srv.url}/score", {"samples": rows})
        assert code == 200, answer
        high, low = json.loads(answer)["rewards"]
        assert high > 0 > low
    finally:
        assert srv.stop() == 0


# --- issue 39 #6: a token the trainers' clients can send ---

def _aiohttp_post(url: str, body: Any) -> tuple[int, Any]:
    """POST as OpenRLHF's and slime's clients do: aiohttp, ``session.post(url,
    json=...)`` with the URL they were given, no header of their own."""
    aiohttp = pytest.importorskip("aiohttp")

    async def post() -> tuple[int, Any]:
        timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
        async with aiohttp.ClientSession(timeout=timeout) as session, \
                session.post(url, json=body) as resp:
            return resp.status, await resp.json(content_type=None)

    return asyncio.run(post())


def test_the_trainers_clients_pass_the_token_in_the_url(tmp_path: Path):
    """OpenRLHF and slime send no Authorization header of their own, but their client
    (aiohttp) turns credentials in the URL (``http://rk:TOKEN@host/slime``) into HTTP
    Basic: the service takes the token as its password (any user name). A wrong or
    missing one is still 401."""
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n", encoding="utf-8")
    srv = start(tmp_path, CONFIG, "--token-file", str(token_file))
    host = srv.url.removeprefix("http://")
    slime = {"prompt": "q", "response": GOOD}
    openrlhf = {"query": ["q" + GOOD], "prompts": ["q"], "labels": [None]}
    try:
        assert _aiohttp_post(f"http://{host}/slime", slime)[0] == 401
        assert _aiohttp_post(f"http://rk:wrong@{host}/slime", slime)[0] == 401
        assert _aiohttp_post(f"http://s3cret-token:@{host}/slime", slime)[0] == 401
        code, reward = _aiohttp_post(f"http://rk:s3cret-token@{host}/slime", slime)
        assert code == 200 and isinstance(reward, float), reward
        code, answer = _aiohttp_post(f"http://rewardkit:s3cret-token@{host}/openrlhf",
                                     openrlhf)
        assert code == 200 and len(answer["rewards"]) == 1, answer
    finally:
        assert srv.stop() == 0


# --- issue 39 #8: bound beyond this machine, a token is required ---

def test_binding_beyond_loopback_needs_a_token_or_no_auth(tmp_path: Path):
    """127.0.0.1 is the default; bound anywhere else (--host 0.0.0.0) the service would
    score for anyone who reaches it, so it refuses to start without a token unless
    --no-auth says so explicitly (and --no-auth with a token is a contradiction)."""
    err = _serve_refused(tmp_path, "--host", "0.0.0.0")
    assert "--no-auth" in err and "--token-file" in err and "0.0.0.0" in err
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n", encoding="utf-8")
    err = _serve_refused(tmp_path, "--no-auth", "--token-file", str(token_file))
    assert "--no-auth" in err
    for args in (("--host", "0.0.0.0", "--no-auth"),
                 ("--host", "0.0.0.0", "--token-file", str(token_file)),
                 ("--host", "127.0.0.1")):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        srv = start(folder, CONFIG, *args)
        try:
            assert request(f"{srv.url}/health")[0] == 200
        finally:
            assert srv.stop() == 0


# --- issue 39 #4: OpenRLHF >= 0.10.2: one sample per request, spread over every URL ---

def test_openrlhf_with_several_urls_gets_200_for_the_empty_shards(tmp_path: Path):
    """OpenRLHF from v0.10.2 posts one sample per request and, given several reward
    URLs, splits the request's queries over all of them: every URL but the first gets
    ``{"query": [], "prompts": [], "labels": []}``, and a non-200 there fails the whole
    sample (its client retries 5 times, then the sample gets no reward). An empty shard
    is answered 200 with empty lists; the first URL's answer holds the reward."""
    srv = start(tmp_path, CONFIG)
    host = srv.url.removeprefix("http://")
    try:
        first = _aiohttp_post(f"http://{host}/openrlhf", {
            "query": ["q" + GOOD], "prompts": ["q"], "labels": [None]})
        empty = _aiohttp_post(f"http://{host}/openrlhf", {
            "query": [], "prompts": [], "labels": []})
    finally:
        assert srv.stop() == 0
    assert first[0] == 200 and len(first[1]["rewards"]) == 1, first
    assert empty == (200, {"rewards": [], "scores": [], "extra_logs": {}})


# --- issue 39 #9: bad input and misbehaving rewards: an answer, never a reset or a hang ---

FAULT_CONFIG = """
on_error: "null"
rewards:
  hangs: {reward: hangs, timeout: 2}
  dies: {reward: dies}
  exits: {reward: exits}
  segfaults: {reward: segfaults}
"""


@pytest.mark.parametrize(("path", "raw"), [
    ("/score", b"{"),
    ("/score", b'{"samples": [{"completion": "a"}]} trailing'),
    ("/score", b"\xff\xfe"),
    ("/score", b'{"samples": {"completion": "a"}}'),
    ("/score", b'{"samples": [{"completion": 5}]}'),
    ("/score", b'{"samples": [{"completion": "a"}], "step": "3"}'),
    ("/score", b'{"samples": [{"completion": "a"}], "stepp": 3}'),
    ("/openrlhf", b'{"query": "a"}'),
    ("/openrlhf", b'{"query": ["a"], "prompts": [1]}'),
    ("/openrlhf", b'{"query": ["a"], "labels": "5"}'),
    ("/slime", b'{"prompt": "q", "response": ["a"]}'),
    ("/slime", b'[{"prompt": "q", "response": "a"}]'),
    ("/slime", b"null"),
])
def test_malformed_wrong_typed_or_unknown_input_gets_400(server: Server, path: str,
                                                         raw: bytes):
    """Each gets 400 with a message saying what is wrong, and the server serves on; an
    unknown key of the native body (a misspelt 'step' would score at step 0) included."""
    code, _, body = request(f"{server.url}{path}", raw=raw)
    assert code == 400, body
    assert json.loads(body)["error"]
    assert request(f"{server.url}/health")[0] == 200


def test_a_reward_that_hangs_or_kills_its_worker_is_a_status_not_a_dead_server(
        tmp_path: Path):
    """A reward that hangs (timeout), kills its worker process, calls sys.exit or
    segfaults mid-request: the request is answered 200 with those rows' statuses, the
    other rows scored, and the server answers the next request."""
    srv = start(tmp_path, FAULT_CONFIG)
    try:
        rows = [{"completion": t} for t in ("fine", "hang", "die", "exit", "crash")]
        code, _, body = request(f"{srv.url}/score", {"samples": rows})
        assert code == 200, body
        got = json.loads(body)["rows"]
        assert got[0]["reward"] is not None
        assert got[1]["components"]["hangs"]["status"] == "timeout"
        for i, name in ((2, "dies"), (3, "exits"), (4, "segfaults")):
            assert got[i]["components"][name]["status"] not in ("ok", "skipped"), got[i]
            assert got[i]["reward"] is None
        code, _, body = request(f"{srv.url}/slime", {"prompt": "q", "response": "die"})
        assert code == 200 and json.loads(body) == 0.0, body
        assert request(f"{srv.url}/health")[0] == 200
    finally:
        assert srv.stop() == 0


def test_an_idle_kept_alive_connection_is_closed_after_keep_alive_seconds(tmp_path: Path):
    """A kept-alive connection that sends no next request holds a thread: after
    --keep-alive seconds it is closed, without an answer (it sent no request)."""
    srv = start(tmp_path, CHEAP_CONFIG, "--keep-alive", "1")
    try:
        sock = _raw(srv.url)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while b'"ok"' not in first:
            first += sock.recv(4096)
        started = time.monotonic()
        assert sock.recv(4096) == b""  # closed by the server (the socket's timeout: 30 s)
        assert 0.5 < time.monotonic() - started < REQUEST_TIMEOUT
        sock.close()
    finally:
        assert srv.stop() == 0


def test_slimes_pooled_client_scores_a_burst_over_kept_alive_connections(tmp_path: Path):
    """slime's remote_rm posts every sample through one shared aiohttp session (a pool of
    at most 64 connections, kept alive): 256 samples at once are all answered 200 with
    the reward a lone request gets, over at most 64 connections the server kept open."""
    aiohttp = pytest.importorskip("aiohttp")
    srv = start(tmp_path, CHEAP_CONFIG, "--queue", "256")
    url = f"{srv.url}/slime"
    sample = {"prompt": "q", "response": GOOD, "label": None}
    opened: list[int] = []  # one entry per connection the client opened

    async def burst() -> list[tuple[int, Any]]:
        connector = aiohttp.TCPConnector(limit=64)
        timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT * 2)
        trace = aiohttp.TraceConfig()

        async def created(*_: Any) -> None:
            opened.append(1)

        trace.on_connection_create_end.append(created)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout,
                                         trace_configs=[trace]) as session:

            async def one() -> tuple[int, Any]:
                async with session.post(url, json=sample) as resp:
                    return resp.status, await resp.json(content_type=None)

            return await asyncio.gather(*(one() for _ in range(256)))

    try:
        alone = request(url, sample)
        answers = asyncio.run(burst())
    finally:
        assert srv.stop() == 0
    assert alone[0] == 200
    assert answers == [(200, json.loads(alone[2]))] * 256
    assert 1 <= len(opened) <= 64, f"{len(opened)} connections for 256 requests"


# --- issue 39 #2: micro-batching across requests ---

LENGTH_CONFIG = "rewards:\n  length: {reward: good}\n"


def _metrics(url: str) -> dict[str, float]:
    code, _, body = request(f"{url}/metrics")
    assert code == 200
    found = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def _all_at_once(calls: list[tuple[str, Any]]) -> list[tuple[int, Any]]:
    """Each (url, body) posted from its own thread, all released together; the answers
    in the order of ``calls``."""
    answers: list[tuple[int, Any]] = [(0, None)] * len(calls)
    gate = threading.Barrier(len(calls))

    def post(i: int) -> None:
        gate.wait()
        code, _, body = request(*calls[i])
        answers[i] = (code, json.loads(body))

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=REQUEST_TIMEOUT * 2)
    return answers


def test_rows_of_concurrent_requests_are_scored_in_one_call_each_answered_its_own(
        tmp_path: Path):
    """Six one-sample slime requests and two native requests of three rows, posted at
    once, are scored in one RewardSet.score call (the batch-size histogram shows one call
    of 12 rows: --max-batch-rows 12 sends the batch the moment the 12th row arrives, the
    long --batch-wait-ms never passes), and each answer holds exactly its own rows' scores
    in its own order (the reward is the completion's length, so a row answered to the
    wrong request or out of order shows)."""
    srv = start(tmp_path, LENGTH_CONFIG, "--max-batch-rows", "12", "--batch-wait-ms",
                "60000")
    try:
        slime = [(f"{srv.url}/slime", {"prompt": "q", "response": "x" * n})
                 for n in (1, 2, 3, 4, 5, 6)]
        native = [(f"{srv.url}/score", {"samples": [{"completion": "y" * n}
                                                    for n in lengths]})
                  for lengths in ((9, 7, 8), (10, 1, 3))]
        answers = _all_at_once(slime + native)
        assert [code for code, _ in answers] == [200] * 8, answers
        assert [body for _, body in answers[:6]] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        assert answers[6][1]["rewards"] == [9.0, 7.0, 8.0]
        assert answers[7][1]["rewards"] == [10.0, 1.0, 3.0]
        assert [r["components"]["length"]["status"] for r in answers[7][1]["rows"]] == \
            ["ok"] * 3
        metrics = _metrics(srv.url)
        assert metrics["rewardkit_serve_batch_rows_count"] == 1
        assert metrics["rewardkit_serve_batch_rows_sum"] == 12
        assert metrics["rewardkit_serve_batch_requests_total"] == 8
        assert metrics['rewardkit_serve_batch_rows_bucket{le="8"}'] == 0
        assert metrics['rewardkit_serve_batch_rows_bucket{le="16"}'] == 1
        assert metrics["rewardkit_serve_rows_total"] == 12
    finally:
        assert srv.stop() == 0


def test_a_lone_request_waits_at_most_the_batch_wait(tmp_path: Path):
    """Nothing else arrives: the request's batch goes to a worker once --batch-wait-ms
    has passed (1.5 s here), not when --max-batch-rows would fill; it is answered then."""
    srv = start(tmp_path, LENGTH_CONFIG, "--batch-wait-ms", "1500")
    try:
        started = time.monotonic()
        code, _, body = request(f"{srv.url}/slime", {"prompt": "q", "response": "abc"})
        elapsed = time.monotonic() - started
        assert code == 200 and json.loads(body) == 3.0
        assert 1.4 <= elapsed < 1.5 + 15, elapsed  # the bound, with room for a slow box
        assert _metrics(srv.url)["rewardkit_serve_batch_rows_count"] == 1
    finally:
        assert srv.stop() == 0


DYING_CONFIG = """
on_error: "null"
rewards:
  dies: {reward: dies}
"""

INTERRUPT_CONFIG = "rewards:\n  interrupt: {reward: raises_interrupt}\n"


def test_a_failing_row_of_one_request_costs_another_request_nothing(tmp_path: Path):
    """Twenty rows that kill their worker trip the executor's breaker, which gives up the
    rest of its call; scored in one batch with them, another request's rows would be
    given up too. The batch's first request is the dying one (sent first, the other
    after /health shows it waiting); the other request is answered with its own rows
    scored, and the dying rows get their own statuses.

    Nor does it wait for them: the batch's breaker gave up the other request's rows, and
    scoring the requests again one by one began with the dying one (16 more worker
    deaths) and answered everyone at the end, so the other request waited for both
    rounds of deaths (past the 30 s request timeout at load 12-20). Now it is scored
    again first and answered at once: it is answered before the dying request. Each
    worker death costs a process start, so the requests here may take as long as the
    machine needs (``slow``); what is checked is the order, not a time."""
    slow = REQUEST_TIMEOUT * 8
    srv = start(tmp_path, DYING_CONFIG, "--max-batch-rows", "23", "--batch-wait-ms",
                "60000")
    try:
        answered: dict[str, float] = {}

        def send_dying() -> tuple[int, dict[str, str], bytes]:
            got = request(f"{srv.url}/score", {"samples": [{"completion": "die"}] * 20},
                          timeout=slow)
            answered["dying"] = time.monotonic()
            return got

        answers: list[Any] = []
        dying = threading.Thread(target=lambda: answers.append(send_dying()))
        dying.start()
        _wait_for(srv.url, "queued", 1)
        code, _, body = request(f"{srv.url}/score",
                                {"samples": [{"completion": f"fine {i}"} for i in range(3)]},
                                timeout=slow)
        answered["fine"] = time.monotonic()
        assert code == 200, body
        fine = json.loads(body)
        assert fine["rewards"] == [1.0, 1.0, 1.0], fine
        assert {r["components"]["dies"]["status"] for r in fine["rows"]} == {"ok"}
        dying.join(timeout=slow * 2)
        assert answered["fine"] < answered["dying"], answered
        (code, _, body), = answers
        assert code == 200, body
        got = json.loads(body)
        assert got["rewards"] == [None] * 20
        assert {r["components"]["dies"]["status"] for r in got["rows"]} == {"error"}
    finally:
        assert srv.stop() == 0


def test_a_request_whose_scoring_fails_does_not_fail_its_batch_mates(tmp_path: Path):
    """A reward raising KeyboardInterrupt fails the whole RewardSet.score call (a 500: the
    fault model leaves it to the caller). In a batch with another request, the batch is
    scored again request by request: the failing one gets its 500, the other its 200."""
    srv = start(tmp_path, INTERRUPT_CONFIG, "--max-batch-rows", "2", "--batch-wait-ms",
                "60000")
    try:
        answers = _all_at_once([
            (f"{srv.url}/slime", {"prompt": "q", "response": "interrupt"}),
            (f"{srv.url}/slime", {"prompt": "q", "response": "fine"})])
        assert answers[0][0] == 500 and "KeyboardInterrupt" in answers[0][1]["error"]
        assert answers[1] == (200, 1.0)
        assert _metrics(srv.url)["rewardkit_serve_batch_rows_count"] == 3  # 1 + 2 alone
    finally:
        assert srv.stop() == 0


def test_a_group_sent_over_several_requests_is_scored_whole_when_it_carries_its_id(
        tmp_path: Path):
    """Under normalize_then_sum (served --native-only) a row is standardised within its
    group. Two one-row requests carrying the same group id, posted together, are
    gathered into one group: the better row is paid above the worse. Two one-row
    requests of the same prompt without ids are two groups, as when each was scored
    alone (a group of one: 0.0 each), and are not merged."""
    srv = start(tmp_path, GROUP_CONFIG, "--native-only", "--max-batch-rows", "2",
                "--batch-wait-ms", "3000")
    try:
        with_ids = [(f"{srv.url}/score", {"samples": [{"prompt": "q", "completion": c,
                                                       "group": "g1"}]})
                    for c in (GOOD, "no layout")]
        (code_a, high), (code_b, low) = _all_at_once(with_ids)
        assert (code_a, code_b) == (200, 200)
        assert high["rewards"][0] > 0 > low["rewards"][0]
        assert _metrics(srv.url)["rewardkit_serve_batch_rows_count"] == 1
        without = [(f"{srv.url}/score", {"samples": [{"prompt": "q", "completion": c}]})
                   for c in (GOOD, "no layout")]
        answers = _all_at_once(without)
        assert [(code, body["rewards"]) for code, body in answers] == \
            [(200, [0.0]), (200, [0.0])]
        metrics = _metrics(srv.url)
        assert metrics["rewardkit_serve_batch_rows_count"] == 3
        assert metrics["rewardkit_serve_batch_rows_sum"] == 4
    finally:
        assert srv.stop() == 0


def test_micro_batching_options_are_bounded(tmp_path: Path):
    for args in (("--batch-wait-ms", "-1"), ("--batch-wait-ms", "nan"),
                 ("--batch-wait-ms", "60001"), ("--max-batch-rows", "0")):
        err = _serve_refused(tmp_path, *args)
        assert args[0] in err, err
