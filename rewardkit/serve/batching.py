"""Micro-batching across requests for ``rewardkit serve``.

A trainer that posts one sample per request (OpenRLHF >= 0.10.2, slime) sends hundreds
of requests at the same moment. Scored one :meth:`RewardSet.score` call each, every row
pays the call's own cost (the worker pool's round trip in process mode) and each request
holds a place in the bounded queue, so a burst was refused with 503 long before the
machine was busy. Here a request's rows join the rows still waiting, and a free worker
scores all of them in one call:

- a batch is handed to a worker once it holds ``max_batch_rows`` rows, or once its
  oldest request has waited ``max_wait`` seconds (the latency bound of a lone request),
  whichever comes first; while every worker is busy, the rows that arrive meanwhile
  gather into the next batch. A request with more rows than ``max_batch_rows`` is a batch
  of its own (never split);
- rows join only rows of the same step;
- under a config that needs whole groups (``normalize_then_sum``, group rewards), a
  request's rows join another request's rows of the same group only when both carry that
  group's id (``group``): two requests of the same prompt without ids are two groups, as
  they were when each was scored alone; rows that carry a group's id are scored with the
  other rows of that id waiting then (the group is gathered from separate requests);
- each request gets its own rows' scores, in order (the batch's result cut back into
  the requests' parts);
- one request cannot cost another its scores: when a batch of several requests ends with
  rows given up by the executor's breaker (a call stops trying a reward whose workers
  keep dying: those rows may be another request's) or with a failure of the call itself
  (a bug: 500), each request it touched is scored again on its own, as it would have been
  without batching; the others are answered at once, and those scored again go fewest
  failing rows of their own first, each answered when done (a request whose rows were
  only given up does not wait for the failing request's second round of deaths).

Admission: at most ``queue`` batches' worth of rows (``queue * max_batch_rows``) wait for
a worker; a request beyond that (unless nothing waits) or during a drain is refused (the
caller answers 503 with ``Retry-After``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Hashable, Sequence
from typing import Any

from rewardkit.execution.executor import Outcome
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.serve.metrics import ServeMetrics
from rewardkit.types import Sample, Status, group_key

#: how the breaker's Score of a row it did not try begins (:meth:`Breaker.given_up`)
GIVEN_UP = "not run: the reward failed on"


class ScoringFailed(Exception):
    """The :meth:`RewardSet.score` call of a request's rows raised (a bug, not a reward's
    fault: those are statuses); ``cause`` is what it raised."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


class Entry:
    """One request's rows, waiting to be scored, then its part of the batch's result."""

    __slots__ = ("arrived", "done", "error", "groups", "lead", "result", "rows", "step")

    def __init__(self, rows: list[dict[str, Any]], step: int,
                 groups: dict[Hashable, bool] | None) -> None:
        self.rows = rows
        self.step = step
        #: under a config needing whole groups: each group key of the rows, and whether
        #: the client named it (a ``group`` id) rather than it coming from the prompt
        self.groups = groups
        self.arrived = time.monotonic()
        self.done = threading.Event()
        self.result: ScoreResult | None = None
        self.error: ScoringFailed | None = None
        #: this request's thread is to lead the next batch (its ``done`` is set to wake it)
        self.lead = False

    def wait(self) -> ScoreResult:
        """This request's result once scored, or :class:`ScoringFailed`."""
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def part_of(result: ScoreResult, start: int, end: int) -> ScoreResult:
    """Rows ``start:end`` of ``result``, as if they had been scored alone (totals,
    components, statuses; the metrics are computed from these rows; the call's latencies
    are kept whole)."""
    outcomes = {}
    for name, out in result.outcomes.items():
        part = Outcome(end - start)
        part.values = out.values[start:end]
        part.scores = {i - start: s for i, s in out.scores.items() if start <= i < end}
        part.latencies = out.latencies
        part.latency_per_sample = out.latency_per_sample
        part.sample_seconds = {i - start: v for i, v in out.sample_seconds.items()
                               if start <= i < end}
        outcomes[name] = part
    normalized = {name: result.normalized(name)[start:end] for name in result.outcomes}
    return ScoreResult(result.step, result.samples[start:end], result.totals[start:end],
                       outcomes, result.weights, result.aggregate, normalized,
                       turn_metrics=result.turn_metrics, per_turn=result.per_turn,
                       fallbacks=result.fallbacks)


def _given_up_rows(result: ScoreResult, start: int, end: int) -> bool:
    """Whether a row in ``start:end`` was given up by the executor's breaker."""
    return any(start <= i < end and score.reason.startswith(GIVEN_UP)
               for out in result.outcomes.values() for i, score in out.scores.items())


def _own_failures(result: ScoreResult, start: int, end: int) -> int:
    """How many rows of ``start:end`` failed when tried (not given up by the breaker)."""
    return sum(1 for out in result.outcomes.values() for i, score in out.scores.items()
               if start <= i < end and score.status is not Status.OK
               and not score.reason.startswith(GIVEN_UP))


class MicroBatcher:
    """Gathers the rows of concurrent requests into batches and scores each batch in one
    :meth:`RewardSet.score` call, at most ``workers`` calls at once (see the module).

    No thread of its own: the request threads take turns. A request that arrives while a
    worker is free and no batch is gathering leads the next batch: it waits out the
    window (``max_wait`` from the oldest request, or until ``max_batch_rows`` rows
    wait), takes the batch, scores it in its own thread and hands each other request its
    part. The others wait for their part; when a worker frees up with requests still
    waiting, the oldest of them is woken to lead. So a request's rows change hands once
    (to the thread that scores them), not through a dispatcher and a pool."""

    def __init__(self, rs: RewardSet, metrics: ServeMetrics, *, workers: int, queue: int,
                 max_wait: float, max_batch_rows: int, whole_groups: bool) -> None:
        self.rs = rs
        self.metrics = metrics
        self.workers = workers
        self.max_wait = max_wait
        self.max_batch_rows = max_batch_rows
        #: rows that may wait for a worker (beyond, unless nothing waits: refused)
        self.capacity = queue * max_batch_rows
        self.whole_groups = whole_groups
        self.draining = False
        self._lock = threading.Lock()
        #: the leader gathering a batch waits on this (woken early by a full batch)
        self._gathering = threading.Condition(self._lock)
        self._pending: list[Entry] = []
        self._pending_rows = 0
        self._idle = workers
        #: a request leads (or has been woken to lead) the batch now gathering
        self._leading = False

    def submit(self, rows: list[dict[str, Any]], step: int) -> Entry | None:
        """Queue a request's rows; None: refused (the queue is full, or draining). Then
        :meth:`result` (in the same thread) scores them, or waits for them to be."""
        groups: dict[Hashable, bool] | None = None
        if self.whole_groups:
            groups = {}
            for row in rows:
                key = group_key(Sample.from_dict(row))
                groups[key] = groups.get(key, True) and row.get("group") is not None
        entry = Entry(rows, step, groups)
        with self._lock:
            if self.draining or (self._pending and
                                 self._pending_rows + len(rows) > self.capacity):
                return None
            self._pending.append(entry)
            self._pending_rows += len(rows)
            self.metrics.queued += 1
            if not self._leading and self._idle:
                self._leading = True  # the queue was empty: this request leads
                entry.lead = True
            elif self._pending_rows >= self.max_batch_rows:
                self._gathering.notify()
        return entry

    def result(self, entry: Entry) -> ScoreResult:
        """This request's result: its rows scored (by this thread when it leads a batch,
        else by the leader of theirs); :class:`ScoringFailed` when the call failed."""
        while True:
            if entry.lead:
                entry.lead = False
                self._lead()
            entry.done.wait()
            if entry.lead and entry.result is None and entry.error is None:
                entry.done.clear()
                continue
            return entry.wait()

    def drain(self) -> None:
        """Refuse new requests; what waits is scored without waiting for more."""
        with self._lock:
            self.draining = True
            self._gathering.notify_all()

    def _lead(self) -> None:
        """Gather a batch (this thread's request is the oldest waiting), score it, hand
        out the parts, and wake the next leader if requests still wait."""
        with self._lock:
            while not self.draining:
                left = self._pending[0].arrived + self.max_wait - time.monotonic()
                if left <= 0 or self._pending_rows >= self.max_batch_rows:
                    break
                self._gathering.wait(left)
            batch = self._take()
            self._idle -= 1
            self._pending_rows -= sum(len(e.rows) for e in batch)
            self.metrics.queued -= len(batch)
            self.metrics.in_flight += len(batch)
            self._leading = False
            self._next_leader()
        answered: list[Entry] = []  # answered before the batch's end
        try:
            self._score_batch(batch, answered)
        finally:
            with self._lock:
                self._idle += 1
                self.metrics.in_flight -= len(batch) - len(answered)
                self._next_leader()
            for entry in batch:
                entry.done.set()

    def _next_leader(self) -> None:
        """With the lock held: wake the oldest waiting request to lead the next batch,
        if requests wait, a worker is free and no batch is gathering."""
        if self._pending and self._idle and not self._leading:
            self._leading = True
            first = self._pending[0]
            first.lead = True
            first.done.set()

    def _take(self) -> list[Entry]:
        """The next batch (taken out of the pending requests): the oldest request, then
        the others of its step in arrival order while the rows fit, and the requests
        holding a group id the batch holds (a group is not cut)."""
        first = self._pending[0]
        batch, rest = [first], []
        rows = len(first.rows)
        keys: dict[Hashable, bool] = dict(first.groups or {})
        for entry in self._pending[1:]:
            fits = entry.step == first.step and rows + len(entry.rows) <= self.max_batch_rows
            if entry.groups is not None and entry.step == first.step:
                shared = [k for k in entry.groups if k in keys]
                if any(not (keys[k] and entry.groups[k]) for k in shared):
                    fits = False  # the same prompt without ids: another group
                elif shared:
                    fits = True  # the rest of a group the batch holds
            if fits:
                batch.append(entry)
                rows += len(entry.rows)
                keys.update(entry.groups or {})
            else:
                rest.append(entry)
        self._pending = rest
        return batch

    def _score_batch(self, batch: list[Entry], answered: list[Entry]) -> None:
        """Score ``batch`` in one call. A request the call may have cost (rows given up by
        the breaker, a failed call) is scored again on its own; then the others are
        answered at once (``answered``), and the requests scored again go fewest rows of
        their own failing first, each answered when done: a request whose rows were only
        given up does not wait for another's rows to kill their workers a second time."""
        step = batch[0].step
        rows = [row for entry in batch for row in entry.rows]
        result, error = self._call(rows, step)
        self.metrics.batch(len(rows), len(batch))
        again: list[tuple[int, int, Entry]] = []
        start = 0
        for position, entry in enumerate(batch):
            end = start + len(entry.rows)
            if len(batch) > 1 and (result is None or _given_up_rows(result, start, end)):
                own = 0 if result is None else _own_failures(result, start, end)
                again.append((own, position, entry))
            elif result is not None:
                entry.result = part_of(result, start, end)
            else:
                entry.error = error
            start = end
        if not again:
            return  # every request is answered when the batch ends
        for entry in batch:
            if entry.result is not None or entry.error is not None:
                self._answer(entry, answered)
        for _, _, entry in sorted(again, key=lambda item: item[:2]):
            entry.result, entry.error = self._call(entry.rows, step)
            self.metrics.batch(len(entry.rows), 1)
            self._answer(entry, answered)

    def _answer(self, entry: Entry, answered: list[Entry]) -> None:
        """Hand ``entry`` its part before the batch ends (no longer in flight)."""
        with self._lock:
            self.metrics.in_flight -= 1
        answered.append(entry)
        entry.done.set()

    def _call(self, rows: Sequence[dict[str, Any]], step: int
              ) -> tuple[ScoreResult | None, ScoringFailed | None]:
        try:
            return self.rs.score(rows, step=step), None
        except (Exception, KeyboardInterrupt) as exc:  # a bug, not a reward fault: say so,
            # stay up (no Ctrl-C reaches this thread: a KeyboardInterrupt is a raise)
            print(f"rewardkit serve: scoring failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
            return None, ScoringFailed(exc)
