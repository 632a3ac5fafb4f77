"""Reward.warm: called once in a process-mode worker when it loads the reward, before the
first item's clock starts; never in the trainer's process (inline). A warm that raises
is the reward failing to load: every row an error naming it."""

from __future__ import annotations

import os
from typing import ClassVar

import pytest

from rewardkit import Reward, RewardSet, Sample, Score, registry
from rewardkit.execution.pool import shared_pool
from rewardkit.types import ExecutionMode


class WarmedInItsWorker(Reward):
    """Says in which processes warm ran before this score."""

    name: ClassVar[str] = "warmed_in_its_worker"
    mode: ClassVar[ExecutionMode] = ExecutionMode.PROCESS
    timeout: ClassVar[float | None] = 30.0
    warmed: ClassVar[list[int]] = []

    def warm(self) -> None:
        type(self).warmed.append(os.getpid())

    def score(self, sample: Sample) -> Score:
        return Score.ok(1.0, warmed=list(type(self).warmed), pid=os.getpid())


class WarmRaises(Reward):
    name: ClassVar[str] = "warm_raises"
    mode: ClassVar[ExecutionMode] = ExecutionMode.PROCESS
    timeout: ClassVar[float | None] = 30.0

    def warm(self) -> None:
        raise RuntimeError("the checkers could not be prepared")

    def score(self, sample: Sample) -> float:
        return 1.0


@pytest.fixture()
def rewards():
    for cls in (WarmedInItsWorker, WarmRaises):
        registry.register(cls, "tests")
    yield
    for cls in (WarmedInItsWorker, WarmRaises):
        registry.unregister(cls.name)
    shared_pool(1).close()


def _score(name: str, mode: str, n: int = 40) -> list[Score]:
    rs = RewardSet.from_dict({"workers": 1, "rewards": {"r": {"reward": name, "mode": mode}}})
    return rs.score([Sample(completion=f"row {i}") for i in range(n)]).scores("r")


def test_warm_runs_once_in_the_worker_before_its_first_item_and_never_inline(rewards):
    shared_pool(1).close()  # a fresh worker
    scores = _score("warmed_in_its_worker", "process")
    (pid,) = {s.details["pid"] for s in scores}
    assert pid != os.getpid()
    # every row, the first included, saw one warm, in its own worker
    assert all(s.details["warmed"] == [pid] for s in scores)
    assert WarmedInItsWorker.warmed == []  # not in this process
    inline = _score("warmed_in_its_worker", "inline", n=3)
    assert all(s.details["warmed"] == [] for s in inline)


def test_a_warm_that_raises_is_a_load_error_for_every_row(rewards):
    scores = _score("warm_raises", "process", n=5)
    assert all(str(s.status) == "error" for s in scores)
    assert all("the checkers could not be prepared" in (s.reason or "") for s in scores), \
        scores[0]
