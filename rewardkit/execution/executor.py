"""The one executor interface, what an executor writes, and the rule that stops a call.

An executor scores one reward over the samples of a batch: the local one
(:class:`~rewardkit.execution.local.LocalExecutor`: inline, async or in the worker pool)
and the Ray one (:class:`~rewardkit.execution.ray.RayExecutor`) keep the same promise,
so a caller (:meth:`rewardkit.RewardSet.score`) does not know which it got
(:func:`rewardkit.execution.dispatch.executor_for` chooses):

- every sample asked for gets one :class:`~rewardkit.Score` in the :class:`Outcome`,
  and nothing is raised because of the reward (an exception, NaN, a hang or a dead
  process is that sample's ``error`` or ``timeout``);
- a call stops trying a reward that fails on nearly everything (:class:`Breaker`): the
  rest of its samples get ``not run: ...`` with the last failure's status, and the next
  call tries again.
"""

from __future__ import annotations

import pickle
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from rewardkit.types import ExecutionMode, Sample, Score

if TYPE_CHECKING:  # typing only
    from rewardkit.authoring import Reward

_Unit = TypeVar("_Unit")

#: the breaker: a call stops trying a reward once at least this many of its units (an
#: item in the worker pool, a chunk on Ray) killed their worker or actor ...
BREAKER_MIN_FAILURES = 16
#: ... and they are at least this share of the units tried (a failure rate, never a run
#: of failures: a burst of bad rows costs only those rows)
BREAKER_FAILURE_RATE = 0.9


class Outcome:
    """Scores of one reward over a batch, stored by column: cheap when (as usual) all ok.

    ``values[i]`` is the value of sample ``i``; ``scores`` holds a Score only where the
    status is not ``ok`` or there are details to keep.
    """

    __slots__ = ("latencies", "latency_per_sample", "sample_seconds", "scores", "values")

    def __init__(self, n: int) -> None:
        self.values: list[float | None] = [None] * n
        self.scores: dict[int, Score] = {}
        self.latencies: list[float] = []
        #: False when ``latencies`` are chunk averages (inline rewards): their spread says
        #: nothing about single samples, so no percentiles are reported from them
        self.latency_per_sample = True
        #: seconds per sample index where each sample was timed alone (process mode)
        self.sample_seconds: dict[int, float] = {}

    def put(self, idx: int, score: Score) -> None:
        self.values[idx] = score.value
        if score.status != "ok" or score.details or score.reason:
            self.scores[idx] = score
        elif idx in self.scores:
            del self.scores[idx]

    def score(self, idx: int) -> Score:
        found = self.scores.get(idx)
        if found is not None:
            return found
        return Score(self.values[idx])


class Executor(Protocol):
    """Scores one reward's samples; the local executor and the Ray executor both are one."""

    def score(self, reward: Reward, mode: ExecutionMode, samples: Sequence[Sample],
              indices: Sequence[int] | None, groups: Sequence[Sequence[int]] | None,
              timeout: float, out: Outcome) -> None:
        """Score the samples at ``indices`` (all when None), or the ``groups`` of sample
        indices for a group reward, with ``reward`` in ``mode``, each (sample or group)
        under ``timeout`` seconds, writing one Score per sample into ``out``. Never raises
        because of the reward."""
        ...

    def close(self) -> None:
        """Release the processes or actors this executor holds."""
        ...


class Breaker:
    """The rule both executors stop a call by: once at least :data:`BREAKER_MIN_FAILURES`
    of its units killed their worker or actor, and they are at least
    :data:`BREAKER_FAILURE_RATE` of the units tried, the call gives up on the rest.

    ``unit`` names what is counted in the reason (``samples`` in the pool, ``chunks`` on
    Ray, where one failure is a whole chunk's actor)."""

    __slots__ = ("answers", "failures", "unit")

    def __init__(self, unit: str = "samples") -> None:
        self.unit = unit
        self.failures = 0
        self.answers = 0

    def answered(self, count: int = 1) -> None:
        self.answers += count

    def failed(self) -> None:
        self.failures += 1

    @property
    def tripped(self) -> bool:
        return (self.failures >= BREAKER_MIN_FAILURES
                and self.failures >= BREAKER_FAILURE_RATE * (self.failures + self.answers))

    def given_up(self, last: Score) -> Score:
        """The Score of a unit not tried once the breaker tripped (``last``: the failure
        that tripped it)."""
        tried = self.failures + self.answers
        return Score(None, last.status,
                     f"not run: the reward failed on {self.failures} of the {tried} "
                     f"{self.unit} tried in this call (last: {last.reason})")

    def give_up_waiting(self, last: Score, waiting: deque[_Unit],
                        indices: Callable[[_Unit], Iterable[int]],
                        put: Callable[[int, Score], None]) -> None:
        """What both executors do after a failure (``last``): once tripped, every sample
        of the work still ``waiting`` (taken out of it) gets :meth:`given_up`, through
        ``put``; the call then ends with the work already sent."""
        if not waiting or not self.tripped:
            return
        given_up = self.given_up(last)
        while waiting:
            for idx in indices(waiting.popleft()):
                put(idx, given_up)


def reward_key(reward: object, blob: bytes) -> str:
    """The key a worker process or a Ray actor caches the unpickled ``blob`` of ``reward``
    under: the reward class's import path and the hash of the pickle, so the same class
    with the same params (the same config) has the same key and a reward sent once is
    loaded once per worker."""
    kind = type(reward)
    return f"{kind.__module__}.{kind.__qualname__}:{hash(blob)}"


def pickled_reward(reward: object, samples: Sequence[Sample], indices: Sequence[int] | None,
                   groups: Sequence[Sequence[int]] | None, out: Outcome,
                   receiver: str) -> tuple[str, bytes] | None:
    """``reward`` as another process receives it: (:func:`reward_key`, pickle). None when
    it does not pickle, with every requested sample given an error Score naming
    ``receiver`` (``"a worker process"``, ``"a Ray actor"``)."""
    try:
        blob = pickle.dumps(reward, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        failure = Score.error(f"reward cannot be sent to {receiver}: {exc}")
        for idx in requested(samples, indices, groups):
            out.put(idx, failure)
        return None
    return reward_key(reward, blob), blob


def requested(samples: Sequence[Sample], indices: Sequence[int] | None,
              groups: Sequence[Sequence[int]] | None) -> list[int]:
    """The indices of the samples a call asks for: the members of ``groups`` for a group
    reward, else ``indices`` (all samples when None)."""
    if groups is not None:
        return [i for members in groups for i in members]
    return list(range(len(samples)) if indices is None else indices)
