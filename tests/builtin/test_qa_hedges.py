"""qa_match's hedge rules on long hostile outputs: bounded time, and still no pay."""

from __future__ import annotations

import time

import pytest

from rewardkit import Sample, get_reward


@pytest.mark.parametrize("text", ["Answer: Lyon\nAnswer: Paris\n" * 25_000,
                                  "answer " * 50_000, "Paris | " * 50_000,
                                  "Paris or Lyon " * 50_000,
                                  "Answer: Paris (Lyon?" + "?" * 200_000 + ")",
                                  "The answer is Lyon.\n" * 30_000 + "Answer: Paris"])
def test_long_hedges_are_read_in_bounded_time_and_not_paid(text: str) -> None:
    reward = get_reward("qa_match")({"metric": "f1", "max_extra_tokens": None})
    # CPU seconds of this process, not wall time: a quadratic scan of these takes many
    # seconds of CPU, a linear one a tenth, whatever else the machine runs (the wall
    # clock was 2 s at load 16 on 2 cores for 0.1 s of CPU)
    start = time.process_time()
    score = reward.score(Sample(completion=text, reference=["Paris"]))
    assert time.process_time() - start < 1.0
    assert score.value == 0.0, score.reason


def test_an_acceptable_answer_with_the_hedge_mark_is_paid() -> None:
    reward = get_reward("qa_match")()
    for gold in ("Perhaps Love", "Neither Here nor There", "Who Framed Roger Rabbit?",
                 "Sink | Float"):
        assert reward.score(Sample(completion=f"Answer: {gold}", reference=[gold])).value == 1.0
