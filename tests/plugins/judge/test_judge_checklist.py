"""llm_judge with a per-row checklist (``checklist: COLUMN``): weighted criteria, pitfalls
(negative weights), a verdict per criterion; against a judge server in its own process
(grading_stub.py) that checks each "says WORD" criterion, and the answer-reading rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from grading_stub import Stub
from rewardkit_judge.checklist import ChecklistError, criteria_of, read_verdicts

from rewardkit import RewardSet
from rewardkit.config import ConfigError

pytest.importorskip("httpx")

CRITERIA = [{"criterion": "says Paris", "weight": 2}, "says France",
            {"criterion": "says Lyon", "weight": -2}]


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub("--mute", "no idea")
    yield server
    server.close()


def judge(base_url: str, **params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"judge": {"reward": "llm_judge", "params": {
        "base_url": base_url, "model": "stub", "checklist": "criteria", "retries": 0,
        "request_timeout": 10, **params}}}})


def scores(rs: RewardSet, *rows: dict[str, Any]) -> list[Any]:
    return rs.score([{"prompt": "Capital of France?", **r} for r in rows]).scores("judge")


def test_the_value_is_the_weight_met_over_the_positive_weight(stub: Stub) -> None:
    got = scores(judge(stub.base_url),
                 {"completion": "Paris, in France.", "criteria": CRITERIA},
                 {"completion": "Paris or Lyon.", "criteria": CRITERIA},
                 {"completion": "Somewhere in France.", "criteria": CRITERIA},
                 {"completion": "Lyon.", "criteria": CRITERIA})
    assert [s.value for s in got] == pytest.approx([1.0, 0.0, 1 / 3, 0.0])
    assert got[1].details["verdicts"] == [
        {"criterion": "says Paris", "weight": 2.0, "met": True},
        {"criterion": "says France", "weight": 1.0, "met": False},
        {"criterion": "says Lyon", "weight": -2.0, "met": True}]


def test_each_row_is_judged_against_its_own_criteria(stub: Stub) -> None:
    got = scores(judge(stub.base_url),
                 {"completion": "Paris", "criteria": ["says Paris"]},
                 {"completion": "Paris", "criteria": ["says Rome", "says Paris"]})
    assert [s.value for s in got] == [1.0, 0.5]


def test_a_row_without_usable_criteria_is_an_error_and_costs_no_request(stub: Stub) -> None:
    got = scores(judge(stub.base_url), {"completion": "Paris"},
                 {"completion": "Paris", "criteria": [{"criterion": "says Paris",
                                                       "weight": "high"}]},
                 {"completion": "Paris", "criteria": [{"criterion": "says Lyon",
                                                       "weight": -1}]})
    assert [str(s.status) for s in got] == ["error"] * 3
    assert "no 'criteria' column" in got[0].reason
    assert "weight must be a finite number" in got[1].reason
    assert "no criterion of positive weight" in got[2].reason
    assert stub.requests_answered() == 0


def test_an_answer_without_every_verdict_is_an_error_not_a_partial_score(stub: Stub) -> None:
    (got,) = scores(judge(stub.base_url), {"completion": "no idea", "criteria": CRITERIA})
    assert str(got.status) == "error" and "one line per criterion" in got.reason


def test_the_judge_sees_the_numbered_criteria_and_pitfalls() -> None:
    from judge_support import reward_of

    from rewardkit import Sample

    reward = reward_of("llm_judge", {"model": "m", "checklist": "criteria"})
    message = reward.messages(Sample(prompt="q", completion="Paris",
                                     metadata={"criteria": CRITERIA}))[-1]["content"]
    assert "1. says Paris\n2. says France\n3. (pitfall) says Lyon" in message
    assert "End your reply with 3 lines" in message


@pytest.mark.parametrize(("answer", "says"), [
    ("1: yes\n2: no", "one line per criterion"),
    ("2: no\n1: yes\n3: no", "one line per criterion"),
    ("**1: no**\n1: yes\n2: no\n3: no", "two verdicts for criterion 1"),
    ("1: no\n1: yes\n2: no\n3: no", "two verdicts for criterion 1"),
    ("1: yes\n2: no\n3: no\nDone.", "one line per criterion"),
])
def test_verdict_lines_must_end_the_answer_in_order_once_each(answer: str, says: str) -> None:
    with pytest.raises(ChecklistError, match=says):
        read_verdicts(answer, criteria_of({"c": CRITERIA}, "c"))


def test_markdown_around_verdict_lines_is_read() -> None:
    assert read_verdicts("Checked; 1: no was my first guess.\n**1: yes**\n2. No\n`3: no`",
                         criteria_of({"c": CRITERIA}, "c")) == [True, False, False]


@pytest.mark.parametrize(("params", "says"), [
    ({}, "rubric is required"),
    ({"checklist": "criteria", "verdict": "json"}, "use verdict: line"),
])
def test_bad_checklist_params_fail_when_the_config_loads(params: dict[str, Any],
                                                         says: str) -> None:
    with pytest.raises(ConfigError) as err:
        RewardSet.from_dict({"rewards": {"judge": {"reward": "llm_judge", "params": {
            "base_url": "http://127.0.0.1:9/v1", "model": "m", **params}}}})
    assert says in err.value.render()
