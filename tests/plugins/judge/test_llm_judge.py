"""llm_judge against real HTTP servers on loopback: the chat server running a tiny
transformers model in a subprocess (a real model's answer, a crash mid-batch), and a
scripted judge server (scores, cache, translation ratings, concurrency, retries with
backoff, timeouts)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import CAPITAL, JUDGE, SOURCE, TRANSLATION, TRANSLATIONS, ChatServer, answer_for

from rewardkit import ConfigError, RewardSet

pytest.importorskip("httpx")


def judge_set(base_url: str, **params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"judge": {
        "reward": "llm_judge", "params": {**JUDGE, "base_url": base_url, **params}}}})


def rows(*completions: str) -> list[dict[str, Any]]:
    return [{"prompt": CAPITAL, "completion": c} for c in completions]


def judge_of(rs: RewardSet) -> Any:
    return rs.components["judge"].stages[0].reward


# -- a scripted server for the client's limits ----------------------------------------

class Script:
    """What the scripted server does: counts requests and requests in flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.requests = 0
        self.fail_first = 0        # answer 503 to this many requests first
        self.delay = 0.0           # seconds before answering
        self.times: list[float] = []


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            request = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            with script.lock:
                script.requests += 1
                script.times.append(time.perf_counter())
                n = script.requests
                script.in_flight += 1
                script.most_in_flight = max(script.most_in_flight, script.in_flight)
            try:
                time.sleep(script.delay)
                if n <= script.fail_first:
                    status, body = 503, {"error": {"message": "busy"}}
                else:
                    status, body = 200, {"choices": [{"message": {
                        "role": "assistant", "content": answer_for(request)}}]}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                with script.lock:
                    script.in_flight -= 1

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    server.shutdown()
    server.server_close()


# -- the tiny transformers judge behind the chat server ------------------------------

def test_the_score_in_the_judges_answer_is_normalised(scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    result = judge_set(url).score(rows("paris", "lyon"))
    assert result.values("judge") == pytest.approx([0.9, 0.2])
    assert result[0].scores["judge"].details["judge_score"] == 9.0


def test_raw_scores_without_normalising(scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    result = judge_set(url, normalize=False).score(rows("paris"))
    assert result.values("judge") == [9.0]


def test_an_answer_without_a_score_is_an_error_not_zero(scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    score = judge_set(url).score(rows("banana"))[0].scores["judge"]
    assert score.status == "error" and score.value is None
    assert "no score in the judge's answer" in score.reason and "I like it" in score.reason


def test_a_score_out_of_range_is_an_error(scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    score = judge_set(url).score(rows("rome"))[0].scores["judge"]
    assert score.status == "error" and "outside 0..10" in score.reason


def test_a_verdict_is_asked_once_then_cached(scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    rs = judge_set(url)
    first = rs.score(rows("paris", "paris", "lyon"))
    client = judge_of(rs)._client
    assert client.requests == 2  # the duplicate waited for the first answer
    again = rs.score(rows("lyon", "paris"))
    assert client.requests == 2
    assert again.values("judge") == pytest.approx([0.2, 0.9])
    assert first.values("judge") == pytest.approx([0.9, 0.9, 0.2])
    assert again[0].scores["judge"].details["cached"] is True


def test_the_cache_key_holds_the_rubric_and_the_model(scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    judge = judge_of(judge_set(url))
    other_rubric = judge_of(judge_set(url, rubric="Is it polite?"))
    other_model = judge_of(judge_set(url, model="another"))
    from rewardkit import Sample

    sample = Sample(prompt=CAPITAL, completion="paris")
    keys = {judge.cache_key(sample), other_rubric.cache_key(sample),
            other_model.cache_key(sample)}
    assert len(keys) == 3


def test_a_server_that_dies_mid_batch_costs_only_the_unanswered(start_server: Any) -> None:
    server = start_server("--exit-after", "1")
    rs = judge_set(server.base_url, concurrency=1, cache_size=0)
    start = time.perf_counter()
    result = rs.score(rows("paris", "lyon"))
    assert time.perf_counter() - start < 60
    first, second = result[0].scores["judge"], result[1].scores["judge"]
    # the first was answered (by an untrained model: no score in it), the second never
    assert first.status == "error" and "no score in the judge's answer" in first.reason
    assert second.status == "error" and second.value is None
    assert "attempts" in second.reason
    assert server.process.wait(10) == 3  # it really died
    after = rs.score(rows("paris"))[0].scores["judge"]
    assert after.status == "error" and "cannot reach the endpoint" in after.reason


def test_an_unreachable_endpoint_is_an_error_after_the_retries() -> None:
    rs = judge_set("http://127.0.0.1:9/v1", retries=2, backoff=0.01)
    score = rs.score(rows("paris"))[0].scores["judge"]
    assert score.status == "error" and "after 3 attempts" in score.reason
    assert judge_of(rs)._client.requests == 3


def test_bad_params_fail_when_the_config_loads() -> None:
    with pytest.raises(ConfigError) as err:
        judge_set("http://127.0.0.1:9/v1", template="{rubric} {answer}")
    assert "unknown or malformed placeholder" in err.value.render()
    with pytest.raises(ConfigError):
        judge_set("127.0.0.1:9")
    with pytest.raises(ConfigError):
        judge_set("http://127.0.0.1:9/v1", score_pattern=r"\d+")


# -- translation_judge: the seven ratings and the business threshold -----------------

def translation_set(base_url: str, **params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"judge": {
        "reward": "translation_judge",
        "params": {**TRANSLATION, "base_url": base_url, **params}}}})


def test_translation_judge_applies_the_business_threshold(scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    good, wrong_unit, short = TRANSLATIONS
    result = translation_set(url).score(
        [{"prompt": SOURCE, "completion": t} for t in (good, wrong_unit, short)])
    ok, review, unreadable = (result[i].scores["judge"] for i in range(3))
    assert ok.value == 1.0 and ok.details["ratings"] == [5] * 7
    assert review.value == 0.0 and "quantities and units" in review.reason
    assert unreadable.status == "error" and "wrong_length" in unreadable.reason


def test_translation_judge_per_criterion_pays_the_passing_share(
        scripted: tuple[str, Script]) -> None:
    url = scripted[0]
    wrong_unit = list(TRANSLATIONS)[1]
    result = translation_set(url, mode="per_criterion").score(
        [{"prompt": SOURCE, "completion": wrong_unit}])
    assert result.values("judge") == pytest.approx([6 / 7])


def test_a_real_models_answer_comes_back_through_the_chat_api(
        chat_server: ChatServer) -> None:
    import httpx

    body = {"model": "tiny-judge", "max_tokens": 6,
            "messages": [{"role": "user", "content": "capital of france"}]}
    reply = httpx.post(chat_server.base_url + "/chat/completions", json=body, timeout=60).json()
    assert reply["object"] == "chat.completion"
    assert isinstance(reply["choices"][0]["message"]["content"], str)
    assert 0 < reply["usage"]["completion_tokens"] <= 6
    assert httpx.get(chat_server.base_url + "/models").json()["data"][0]["id"] == "tiny-judge"


def test_an_untrained_models_answer_is_an_error_not_a_zero(chat_server: ChatServer) -> None:
    score = judge_set(chat_server.base_url).score(rows("paris"))[0].scores["judge"]
    assert score.status == "error" and score.value is None
    assert "no score in the judge's answer" in score.reason


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.skipif(shutil.which("vllm") is None or shutil.which("nvidia-smi") is None,
                    reason="vllm serve needs a GPU and the vllm package; this machine has "
                    "neither (the transformers chat server above stands in for it)")
def test_the_same_judge_served_by_vllm(judge_model_dir: Any) -> None:
    import subprocess

    import httpx

    port = _free_port()
    process = subprocess.Popen(
        ["vllm", "serve", str(judge_model_dir), "--port", str(port), "--host", "127.0.0.1",
         "--served-model-name", "tiny-judge", "--dtype", "float32", "--max-model-len", "512",
         "--gpu-memory-utilization", "0.2", "--enforce-eager"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            assert process.poll() is None, "vllm serve exited"
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(2)
        score = judge_set(url).score(rows("paris"))[0].scores["judge"]
        # the same untrained model as behind the chat server: answered, but no score
        assert score.status == "error" and "no score in the judge's answer" in score.reason
    finally:
        process.terminate()
        process.wait(60)
