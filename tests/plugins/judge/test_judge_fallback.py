"""Rule-then-judge (``fallback:`` on a component) with llm_judge as the fallback, against a
judge server in its own process (grading_stub.py) that counts the requests it answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from grading_stub import Stub

from rewardkit import RewardSet

pytest.importorskip("httpx")

TEMPLATE = ("{rubric}\n{prompt}\nReference:\n{reference}\n{completion}\n"
            "End with 'Score: N', N from {min_score} to {max_score}.")
ROWS = [{"prompt": "Capital of France?", "completion": "<answer>Paris</answer>",
         "reference": "Paris"},            # the rule pays: the judge is not asked
        {"prompt": "Capital of France?", "completion": "So the answer is Paris.",
         "reference": "Paris"},            # no answer block: the rule says no, the judge yes
        {"prompt": "Capital of Italy?", "completion": "<answer>Milan</answer>",
         "reference": "Rome"},             # both say no
        {"prompt": "Capital of Spain?", "completion": "<answer>Madrid</answer>",
         "reference": "Madrid", "task": "other"}]  # not routed here


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    yield server
    server.close()


def accuracy(base_url: str, **fallback: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"accuracy": {
        "reward": "exact_answer", "when": {"task": None},
        "fallback": {"reward": "llm_judge", "params": {
            "base_url": base_url, "model": "stub", "template": TEMPLATE, "retries": 0,
            "rubric": "The answer matches the reference.", "request_timeout": 10},
            **fallback}}}})


def test_the_judge_is_asked_only_where_the_rule_says_no(stub: Stub) -> None:
    rows = [{**r, "task": r.get("task")} for r in ROWS]
    result = accuracy(stub.base_url).score(rows)
    assert result.values("accuracy") == [1.0, 1.0, 0.0, None]
    assert stub.requests_answered() == 2
    flipped = result.scores("accuracy")[1]
    assert flipped.details is not None and flipped.details["fallback"]["flipped"] is True
    assert flipped.details["fallback"]["rule"] == 0.0
    assert "fallback" not in (result.scores("accuracy")[0].details or {})
    metrics = result.metrics["components"]["accuracy"]["fallback"]
    assert metrics == {"asked": 2, "flips": 1, "errors": 0, "asked_rate": 0.5,
                       "flip_rate": 0.25, "error_rate": 0.0}
    assert result.flat_metrics()["rewards/accuracy/fallback_flip_rate"] == 0.25


def test_below_asks_the_judge_about_partial_credit_too(stub: Stub) -> None:
    rows = [{**r, "task": r.get("task")} for r in ROWS]
    result = accuracy(stub.base_url, below=0.0).score(rows)
    assert result.values("accuracy") == [1.0, 0.0, 0.0, None]
    assert stub.requests_answered() == 0
    assert result.metrics["components"]["accuracy"]["fallback"]["asked"] == 0


def test_a_judge_that_cannot_be_reached_leaves_the_rules_verdict_counted() -> None:
    rows = [{**r, "task": r.get("task")} for r in ROWS]
    result = accuracy("http://127.0.0.1:9/v1").score(rows)
    assert result.values("accuracy") == [1.0, 0.0, 0.0, None]
    second = result.scores("accuracy")[1]
    assert str(second.status) == "ok"
    assert second.details is not None and second.details["fallback"]["status"] == "error"
    metrics = result.metrics["components"]["accuracy"]["fallback"]
    assert (metrics["asked"], metrics["flips"], metrics["errors"]) == (2, 0, 2)
