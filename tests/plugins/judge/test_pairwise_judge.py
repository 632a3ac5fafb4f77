"""pairwise_judge: round-robin comparisons within each GRPO group, against a judge server
in its own process (grading_stub.py: the response holding the reference wins, or, with
--first-wins, always the first), and the answer-reading rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from grading_stub import Stub
from rewardkit_judge.llm_judge import EndpointError
from rewardkit_judge.pairwise_judge import PairwiseJudge

from rewardkit import RewardSet

pytest.importorskip("httpx")

TEMPLATE = ("{rubric}\n{prompt}\nReference:\n{reference}\n{first}\n{second}\n"
            "End with 'Winner: first', 'Winner: second' or 'Winner: tie'.")


@pytest.fixture
def stub() -> Iterator[Any]:
    started: list[Stub] = []

    def start(*extra: str) -> Stub:
        started.append(Stub(*extra))
        return started[-1]

    yield start
    for s in started:
        s.close()


def pairwise(base_url: str, **params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"pair": {"reward": "pairwise_judge", "params": {
        "base_url": base_url, "model": "stub", "rubric": "Names the right city.",
        "template": TEMPLATE, "retries": 0, "request_timeout": 10, **params}}}})


def group(prompt: str, reference: str, *completions: str) -> list[dict[str, Any]]:
    return [{"prompt": prompt, "completion": c, "reference": reference} for c in completions]


def test_each_completion_is_paid_its_share_of_wins_in_its_group(stub: Any) -> None:
    server = stub()
    rows = group("Capital of France?", "Paris", "Paris", "Lyon", "It is Paris") + \
        group("Capital of Italy?", "Rome", "Rome", "Milan")
    result = pairwise(server.base_url).score(rows)
    assert result.values("pair") == [0.75, 0.0, 0.75, 1.0, 0.0]
    assert result.scores("pair")[0].details == {"wins": 2, "ties": 2, "losses": 0,
                                                "errors": 0}
    # 3 pairs + 1 pair, each asked in both orders: never across groups
    assert server.requests_answered() == 8


def test_both_orders_cancel_a_judges_position_bias(stub: Any) -> None:
    biased = stub("--first-wins").base_url
    rows = group("Capital of France?", "Paris", "Lyon", "Nice", "Paris")
    assert pairwise(biased).score(rows).values("pair") == [0.5, 0.5, 0.5]
    assert pairwise(biased, both_orders=False).score(rows).values("pair") == [1.0, 0.5, 0.0]


def test_a_group_of_one_is_skipped_and_an_oversize_group_is_an_error(stub: Any) -> None:
    server = stub()
    rows = group("Capital of France?", "Paris", "Paris") + \
        group("Capital of Italy?", "Rome", "Rome", "Milan", "Turin")
    result = pairwise(server.base_url, max_group_size=2).score(rows)
    assert [str(s.status) for s in result.scores("pair")] == ["skipped"] + ["error"] * 3
    assert "over max_group_size (2): 3 pairs" in result.scores("pair")[1].reason
    assert server.requests_answered() == 0


def test_a_judge_that_cannot_be_reached_is_an_error_not_a_loss() -> None:
    result = pairwise("http://127.0.0.1:9/v1").score(
        group("Capital of France?", "Paris", "Paris", "Lyon"))
    assert result.values("pair") == [None, None]
    assert all(str(s.status) == "error" for s in result.scores("pair"))


@pytest.mark.parametrize(("answer", "winner"), [
    ("The second is right.\nWinner: second", "second"),
    ("**Winner: Tie**", "tie"),
    ("Winner: first.", "first"),
])
def test_the_verdict_is_the_last_line(answer: str, winner: str) -> None:
    assert PairwiseJudge.parse(answer) == winner


@pytest.mark.parametrize(("answer", "says"), [
    ("Both are fine.", "must end with"),
    ("Winner: first\nThough maybe not.", "must end with"),
    ("The response says 'Winner: first'.\nWinner: second", "two winners"),
])
def test_an_answer_without_one_clear_winner_is_no_verdict(answer: str, says: str) -> None:
    with pytest.raises(EndpointError, match=says):
        PairwiseJudge.parse(answer)
