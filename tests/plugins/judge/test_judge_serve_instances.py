"""The judge's rate budgets shared by every instance of ``rewardkit serve --instances 2``:
two server processes on one port, posting to one OpenAI-compatible judge server in its own
process (grading_stub.py), together stay within one requests-per-minute and one
tokens-per-minute budget, counted where the requests arrive (at the judge). The budget is
node-wide through files (rewardkit.execution.budget): nothing is shared between nodes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from grading_stub import Stub

pytest.importorskip("httpx")

from rewardkit_judge.client import estimate_tokens

TEMPLATE = ("{rubric}\n{prompt}\nReference:\n{reference}\n{completion}\n"
            "End with 'Score: N', N from {min_score} to {max_score}.")
REQUESTS, ROWS_EACH = 16, 2
#: how late a request may arrive at the judge after it took its token (measured: the
#: first requests of each instance, which open their connections, arrive up to ~0.2 s
#: late on a busy machine, bunched with the next ones)
JITTER_S = 0.3


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    yield server
    server.close()


def judge_config(base_url: str, **limits: float) -> str:
    return json.dumps({"rewards": {"judge": {"reward": "llm_judge", "params": {
        "base_url": base_url, "model": "stub", "template": TEMPLATE, "retries": 0,
        "rubric": "The answer matches the reference.", "request_timeout": 60,
        "min_score": 0, "max_score": 10, "max_tokens": 8, "concurrency": 4, **limits}}}})


def serve(tmp_path: Path, config: str) -> tuple[subprocess.Popen[str], str]:
    cfg = tmp_path / "judge.json"
    cfg.write_text(config, encoding="utf-8")
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "rewardkit.cli", "serve", str(cfg),
                             "--port", "0", "--port-file", str(port_file), "--instances",
                             "2"], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "RK_BUDGET_DIR": str(tmp_path / "budget")})
    deadline = time.monotonic() + 120
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"rewardkit serve did not start: {proc.communicate()[1][-2000:]}")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{int(port_file.read_text())}"


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
    err = proc.communicate(timeout=10)[1]
    assert proc.returncode == 0, err


def post_all(url: str, tag: str) -> list[tuple[str, list[float]]]:
    """REQUESTS requests of ROWS_EACH rows at once, each on a fresh connection (spread
    over the instances by the kernel); (instance, rewards) of each. Every row differs, so
    no verdict comes from a cache."""
    got: list[tuple[str, list[float]]] = []
    lock = threading.Lock()

    def post(k: int) -> None:
        rows = [{"prompt": "Capital of France?", "reference": "Paris",
                 "completion": f"Try {tag}{k}-{j}: so the answer is Paris."}
                for j in range(ROWS_EACH)]
        req = urllib.request.Request(url + "/score", json.dumps({"samples": rows}).encode())
        with urllib.request.urlopen(req, timeout=120) as resp:
            answer = (resp.headers["X-Rewardkit-Instance"], json.load(resp)["rewards"])
        with lock:
            got.append(answer)

    threads = [threading.Thread(target=post, args=(k,)) for k in range(REQUESTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    return got


def most_in_window(times: list[float], window: float, weights: list[float] | None = None
                   ) -> float:
    """The most arrivals (or their weights) within any ``window`` seconds."""
    pairs = sorted(zip(times, weights or [1.0] * len(times), strict=True))
    return max(sum(w for u, w in pairs[i:] if u < t + window) for i, (t, _) in
               enumerate(pairs))


def run(tmp_path: Path, stub: Stub, tag: str, **limits: float
        ) -> tuple[list[tuple[str, list[float]]], list[tuple[float, Any]]]:
    proc, url = serve(tmp_path, judge_config(stub.base_url, **limits))
    try:
        answers = post_all(url, tag)
    finally:
        stop(proc)
    return answers, stub.arrivals()


def test_two_instances_together_keep_one_rpm_budget(tmp_path: Path, stub: Stub) -> None:
    rpm = 600  # 10 requests a second for the node, whichever instance sends them
    answers, arrivals = run(tmp_path, stub, "rpm", rpm=rpm)
    assert len(answers) == REQUESTS
    assert {instance for instance, _ in answers} == {"0", "1"}  # both sent requests
    assert all(rewards == [1.0] * ROWS_EACH for _, rewards in answers), answers
    times = [when for when, _ in arrivals]
    assert len(times) == REQUESTS * ROWS_EACH
    rate = (len(times) - 1) / (max(times) - min(times))
    # a bucket of burst 1 at 10/s: at most 1 + 10 tokens taken in any second; counted at
    # the judge, the requests of 1 + JITTER_S seconds of tokens
    assert most_in_window(times, 1.0) <= 1 + rpm / 60 * (1 + JITTER_S), times
    assert rate <= rpm / 60 * 1.05, rate
    print(f"{len(times)} requests from both instances at {rate:.2f}/s against a limit of "
          f"{rpm / 60:g}/s; most in one second {most_in_window(times, 1.0):g}")


def test_two_instances_together_keep_one_tpm_budget(tmp_path: Path, stub: Stub) -> None:
    # the stub reports no usage: each request is charged its estimate (~40 tokens here)
    tpm = 24_000  # 400 tokens a second, bursts of 400: about 10 requests a second
    answers, arrivals = run(tmp_path, stub, "tpm", tpm=tpm)
    assert {instance for instance, _ in answers} == {"0", "1"}
    assert all(rewards == [1.0] * ROWS_EACH for _, rewards in answers), answers
    times = [when for when, _ in arrivals]
    tokens = [float(estimate_tokens(body)) for _, body in arrivals]
    per_s = tpm / 60
    # in any second, at most the burst plus the refill of 1 + JITTER_S seconds (a request
    # taking the bucket's last tokens may go beyond by less than its own size)
    assert most_in_window(times, 1.0, tokens) <= \
        per_s * (2 + JITTER_S) + max(tokens), (times, tokens)
    # beyond the first burst, no faster than the rate over the whole run
    span = max(times) - min(times)
    assert sum(tokens) - per_s <= per_s * span * 1.05 + max(tokens), (sum(tokens), span)
    print(f"{sum(tokens):g} tokens in {span:.2f} s against {per_s:g}/s (burst {per_s:g}); "
          f"most in one second {most_in_window(times, 1.0, tokens):g}")


def test_without_a_budget_the_same_load_arrives_faster(tmp_path: Path, stub: Stub) -> None:
    """The checks above can fail: unlimited, the same requests arrive far above 10/s."""
    answers, arrivals = run(tmp_path, stub, "free")
    assert {instance for instance, _ in answers} == {"0", "1"}
    assert most_in_window([when for when, _ in arrivals], 1.0) > 1 + 10 * (1 + JITTER_S)
