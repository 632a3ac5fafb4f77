"""An OpenAI reasoning model (o1, o3, o4-mini, gpt-5) as the judge.

Their API answers HTTP 400 to a request holding ``max_tokens`` ("Use
'max_completion_tokens' instead") or a ``temperature`` other than 1, and llm_judge sent
both with every request: every sample was an error. ``temperature: null`` and
``max_tokens: null`` leave the field out; ``token_limit_field: max_completion_tokens``
sends the limit under the name those models take. The scripted server answers as the
real API does (``Script.reasoning_model``).
"""

from __future__ import annotations

from typing import Any

import pytest
from judge_support import CAPITAL, JUDGE, Script

from rewardkit import ConfigError, RewardSet

pytest.importorskip("httpx")


def judge_set(url: str, name: str = "llm_judge", **params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"judge": {
        "reward": name, "params": {**JUDGE, "base_url": url, **params}}}})


def test_the_default_request_is_refused_by_a_reasoning_model_with_its_reason(
        scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.reasoning_model = True
    score = judge_set(url).score([{"prompt": CAPITAL, "completion": "paris"}])[0]
    judged = score.scores["judge"]
    assert (judged.status, judged.value) == ("error", None)
    assert "HTTP 400" in judged.reason and "max_completion_tokens" in judged.reason


def test_a_reasoning_model_judges_with_its_own_fields(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.reasoning_model = True
    rs = judge_set(url, temperature=None, token_limit_field="max_completion_tokens")
    result = rs.score([{"prompt": CAPITAL, "completion": "paris"}])
    assert result[0].scores["judge"].status == "ok", result[0].scores["judge"].reason
    assert result.values("judge") == [pytest.approx(0.9)]
    body = script.bodies[-1]
    assert "temperature" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == JUDGE["max_tokens"]


def test_null_leaves_both_fields_out(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.reasoning_model = True
    rs = judge_set(url, temperature=None, max_tokens=None)
    assert rs.score([{"prompt": CAPITAL, "completion": "lyon"}]).values("judge") == [
        pytest.approx(0.2)]
    body = script.bodies[-1]
    assert not {"temperature", "max_tokens", "max_completion_tokens"} & set(body)


def test_the_defaults_still_send_both_fields(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    judge_set(url).score([{"prompt": CAPITAL, "completion": "paris"}])
    body = script.bodies[-1]
    assert (body["temperature"], body["max_tokens"]) == (0.0, JUDGE["max_tokens"])
    assert "max_completion_tokens" not in body


def test_pairwise_judge_sends_the_same_fields(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.reasoning_model = True
    rs = RewardSet.from_dict({"rewards": {"judge": {"reward": "pairwise_judge", "params": {
        "model": "m", "rubric": "the better one", "base_url": url, "retries": 0,
        "request_timeout": 20,
        "temperature": None, "token_limit_field": "max_completion_tokens"}}}})
    rs.score([{"prompt": "p", "completion": "a", "group": "g"},
              {"prompt": "p", "completion": "b", "group": "g"}])
    assert script.bodies, "no request sent"
    for body in script.bodies:
        assert "temperature" not in body and "max_tokens" not in body
        assert body["max_completion_tokens"] > 0


def test_an_unknown_token_limit_field_is_refused_with_its_key() -> None:
    with pytest.raises(ConfigError, match="token_limit_field"):
        judge_set("http://127.0.0.1:9/v1", token_limit_field="max_new_tokens")


def test_the_token_budget_counts_max_completion_tokens() -> None:
    from rewardkit_judge.client import estimate_tokens, most_tokens

    messages = [{"role": "user", "content": "x" * 400}]
    for field in ("max_tokens", "max_completion_tokens"):
        body = {"messages": messages, field: 1000}
        assert estimate_tokens(body) == 101 + 1000
        assert most_tokens(body) == 400 + 32 + 1000
    # no limit sent: a usage is believed up to the longest answer such an API gives
    assert most_tokens({"messages": messages}) > 100_000
