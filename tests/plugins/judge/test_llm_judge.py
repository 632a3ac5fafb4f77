"""llm_judge against real HTTP servers on loopback: the chat server running a tiny
transformers model trained to grade (its verdicts as reward values, batches under a
concurrency limit, the cache, translation ratings, an answer without a score, a crash
mid-batch) in a subprocess, and a scripted judge server (the client's limits: scores out
of range, concurrency, retries with backoff, timeouts)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from judge_models import CAPITAL as CAPITAL_LM
from judge_models import CITIES, COUNTRY, NO_SCORE, OFF_TOPIC, PHRASINGS, question
from judge_models import TRANSLATIONS as LM_TRANSLATIONS
from judge_support import (
    CAPITAL,
    JUDGE,
    JUDGE_LM,
    SOURCE,
    TRANSLATION,
    TRANSLATION_LM,
    TRANSLATIONS,
    ChatServer,
    Script,
)

from rewardkit import ConfigError, RewardSet

pytest.importorskip("httpx")


def judge_set(base_url: str, **params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"judge": {
        "reward": "llm_judge", "params": {**JUDGE, "base_url": base_url, **params}}}})


def rows(*completions: str) -> list[dict[str, Any]]:
    return [{"prompt": CAPITAL, "completion": c} for c in completions]


def lm_judge_set(base_url: str, **params: Any) -> RewardSet:
    """llm_judge asking the trained tiny judge, with the default rubric prompt."""
    return RewardSet.from_dict({"rewards": {"judge": {
        "reward": "llm_judge", "params": {**JUDGE_LM, "base_url": base_url, **params}}}})


def lm_rows(*completions: str) -> list[dict[str, Any]]:
    return [{"prompt": question(COUNTRY), "completion": c} for c in completions]


def judge_of(rs: RewardSet) -> Any:
    return rs.components["judge"].stages[0].reward


# -- the client against the scripted server -----------------------------------------

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
    rs = lm_judge_set(server.base_url, concurrency=1, cache_size=0)
    start = time.perf_counter()
    result = rs.score(lm_rows(CAPITAL_LM, "Lyon"))
    assert time.perf_counter() - start < 60
    first, second = result[0].scores["judge"], result[1].scores["judge"]
    # the first was answered and graded by the model; the second never answered
    assert first.status == "ok" and first.value == pytest.approx(0.9)
    assert second.status == "error" and second.value is None
    assert "attempts" in second.reason
    assert server.process.wait(10) == 3  # it really died
    after = rs.score(lm_rows(CAPITAL_LM))[0].scores["judge"]
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


# -- the trained tiny judge behind the chat server ------------------------------------

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


def test_the_trained_judge_grades_right_and_wrong_answers(chat_server: ChatServer) -> None:
    """The score comes from the model's judgement of each completion, through HTTP and
    the score parser, into the reward value."""
    result = lm_judge_set(chat_server.base_url).score(
        lm_rows(CAPITAL_LM, f"It is {CAPITAL_LM}", "Lyon", "It is Rome", "Tokyo"))
    assert result.values("judge") == pytest.approx([0.9, 0.9, 0.2, 0.2, 0.2])
    assert [result[i].scores["judge"].details["judge_score"] for i in (0, 2)] == [9.0, 2.0]


def test_a_batch_under_a_concurrency_limit_gets_each_rows_own_verdict(
        chat_server: ChatServer) -> None:
    completions = [p.format(city=c) for c in CITIES for p in PHRASINGS]
    expected = [0.9 if c == CAPITAL_LM else 0.2 for c in CITIES for _ in PHRASINGS]
    for concurrency in (1, 4):
        rs = lm_judge_set(chat_server.base_url, concurrency=concurrency, cache_size=0)
        assert rs.score(lm_rows(*completions)).values("judge") == pytest.approx(expected)
        assert judge_of(rs)._client.requests == len(completions)


def test_the_trained_judges_verdicts_are_cached(chat_server: ChatServer) -> None:
    rs = lm_judge_set(chat_server.base_url)
    first = rs.score(lm_rows(CAPITAL_LM, "Lyon", CAPITAL_LM))
    client = judge_of(rs)._client
    assert client.requests == 2
    again = rs.score(lm_rows("Lyon", CAPITAL_LM))
    assert client.requests == 2
    assert first.values("judge") == pytest.approx([0.9, 0.2, 0.9])
    assert again.values("judge") == pytest.approx([0.2, 0.9])
    assert all(again[i].scores["judge"].details["cached"] for i in range(2))


def test_a_judges_answer_without_a_score_is_an_error_not_a_zero(
        chat_server: ChatServer) -> None:
    score = lm_judge_set(chat_server.base_url).score(lm_rows(OFF_TOPIC))[0].scores["judge"]
    assert score.status == "error" and score.value is None
    assert "no score in the judge's answer" in score.reason and NO_SCORE in score.reason


def test_the_trained_translation_judge_rates_and_the_threshold_decides(
        chat_server: ChatServer) -> None:
    rs = RewardSet.from_dict({"rewards": {"judge": {"reward": "translation_judge", "params": {
        **TRANSLATION_LM, "base_url": chat_server.base_url}}}})
    rows_ = [{"prompt": source, "completion": text}
             for source, good, bad in LM_TRANSLATIONS for text in (good, bad)]
    result = rs.score(rows_)
    assert result.values("judge") == [1.0, 0.0] * len(LM_TRANSLATIONS)
    assert result[0].scores["judge"].details["ratings"] == [5] * 7
    assert result[1].scores["judge"].details["ratings"] == [5, 5, 5, 5, 5, 1, 5]
    assert "quantities and units" in result[1].scores["judge"].reason


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _vllm_command() -> str | None:
    """The ``vllm`` command of this environment (beside its python), else of the PATH."""
    if importlib.util.find_spec("vllm") is None:
        return None
    beside = Path(sys.executable).parent / "vllm"
    return str(beside) if beside.is_file() else shutil.which("vllm")


def _why_no_vllm() -> str | None:
    if _vllm_command() is None:
        return "vllm serve needs the vllm package (pip install vllm); it is not installed"
    if shutil.which("nvidia-smi") is None or subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        return "vllm serve needs a GPU; nvidia-smi finds none"
    return None


@pytest.mark.skipif(_why_no_vllm() is not None, reason=str(_why_no_vllm()))
def test_the_same_judge_served_by_vllm(judge_model_dir: Any) -> None:
    import httpx

    port = _free_port()
    process = subprocess.Popen(
        [str(_vllm_command()), "serve", str(judge_model_dir), "--port", str(port),
         "--host", "127.0.0.1",
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
        result = lm_judge_set(url).score(lm_rows(CAPITAL_LM, "Lyon"))
        # the same trained judge as behind the chat server, the same verdicts
        assert result.values("judge") == pytest.approx([0.9, 0.2])
    finally:
        process.terminate()
        process.wait(60)
