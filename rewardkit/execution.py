"""Running one reward over many samples, by execution mode, with faults contained.

Every function here returns one :class:`Score` per requested index and never raises
because of the reward: exceptions, NaN, wrong types, wrong counts, hangs (process and
async modes) and dead processes become ``error`` / ``timeout`` scores.
"""

from __future__ import annotations

import asyncio
import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rewardkit.authoring import FunctionReward, Reward
from rewardkit.process_pool import pickle_reward, shared_pool
from rewardkit.types import ExecutionMode, Sample, Score, coerce_value

_INF = math.inf
#: inline rewards are timed per chunk of this many samples (timing each call would cost
#: more than many rewards do)
INLINE_CHUNK = 1024
DEFAULT_TIMEOUT = 30.0


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


def exception_score(exc: BaseException) -> Score:
    text = f"{type(exc).__name__}: {exc}"
    return Score.error(text if len(text) <= 500 else text[:497] + "...",
                       exception=type(exc).__name__)


def run_inline(reward: Reward, samples: Sequence[Sample], indices: Sequence[int] | None,
               out: Outcome) -> None:
    """Per-sample reward in the calling thread; the fast path is a plain list comprehension."""
    fn: Callable[[Sample], Any] = (
        reward.bound() if isinstance(reward, FunctionReward) else reward.score
    )
    chosen = samples if indices is None else [samples[i] for i in indices]
    values = out.values
    perf = time.perf_counter
    out.latency_per_sample = False
    for start in range(0, len(chosen), INLINE_CHUNK):
        chunk = chosen[start : start + INLINE_CHUNK]
        t0 = perf()
        try:
            got = [fn(s) for s in chunk]
        except Exception:
            got = [_safe_call(fn, s) for s in chunk]
        elapsed = perf() - t0
        out.latencies.append(elapsed / max(1, len(chunk)))
        if indices is None and _all_finite_floats(got):
            values[start : start + len(got)] = got
            continue
        for j, v in enumerate(got):
            idx = start + j if indices is None else indices[start + j]
            if type(v) is float and -_INF < v < _INF:
                values[idx] = v
            else:
                out.put(idx, v if isinstance(v, _Failure) else coerce_value(v))


def _all_finite_floats(got: list[Any]) -> bool:
    """True when every item is a finite float (C-speed checks: the common case)."""
    if set(map(type, got)) - {float}:
        return False
    return math.isfinite(sum(got))  # NaN and inf propagate; a finite overflow only errs safe


class _Failure(Score):
    """A Score standing for an exception raised by the reward (already final)."""

    __slots__ = ()


def _safe_call(fn: Callable[[Sample], Any], sample: Sample) -> Any:
    try:
        return fn(sample)
    except Exception as exc:
        err = exception_score(exc)
        return _Failure(err.value, err.status, err.reason, err.details)


def run_inline_groups(reward: Reward, samples: Sequence[Sample],
                      groups: Sequence[Sequence[int]], out: Outcome) -> None:
    for members in groups:
        t0 = time.perf_counter()
        try:
            got = reward.score_group([samples[i] for i in members])
            scores = _group_scores(got, len(members))
        except Exception as exc:
            scores = [exception_score(exc)] * len(members)
        out.latencies.append((time.perf_counter() - t0) / max(1, len(members)))
        for idx, score in zip(members, scores, strict=True):
            out.put(idx, score)


def _group_scores(got: Any, n: int) -> list[Score]:
    if isinstance(got, str | bytes) or not hasattr(got, "__len__"):
        return [Score.error(f"group reward returned {type(got).__name__}, expected a list")] * n
    values = list(got)
    if len(values) != n:
        return [Score.error(f"group reward returned {len(values)} values for {n} samples")] * n
    return [coerce_value(v) for v in values]


def run_process(reward: Reward, samples: Sequence[Sample], indices: Sequence[int] | None,
                groups: Sequence[Sequence[int]] | None, timeout: float, out: Outcome,
                workers: int | None = None) -> None:
    """Per-sample or per-group reward in the worker pool with a hard timeout."""
    try:
        blob = pickle_reward(reward)
    except Exception as exc:
        failure = Score.error(f"reward cannot be sent to a worker process: {exc}")
        for idx in _all_indices(samples, indices, groups):
            out.put(idx, failure)
        return
    key = f"{id(type(reward))}:{hash(blob)}"
    pool = shared_pool(workers)
    if groups is None:
        chosen = range(len(samples)) if indices is None else indices
        items: list[tuple[int, Any]] = [(i, samples[i]) for i in chosen]
        answers = pool.run(key, blob, False, items, timeout)
        for idx, (score, seconds) in sorted(answers.items()):
            assert isinstance(score, Score)
            out.put(idx, score)
            out.latencies.append(seconds)
            out.sample_seconds[idx] = seconds
        return
    group_items = [(g, [samples[i] for i in members]) for g, members in enumerate(groups)]
    answers = pool.run(key, blob, True, group_items, timeout)
    for g, (got, seconds) in sorted(answers.items()):
        members = groups[g]
        scores = got if isinstance(got, list) else [got] * len(members)
        for idx, score in zip(members, scores, strict=True):
            out.put(idx, score)
        out.latencies.append(seconds / max(1, len(members)))


def _all_indices(samples: Sequence[Sample], indices: Sequence[int] | None,
                 groups: Sequence[Sequence[int]] | None) -> list[int]:
    if groups is not None:
        return [i for members in groups for i in members]
    return list(range(len(samples)) if indices is None else indices)


# -- async ---------------------------------------------------------------------------
class _LoopThread:
    """One event loop in a daemon thread, shared by all async rewards, so scoring works
    from synchronous code and from inside another running loop alike."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="rewardkit-async",
                                 daemon=True).start()
                self._loop = loop
            return self._loop


_loop_thread = _LoopThread()
ASYNC_CONCURRENCY = 64


def run_async(reward: Reward, samples: Sequence[Sample], indices: Sequence[int] | None,
              groups: Sequence[Sequence[int]] | None, timeout: float, out: Outcome) -> None:
    """Async reward: all samples (or groups) concurrently, each with ``timeout``."""

    async def one(call: Callable[[], Any]) -> tuple[Any, float]:
        t0 = time.perf_counter()
        try:
            result = call()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                result = await asyncio.wait_for(result, timeout)
            return result, time.perf_counter() - t0
        except TimeoutError:
            return Score.timeout(f"exceeded {timeout:g}s timeout"), time.perf_counter() - t0
        except Exception as exc:
            return _Failure(*_tuple(exception_score(exc))), time.perf_counter() - t0

    async def main() -> list[tuple[Any, float]]:
        gate = asyncio.Semaphore(ASYNC_CONCURRENCY)

        async def gated(call: Callable[[], Any]) -> tuple[Any, float]:
            async with gate:
                return await one(call)

        calls: list[Callable[[], Any]]
        if groups is None:
            calls = [functools.partial(reward.score, samples[i]) for i in chosen]
        else:
            calls = [functools.partial(reward.score_group, [samples[i] for i in members])
                     for members in groups]
        return await asyncio.gather(*(gated(c) for c in calls))

    chosen = list(range(len(samples)) if indices is None else indices)
    future = asyncio.run_coroutine_threadsafe(main(), _loop_thread.loop())
    results = future.result()
    if groups is None:
        for idx, (value, seconds) in zip(chosen, results, strict=True):
            out.put(idx, value if isinstance(value, Score) and value.status != "ok"
                    else coerce_value(value))
            out.latencies.append(seconds)
        return
    for members, (value, seconds) in zip(groups, results, strict=True):
        if isinstance(value, Score) and value.status != "ok":
            scores = [value] * len(members)
        else:
            scores = _group_scores(value, len(members))
        for idx, score in zip(members, scores, strict=True):
            out.put(idx, score)
        out.latencies.append(seconds / max(1, len(members)))


def _tuple(score: Score) -> tuple[Any, ...]:
    return (score.value, score.status, score.reason, score.details)


def run_reward(reward: Reward, mode: ExecutionMode, samples: Sequence[Sample],
               indices: Sequence[int] | None, groups: Sequence[Sequence[int]] | None,
               timeout: float | None, out: Outcome, workers: int | None = None) -> None:
    """Score ``samples`` (those at ``indices``, or the ``groups`` for a group reward) with
    ``reward`` in ``mode``, writing into ``out``."""
    limit = timeout or reward.timeout or DEFAULT_TIMEOUT
    if mode is ExecutionMode.PROCESS:
        run_process(reward, samples, indices, groups, limit, out, workers)
    elif mode is ExecutionMode.ASYNC:
        run_async(reward, samples, indices, groups, limit, out)
    elif groups is not None:
        run_inline_groups(reward, samples, groups, out)
    else:
        run_inline(reward, samples, indices, out)
