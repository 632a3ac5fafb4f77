"""Process-mode execution: a reusable pool of worker processes with hard timeouts.

Each worker (:mod:`rewardkit.execution.processes` starts, watches and kills them) talks
to the parent over a pipe and a small shared memory area, in the format of
:mod:`rewardkit.execution.protocol`. Work is sent in chunks, one pickled message each,
and a worker holds two chunks at a time so it never waits for the parent between them.
The parent sleeps in ``wait`` on the pipes until a message or the earliest deadline: it
gives every item ``timeout`` seconds from the moment the worker started it (read in the
shared memory) and, past that, kills the worker, marks the item ``timeout`` and hands the
rest of the chunk to a replacement. A worker that dies mid-item costs that item (status
``error``), nothing else: the items it finished keep their results (the shared memory
outlives it, and what it sent is read first).

Rules that keep one call from hurting another, or the caller:

- every request carries a call id and every answer echoes it: an answer left over from
  an interrupted call is dropped, never taken for the next call's;
- a call that ends by an exception (Ctrl-C, an error in the caller's thread) kills the
  workers still busy with it, so the next call starts on clean workers;
- the items are dealt out strided over the batch, so a burst of bad rows next to each
  other is spread over many chunks; the call stops trying a reward only when it failed
  (worker killed) on nearly every item tried, by the rule of
  :class:`~rewardkit.execution.executor.Breaker` (the Ray executor's too).

Nothing here uses signals in the caller, so it works from any thread (Ray actors,
dataloader threads, TRL's reward threads).
"""

from __future__ import annotations

import array
import collections
import contextlib
import itertools
import os
import pickle
import subprocess
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, cast

from rewardkit.execution.executor import Breaker
from rewardkit.execution.processes import (
    SharedArea,
    WorkerProcess,
    close_reaper,
    retire,
    spawn,
)
from rewardkit.execution.protocol import (
    LOADING_MAIN_ENV,
    MAX_CHUNK,
    PLAIN,
    SLOTS,
    STOP,
    Chunk,
    encode_items,
    slot_offsets,
    to_score,
)
from rewardkit.execution.shared_instances import SharedInstances
from rewardkit.execution.timeouts import LOAD_TIMEOUT
from rewardkit.types import Score, Status

#: chunks per worker a call aims at, so that a worker slowed by other load leaves a
#: short tail (with one worker there is no one to take a tail: consecutive chunks go in
#: one message, see ``_Call``)
CHUNKS_PER_WORKER = 16


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


_call_ids = itertools.count(1)


class CallResult:
    """What one ``WorkerPool.execute`` found, by item position: ``values[i]`` the value
    (None where there is none), ``scores[i]`` the Score wherever the verdict is not a
    plain ``ok`` float (a list of Scores for a group), ``seconds[i]`` the item's own
    time."""

    __slots__ = ("scores", "seconds", "values")

    def __init__(self, n: int) -> None:
        self.values: list[float | None] = [None] * n
        self.seconds: list[float] = [0.0] * n
        self.scores: dict[int, Score | list[Score]] = {}


class WorkerPool:
    """A pool of worker processes, sized to the usable cores and reused across calls.

    ``run`` may be called from any thread; calls are served one at a time.
    """

    def __init__(self, size: int | None = None) -> None:
        if os.environ.get(LOADING_MAIN_ENV) == "1":
            raise RuntimeError(
                "a process-mode reward's worker started scoring while importing the main "
                "script: put the script's scoring under `if __name__ == '__main__':`")
        self.size = size or usable_cores()
        self._workers: list[WorkerProcess] = []
        self._lock = threading.Lock()
        self._closed = False
        self.restarts = 0
        #: one of the process-wide pools (:func:`shared_pool`), which hand each other
        #: their idle workers
        self._shared = False

    # -- life cycle ----------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self._closed:
            raise RuntimeError("worker pool is closed")
        # a worker that died while idle (OOM killer, a stray signal) is replaced before it
        # is handed work, so that no sample is blamed for it
        for i, worker in enumerate(self._workers):
            if worker.proc.poll() is not None:
                retire(worker)
                self._workers[i] = spawn()
                self.restarts += 1
        while len(self._workers) < self.size:
            self._workers.append(spawn())

    def _share_idle_workers(self) -> None:
        """The shared pools of other sizes hand this one their idle workers before it
        starts any, and keep no more idle workers than the largest pool needs beyond this
        one's: a process scoring with ``workers`` 1, then 2, then 4 holds 4 workers, not 7,
        and going back to a size seen before starts none. A pool in use (its lock held by
        a call in another thread) is left alone. Called with this pool's lock held."""
        others = [p for p in list(_pools.instances.values()) if p is not self and not p._closed]
        if not others:
            return
        spare = max([p.size for p in others] + [self.size]) - self.size
        for other in others:
            if not other._lock.acquire(blocking=False):
                continue  # scoring in another thread: its workers are busy
            try:
                while other._workers and len(self._workers) < self.size:
                    self._workers.append(other._workers.pop())
                keep = min(len(other._workers), spare)
                spare -= keep
                while len(other._workers) > keep:
                    retire(other._workers.pop())
            finally:
                other._lock.release()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for w in self._workers:
                with contextlib.suppress(OSError):
                    w.conn.send_bytes(STOP)
            deadline = time.monotonic() + 2
            for w in self._workers:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                retire(w)  # the worker if it did not stop, and what its rewards started
            self._workers.clear()

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers]

    # -- work ----------------------------------------------------------------------
    def execute(
        self,
        key: str,
        reward_blob: bytes,
        group: bool,
        items: Sequence[Any],
        timeout: float,
    ) -> CallResult:
        """Score ``items`` (Samples, or lists of Samples for a group reward) with the
        pickled reward ``reward_blob`` (cached per worker under ``key``)."""
        if not items:
            return CallResult(0)
        with self._lock:
            if self._shared:
                self._share_idle_workers()
            self._ensure_started()
            call = _Call(self, next(_call_ids), key, reward_blob, group, items, timeout)
            try:
                call.serve()
            except BaseException:
                # interrupted: workers still busy with this call are killed, so the next
                # call does not wait behind (or receive) this call's work
                for worker in list(call.busy.values()):
                    self._replace(worker)
                raise
            return call.results

    def _replace(self, worker: WorkerProcess) -> WorkerProcess:
        retire(worker)
        fresh = spawn()
        self._workers[self._workers.index(worker)] = fresh
        self.restarts += 1
        return fresh


def _joined(chunks: list[list[int]]) -> list[list[int]]:
    """Consecutive ``chunks`` put together, in order, up to :data:`MAX_CHUNK` items each."""
    out: list[list[int]] = []
    for chunk in chunks:
        if out and len(out[-1]) + len(chunk) <= MAX_CHUNK:
            out[-1] += chunk
        else:
            out.append(list(chunk))
    return out


class _Call:
    """The state of one ``WorkerPool.execute``: the queue of chunks, what each worker holds,
    results."""

    def __init__(self, pool: WorkerPool, call_id: int, key: str, blob: bytes, group: bool,
                 items: Sequence[Any], timeout: float) -> None:
        self.pool = pool
        self.call_id = call_id
        self.key = key
        self.blob = blob
        self.group = group
        self.items = items
        self.timeout = timeout
        self.results = CallResult(len(items))
        self.seq = itertools.count()
        # strided chunks: chunk j holds items j, j + n_chunks, ... so that the first
        # items tried are spread over the whole batch and a burst of bad rows next to
        # each other falls into many chunks
        n = len(items)
        size = max(1, min(MAX_CHUNK, n // (pool.size * CHUNKS_PER_WORKER) or 1))
        n_chunks = -(-n // size)
        chunks = [list(range(j, n, n_chunks)) for j in range(n_chunks)]
        if pool.size == 1:
            # one worker has no tail to share: consecutive strided chunks go in one
            # message of up to MAX_CHUNK items (the items are tried in the same order, one
            # round trip instead of one per chunk)
            chunks = _joined(chunks)
        self.queue: collections.deque[list[int]] = collections.deque(chunks)
        self.workers = list(pool._workers)
        self.breaker = Breaker("samples")

    @property
    def busy(self) -> dict[Connection, WorkerProcess]:
        return {w.conn: w for w in self.workers if w.chunks}

    def serve(self) -> None:
        while True:
            # every worker gets a chunk, then a second one queued behind it
            for depth in range(SLOTS):
                for worker in list(self.workers):
                    if self.queue and len(worker.chunks) == depth and worker in self.workers:
                        self._dispatch(worker)
            busy = self.busy
            if not busy:
                if not self.queue:
                    return
                continue
            wait_for = min(self._deadline(w)[0] for w in busy.values()) - time.monotonic()
            for ready in wait(list(busy), timeout=max(0.0, wait_for)):
                worker = busy[cast(Connection, ready)]
                if worker in self.workers and worker.chunks:
                    self._receive(worker)
            now = time.monotonic()
            for worker in list(self.workers):
                if worker.chunks:
                    deadline, started = self._deadline(worker)
                    if now >= deadline:
                        self._lost(worker, Score.timeout(
                            f"exceeded {self.timeout:g}s hard timeout"), started)

    def _deadline(self, worker: WorkerProcess) -> tuple[float, float]:
        """When the item in progress times out, and when it started."""
        head = worker.chunks[0]
        if worker.loading:
            return head.ready_at + max(self.timeout, LOAD_TIMEOUT), head.ready_at
        call, seq, _, started = worker.area.header()
        if call != self.call_id or all(c.seq != seq for c in worker.chunks):
            started = head.ready_at  # the worker has not started an item of its chunks
        return started + self.timeout, started

    def _dispatch(self, worker: WorkerProcess) -> None:
        positions = self.queue.popleft()
        blob = None if self.key in worker.loaded else self.blob
        seq = next(self.seq)
        slot = 1 - worker.chunks[-1].slot if worker.chunks else 0
        try:
            message = pickle.dumps(
                ("run", self.call_id, seq, self.key, blob, self.group, slot,
                 encode_items([self.items[p] for p in positions], self.group)),
                protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an item that cannot be pickled (too deep, unpicklable)
            self._send_without_unpicklable(positions, exc)
            return
        _, _, codes = slot_offsets(slot)
        worker.area.map[codes:codes + len(positions)] = bytes(len(positions))
        try:
            worker.conn.send_bytes(message)
        except (OSError, ValueError):  # the worker is gone: not this chunk's fault
            self.queue.appendleft(positions)
            if worker.chunks:
                self._lost(worker, Score.error(f"{worker.describe_exit()} while scoring"))
            else:
                self._swap(worker)
            return
        worker.loaded.add(self.key)
        if blob is not None:
            worker.loading = True
        worker.chunks.append(Chunk(seq, positions, slot, time.monotonic()))

    def _swap(self, worker: WorkerProcess) -> None:
        self.workers[self.workers.index(worker)] = self.pool._replace(worker)

    def _send_without_unpicklable(self, positions: list[int], exc: Exception) -> None:
        """The items that cannot be sent get an error; the others go back as a chunk."""
        sendable = []
        for pos in positions:
            problem: BaseException | None = None
            try:
                pickle.dumps(encode_items([self.items[pos]], self.group),
                             protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as item_exc:  # RecursionError, PicklingError...
                problem = item_exc
            if problem is None:
                sendable.append(pos)
                continue
            self._fail(pos, problem)
        if sendable and len(sendable) == len(positions):  # each alone pickles: blame all
            for pos in sendable:
                self._fail(pos, exc)
        elif sendable:
            self.queue.appendleft(sendable)

    def _fail(self, pos: int, problem: BaseException) -> None:
        reason = f"{type(problem).__name__}: {problem}"[:300]
        self.results.scores[pos] = Score.error(
            f"sample cannot be sent to a worker process: {reason}")

    def _receive(self, worker: WorkerProcess) -> None:
        try:
            message = pickle.loads(worker.conn.recv_bytes())
        except (EOFError, OSError):
            self._lost(worker, Score.error(f"{worker.describe_exit()} while scoring"))
            return
        except Exception as exc:  # an answer that cannot be unpickled
            self._lost(worker, Score.error(f"unreadable answer from a worker: {exc}"))
            return
        kind, call_id = message[0], message[1]
        if call_id != self.call_id:
            return  # a stale answer of an earlier, interrupted call
        head = worker.chunks[0]
        if kind in ("s", "d"):  # answers that are not plain values; "d": chunk done
            chunk = next((c for c in worker.chunks if c.seq == message[2]), None)
            if chunk is None:
                return
            chunk.answers.update(message[3])
            if kind == "d":
                self._collect(worker.area, chunk, len(chunk.positions))
                worker.chunks.remove(chunk)
                self._next(worker)
        elif kind == "loaded":  # set-up done: the first item's clock starts now
            worker.loading = False
            head.ready_at = time.monotonic()
        elif kind == "load_error":
            worker.loaded.discard(self.key)
            worker.loading = False
            failure = Score.error(f"could not load the reward in a worker: {message[2]}")
            for pos in head.positions:
                self.results.scores[pos] = failure
            worker.chunks.popleft()
            self._next(worker)

    @staticmethod
    def _next(worker: WorkerProcess) -> None:
        """The worker moves on to its next chunk: that chunk's clock starts now."""
        if worker.chunks:
            head = worker.chunks[0]
            head.ready_at = max(head.ready_at, time.monotonic())

    def _collect(self, area: SharedArea, chunk: Chunk, upto: int) -> list[int]:
        """Take the results of the chunk's first ``upto`` items from the shared memory
        and the messages; returns those items whose answer never arrived."""
        at_values, at_seconds, at_codes = slot_offsets(chunk.slot)
        shared = area.map
        values = array.array("d", shared[at_values:at_values + 8 * upto]).tolist()
        seconds = array.array("d", shared[at_seconds:at_seconds + 8 * upto]).tolist()
        codes = shared[at_codes:at_codes + upto]
        results = self.results
        res_values, res_seconds, res_scores = results.values, results.seconds, results.scores
        answers = chunk.answers
        missing = []
        for j, pos in enumerate(chunk.positions[:upto]):
            answer = answers.get(j)
            if answer is not None:
                score = to_score(answer)
                res_scores[pos] = score
                if not isinstance(score, list):
                    res_values[pos] = score.value
            elif codes[j] == PLAIN:
                res_values[pos] = values[j]
            else:  # finished, but its answer was not sent before the worker died
                missing.append(pos)
                continue
            res_seconds[pos] = seconds[j]
        self.breaker.answered(upto - len(missing))
        return missing

    def _drain(self, worker: WorkerProcess) -> None:
        """Read what a dead worker sent before it died (answers of finished items)."""
        with contextlib.suppress(Exception):
            while worker.conn.poll():
                message = pickle.loads(worker.conn.recv_bytes())
                if message[0] not in ("s", "d") or message[1] != self.call_id:
                    continue
                for chunk in worker.chunks:
                    if chunk.seq == message[2]:
                        chunk.answers.update(message[3])
                        chunk.finished = chunk.finished or message[0] == "d"

    def _lost(self, worker: WorkerProcess, failure: Score, started: float | None = None) -> None:
        """The worker died or timed out on its current item: that item gets ``failure``,
        finished items keep their results and the rest go back to the queue for a fresh
        worker. ``started``: for a timeout, when the item judged started; if the worker
        had moved on to another item by the time it was killed, that one is not blamed."""
        worker.kill_group()
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.proc.wait(timeout=5)
        self._drain(worker)
        call, seq, done, now_started = worker.area.header()
        chunks = list(worker.chunks)
        active = next((i for i, c in enumerate(chunks)
                       if call == self.call_id and c.seq == seq and not c.finished), None)
        requeue: list[int] = []
        blamed = False
        for i, chunk in enumerate(chunks):
            positions = chunk.positions
            if chunk.finished or (active is not None and i < active):
                requeue += self._collect(worker.area, chunk, len(positions))
                continue
            if blamed or (active is not None and i > active):
                requeue += positions
                continue
            if i == active:
                upto = min(done, len(positions))
                requeue += self._collect(worker.area, chunk, upto)
                rest = positions[upto:]
            else:  # no item of it started: the worker died loading or reading it
                rest, now_started = positions, chunk.ready_at
            blamed = True
            if not rest:
                continue
            moved_on = (started is not None and failure.status == Status.TIMEOUT
                        and now_started != started and not worker.loading)
            if moved_on:
                requeue += rest
                continue
            self.results.scores[rest[0]] = failure
            self.results.seconds[rest[0]] = time.monotonic() - now_started
            self.breaker.failed()
            requeue += rest[1:]
        # not the whole rest at once: a chunk must fit its worker's shared memory
        for at in range(len(requeue) - len(requeue) % MAX_CHUNK, -1, -MAX_CHUNK):
            if requeue[at:at + MAX_CHUNK]:
                self.queue.appendleft(requeue[at:at + MAX_CHUNK])
        worker.chunks.clear()
        self._swap(worker)
        self.breaker.give_up_waiting(failure, self.queue, list,
                                     self.results.scores.__setitem__)


_pools: SharedInstances[int, WorkerPool] = SharedInstances(
    lambda pool: not pool._closed, lambda pool: pool.close(), after_close=close_reaper)


def shared_pool(size: int | None = None) -> WorkerPool:
    """The process-wide pool of ``size`` workers (default: usable cores), created on first
    use and closed at exit. Configs asking for different sizes get separate pools, which
    hand each other their idle workers (``WorkerPool._share_idle_workers``): together
    they keep as many idle workers as the largest needs."""
    wanted = size or usable_cores()
    return _pools.get(wanted, lambda: _shared(WorkerPool(wanted)))


def _shared(pool: WorkerPool) -> WorkerPool:
    pool._shared = True
    return pool

