"""Running one reward over many samples in this process, by execution mode, with faults
contained: inline (in the calling thread), async (on one shared event loop) or process
(in the worker pool, :mod:`rewardkit.execution.pool`).

Every function here writes one :class:`Score` per requested index and never raises
because of the reward: exceptions (:func:`exception_score`), NaN, wrong types and wrong
counts (:func:`rewardkit.types.coerce_value`, :func:`group_scores`), hangs (process and
async modes) and dead processes become ``error`` / ``timeout`` scores.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import itertools
import operator
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from rewardkit.authoring import FunctionReward, Reward
from rewardkit.execution.executor import Outcome, pickled_reward
from rewardkit.execution.pool import shared_pool
from rewardkit.execution.timeouts import resolve_timeout
from rewardkit.types import MAX_ABS_VALUE, ExecutionMode, Sample, Score, coerce_value

_MAX = MAX_ABS_VALUE
#: inline rewards are timed per chunk of this many samples (timing each call would cost
#: more than many rewards do)
INLINE_CHUNK = 1024


#: raised by a reward, these are that sample's error, like any exception (a reward that
#: calls ``sys.exit`` must not end the run). ``KeyboardInterrupt`` is not among them in
#: the calling thread: there it is the user's Ctrl-C.
_REWARD_EXITS = (Exception, SystemExit, GeneratorExit, asyncio.CancelledError)


def exception_score(exc: BaseException) -> Score:
    text = f"{type(exc).__name__}: {exc}"
    return Score.error(text if len(text) <= 500 else text[:497] + "...",
                       exception=type(exc).__name__)


def execute_inline(reward: Reward, samples: Sequence[Sample], indices: Sequence[int] | None,
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
        except _REWARD_EXITS:
            got = [_safe_call(fn, s) for s in chunk]
        elapsed = perf() - t0
        out.latencies.append(elapsed / max(1, len(chunk)))
        if indices is None and _all_bounded_floats(got):
            values[start : start + len(got)] = got
            continue
        for j, v in enumerate(got):
            idx = start + j if indices is None else indices[start + j]
            if type(v) is float and -_MAX <= v <= _MAX:
                values[idx] = v
            else:
                out.put(idx, v if isinstance(v, _Failure) else coerce_value(v))


def _all_bounded_floats(got: list[Any]) -> bool:
    """True when every item is a float within +-MAX_ABS_VALUE (C-speed checks: the
    common case)."""
    if operator.countOf(map(type, got), float) != len(got):
        return False
    # a sum of magnitudes within the bound bounds each one; NaN and inf fail the test (a
    # chunk of huge but valid values takes the per-item path, which admits them)
    return sum(map(abs, got)) <= _MAX


class _Failure(Score):
    """A Score standing for an exception raised by the reward (already final)."""

    __slots__ = ()


def _safe_call(fn: Callable[[Sample], Any], sample: Sample) -> Any:
    try:
        return fn(sample)
    except _REWARD_EXITS as exc:
        err = exception_score(exc)
        return _Failure(err.value, err.status, err.reason, err.details)


def execute_inline_groups(reward: Reward, samples: Sequence[Sample],
                          groups: Sequence[Sequence[int]], out: Outcome) -> None:
    for members in groups:
        t0 = time.perf_counter()
        try:
            got = reward.score_group([samples[i] for i in members])
            scores = group_scores(got, len(members))
        except _REWARD_EXITS as exc:
            scores = [exception_score(exc)] * len(members)
        out.latencies.append((time.perf_counter() - t0) / max(1, len(members)))
        for idx, score in zip(members, scores, strict=True):
            out.put(idx, score)


def group_scores(got: Any, n: int) -> list[Score]:
    """What a group reward returned for ``n`` samples, as ``n`` Scores: anything but a
    list of ``n`` values is an error Score for each sample. Used wherever a group reward
    runs (inline, async, in a worker process)."""
    if isinstance(got, str | bytes) or not hasattr(got, "__len__"):
        return [Score.error(f"group reward returned {type(got).__name__}, expected a list")] * n
    values = list(got)
    if len(values) != n:
        return [Score.error(f"group reward returned {len(values)} values for {n} samples")] * n
    return [coerce_value(v) for v in values]


def execute_quick(reward: Reward, samples: Sequence[Sample], indices: Sequence[int] | None,
                  out: Outcome) -> list[int]:
    """The verdicts a process-mode reward reaches in this process (its ``quick_score``);
    returns the indices still to be sent to a worker. A quick check that raises or returns
    something else than a Score leaves the sample to the worker."""
    chosen = range(len(samples)) if indices is None else indices
    quick = reward.quick_score
    rest: list[int] = []
    start = time.perf_counter()
    decided = 0
    for idx in chosen:
        try:
            got = quick(samples[idx])
        except Exception:  # the worker reports the failure properly
            got = None
        if isinstance(got, Score):
            out.put(idx, got)
            decided += 1
        else:
            rest.append(idx)
    if decided:
        out.latencies.append((time.perf_counter() - start) / len(chosen))
    return rest


def execute_in_workers(reward: Reward, samples: Sequence[Sample], indices: Sequence[int] | None,
                       groups: Sequence[Sequence[int]] | None, timeout: float, out: Outcome,
                       workers: int | None = None) -> None:
    """Per-sample or per-group reward in the worker pool with a hard timeout."""
    sent = pickled_reward(reward, samples, indices, groups, out, "a worker process")
    if sent is None:
        return
    key, blob = sent
    pool = shared_pool(workers)
    if groups is None:
        chosen = range(len(samples)) if indices is None else indices
        answers = pool.execute(key, blob, False, [samples[i] for i in chosen], timeout)
        values, seconds, rich = out.values, answers.seconds, answers.scores
        # a value is an ok float without reason or details unless its Score is in
        # ``rich`` (the pool's answers already keep Outcome's split)
        if indices is None:
            values[:] = answers.values
            out.scores.update(cast(dict[int, Score], rich))
        else:
            for pos, value in enumerate(answers.values):
                values[chosen[pos]] = value
            for pos, got in rich.items():
                out.scores[chosen[pos]] = cast(Score, got)
        out.latencies.extend(seconds)
        out.sample_seconds.update(zip(chosen, seconds, strict=True))
        return
    answers = pool.execute(key, blob, True, [[samples[i] for i in members] for members in groups],
                           timeout)
    for g, members in enumerate(groups):
        got = answers.scores.get(g) or Score.error("no answer from the worker pool")
        scores = got if isinstance(got, list) else [got] * len(members)
        for idx, score in zip(members, scores, strict=True):
            out.put(idx, score)
        out.latencies.append(answers.seconds[g] / max(1, len(members)))


# -- async ---------------------------------------------------------------------------
#: the event loop's heartbeat period (seconds); a loop whose heartbeat is late by more
#: than a call's timeout is taken as blocked by the coroutine it is running
HEARTBEAT = 0.05


class _LoopState:
    """An event loop in its daemon thread, with its last heartbeat."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.beat = time.monotonic()
        self.loop.call_soon(self._tick)
        threading.Thread(target=self._serve, name="rewardkit-async", daemon=True).start()

    def _tick(self) -> None:
        self.beat = time.monotonic()
        self.loop.call_later(HEARTBEAT, self._tick)

    def _serve(self) -> None:
        try:
            self.loop.run_forever()
            # abandoned: end what is left of its coroutines quietly before closing
            left = asyncio.all_tasks(self.loop)
            for task in left:
                task.cancel()
            if left:
                self.loop.run_until_complete(asyncio.wait(left, timeout=1.0))
        finally:
            self.loop.close()


class _LoopThread:
    """One event loop in a daemon thread, shared by all async rewards, so scoring works
    from synchronous code and from inside another running loop alike. A loop blocked by
    a coroutine (blocking code in ``async def``) is abandoned: later work goes to a new
    loop, and the old one stops once the blocking call returns."""

    def __init__(self) -> None:
        self._state: _LoopState | None = None
        self._lock = threading.Lock()

    def current(self) -> _LoopState:
        with self._lock:
            if self._state is None:
                self._state = _LoopState()
            return self._state

    def loop(self) -> asyncio.AbstractEventLoop:
        return self.current().loop

    def abandon(self, state: _LoopState) -> None:
        with self._lock:
            if self._state is state:
                self._state = None
        with contextlib.suppress(RuntimeError):
            state.loop.call_soon_threadsafe(state.loop.stop)


_loop_thread = _LoopThread()
ASYNC_CONCURRENCY = 64
_async_calls = itertools.count(1)


def execute_async(reward: Reward, samples: Sequence[Sample], indices: Sequence[int] | None,
                  groups: Sequence[Sequence[int]] | None, timeout: float, out: Outcome) -> None:
    """Async reward: all samples (or groups) concurrently, each with ``timeout``.

    A coroutine that blocks the event loop (``time.sleep`` or CPU work inside ``async
    def``) past ``timeout`` gets ``timeout``; the others of the batch still in flight
    are run again on a fresh loop.
    """
    chosen = list(range(len(samples)) if indices is None else indices)
    calls: list[Callable[[], Any]]
    if groups is None:
        calls = [functools.partial(reward.score, samples[i]) for i in chosen]
    else:
        calls = [functools.partial(reward.score_group, [samples[i] for i in members])
                 for members in groups]
    results = _execute_on_loop(calls, timeout)
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
            scores = group_scores(value, len(members))
        for idx, score in zip(members, scores, strict=True):
            out.put(idx, score)
        out.latencies.append(seconds / max(1, len(members)))


async def _contained(coro: Any, name: str) -> Any:
    """Await a reward's coroutine; ``SystemExit`` and the like become its error instead of
    escaping the event loop (a task re-raises them out of ``run_forever``). The task
    ``wait_for`` runs it in takes ``name``, so a watchdog can tell whose it is."""
    task = asyncio.current_task()
    if task is not None:
        task.set_name(name)
    try:
        return await coro
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        return _Failure(*_tuple(exception_score(exc)))


def _execute_on_loop(calls: Sequence[Callable[[], Any]], timeout: float) -> list[tuple[Any, float]]:
    """Each call's result (or its timeout / error Score) and its seconds."""
    return _LoopCalls(calls, timeout).execute()


class _LoopCalls:
    """One batch of calls on the shared event loop, each under ``timeout``. A call that
    blocks the loop past the timeout gets ``timeout``; the loop is abandoned and the calls
    still pending run again, on a fresh loop (at most three rounds in a row in which no
    call of ours is found blocking it)."""

    def __init__(self, calls: Sequence[Callable[[], Any]], timeout: float) -> None:
        self.calls = calls
        self.timeout = timeout
        #: the prefix of the names of this batch's tasks: a watchdog tells whose task
        #: blocks the loop by it
        self.token = f"rewardkit-{next(_async_calls)}-"
        self.results: list[tuple[Any, float]] = [(None, 0.0)] * len(calls)
        self.pending = set(range(len(calls)))

    def execute(self) -> list[tuple[Any, float]]:
        rounds = 0
        while self.pending:
            rounds += 1
            if rounds > 3:  # blocked each time by something that is not ours to blame
                self._time_out_pending("event loop blocked", 0.0)
                break
            if self._round(_loop_thread.current()):
                rounds = 0
        return self.results

    def _round(self, state: _LoopState) -> bool:
        """Run the pending calls on ``state``'s loop until they are done or the loop is
        blocked past the timeout (then abandoned); True when the call that blocked it was
        found (and got ``timeout``)."""
        finished: dict[int, tuple[Any, float]] = {}
        future = asyncio.run_coroutine_threadsafe(self._gather(sorted(self.pending), finished),
                                                  state.loop)
        while True:
            try:
                future.result(timeout=HEARTBEAT * 4)
                done = True
            except concurrent.futures.TimeoutError:
                done = False
            for pos in list(finished):
                answer = finished.pop(pos)
                if pos in self.pending:  # not one already given up on in an earlier round
                    self.results[pos] = answer
                    self.pending.discard(pos)
            if done or not self.pending:
                return False
            blocked_for = time.monotonic() - state.beat
            if blocked_for > self.timeout + HEARTBEAT * 4:
                blamed = self._blame(state, blocked_for)
                _loop_thread.abandon(state)
                return blamed

    def _blame(self, state: _LoopState, blocked_for: float) -> bool:
        """The loop is blocked: a task of ours blocking it gets ``timeout`` (True); when
        no task runs (blocked outside any task), every pending call does."""
        task = asyncio.current_task(state.loop)
        name = task.get_name() if task is not None else ""
        if name.startswith(self.token):
            culprit = int(name[len(self.token):])
            self.results[culprit] = (Score.timeout(
                f"exceeded {self.timeout:g}s timeout (blocked the event loop)"), blocked_for)
            self.pending.discard(culprit)
            return True
        if task is None:  # nothing to blame but all
            self._time_out_pending("event loop blocked", blocked_for)
        return False

    def _time_out_pending(self, why: str, seconds: float) -> None:
        for pos in self.pending:
            self.results[pos] = (Score.timeout(f"exceeded {self.timeout:g}s timeout ({why})"),
                                 seconds)
        self.pending.clear()

    async def _gather(self, positions: list[int], sink: dict[int, tuple[Any, float]]) -> None:
        # every task is created in one turn of the loop, so rewards that pool the
        # requests of a turn (a sandbox batching one-sample groups) see them together
        gate = asyncio.Semaphore(ASYNC_CONCURRENCY)

        async def settle_one(pos: int) -> None:
            sink[pos] = await self._one(pos, gate)

        await asyncio.gather(*(settle_one(pos) for pos in positions))

    async def _one(self, pos: int, gate: asyncio.Semaphore) -> tuple[Any, float]:
        async with gate:
            name = f"{self.token}{pos}"
            task = asyncio.current_task()
            if task is not None:
                task.set_name(name)
            t0 = time.perf_counter()
            try:
                result = self.calls[pos]()
                if asyncio.iscoroutine(result):
                    result = await asyncio.wait_for(_contained(result, name), self.timeout)
                elif isinstance(result, asyncio.Future):
                    result = await asyncio.wait_for(result, self.timeout)
                return result, time.perf_counter() - t0
            except TimeoutError:
                return (Score.timeout(f"exceeded {self.timeout:g}s timeout"),
                        time.perf_counter() - t0)
            except BaseException as exc:  # SystemExit, CancelledError too: this sample's
                return _Failure(*_tuple(exception_score(exc))), time.perf_counter() - t0


def _tuple(score: Score) -> tuple[Any, ...]:
    return (score.value, score.status, score.reason, score.details)


def execute_reward(reward: Reward, mode: ExecutionMode, samples: Sequence[Sample],
                   indices: Sequence[int] | None, groups: Sequence[Sequence[int]] | None,
                   timeout: float | None, out: Outcome, workers: int | None = None) -> None:
    """Score ``samples`` (those at ``indices``, or the ``groups`` for a group reward) with
    ``reward`` in ``mode``, writing into ``out``."""
    limit = resolve_timeout(timeout, reward)
    if mode is ExecutionMode.PROCESS:
        if groups is None and type(reward).quick_score is not Reward.quick_score:
            indices = execute_quick(reward, samples, indices, out)
            if not indices:
                return
        execute_in_workers(reward, samples, indices, groups, limit, out, workers)
    elif mode is ExecutionMode.ASYNC:
        execute_async(reward, samples, indices, groups, limit, out)
    elif groups is not None:
        execute_inline_groups(reward, samples, groups, out)
    else:
        execute_inline(reward, samples, indices, out)


class LocalExecutor:
    """The executor of this process (:class:`~rewardkit.execution.executor.Executor`):
    :func:`execute_reward` with a worker pool of ``workers`` processes (default: the usable
    cores) for process-mode rewards."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers

    def score(self, reward: Reward, mode: ExecutionMode, samples: Sequence[Sample],
              indices: Sequence[int] | None, groups: Sequence[Sequence[int]] | None,
              timeout: float, out: Outcome) -> None:
        execute_reward(reward, mode, samples, indices, groups, timeout, out, self.workers)

    def close(self) -> None:
        """Close the shared worker pool of this size (the next call starts a new one)."""
        shared_pool(self.workers).close()
