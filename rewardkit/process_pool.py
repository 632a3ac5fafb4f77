"""Process-mode execution: a reusable pool of worker processes with hard timeouts.

Each worker is a fresh interpreter (``python -m rewardkit._pool_child``) talking over a
pipe. Work is sent in chunks; the parent gives every item ``timeout`` seconds from the
moment the worker started it (the previous item's answer) and, past that, kills the
worker, marks the item ``timeout`` and hands the rest of the chunk to a replacement.
A worker that dies mid-item costs that item (status ``error``), nothing else. Nothing
here uses signals in the caller, so it works from any thread (Ray actors, dataloader
threads, TRL's reward threads).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe, wait
from typing import Any, cast

from rewardkit.types import Score, Status

#: (index, payload) where the payload is a Sample (per-sample) or a list (per-group)
Item = tuple[int, Any]
#: worker kills (crash or timeout) with no answer between them after which the rest of a
#: call's samples are not tried
FAILURES_IN_A_ROW = 8
#: seconds a worker may take to import and set up a reward before its first item
LOAD_TIMEOUT = 120.0
#: a Score as it crosses the pipe
WireScore = tuple[float | None, str, str, Any]


def _to_scores(answer: WireScore | list[WireScore]) -> Score | list[Score]:
    if isinstance(answer, list):
        return [Score(v, Status(s), r, d) for v, s, r, d in answer]
    v, s, r, d = answer
    return Score(v, Status(s), r, d)


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class _Worker:
    proc: subprocess.Popen[bytes]
    conn: Connection
    loaded: set[str] = field(default_factory=set)
    pending: collections.deque[Item] = field(default_factory=collections.deque)
    started_item_at: float = 0.0
    #: when the item in progress times out (longer while the reward is being loaded)
    deadline: float = 0.0

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.conn.close()

    def describe_exit(self) -> str:
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                return "worker process stopped answering"
        if code < 0:
            import signal

            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"worker process killed by {name}"
        return f"worker process exited with code {code}"


class WorkerPool:
    """A pool of worker processes, sized to the usable cores and reused across calls.

    ``run`` may be called from any thread; calls are served one at a time.
    """

    def __init__(self, size: int | None = None) -> None:
        self.size = size or usable_cores()
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self.restarts = 0

    # -- life cycle ----------------------------------------------------------------
    def _spawn(self) -> _Worker:
        parent_conn, child_conn = Pipe(duplex=True)
        env = dict(os.environ)
        path = [p for p in sys.path if p]
        if path:
            env["PYTHONPATH"] = os.pathsep.join(path)
        fd = child_conn.fileno()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewardkit._pool_child", str(fd)],
            pass_fds=(fd,),
            env=env,
            stdin=subprocess.DEVNULL,
            close_fds=True,
        )
        child_conn.close()
        return _Worker(proc, parent_conn)

    def _ensure_started(self) -> None:
        if self._closed:
            raise RuntimeError("worker pool is closed")
        # a worker that died while idle (OOM killer, a stray signal) is replaced before it
        # is handed work, so that no sample is blamed for it
        for i, worker in enumerate(self._workers):
            if worker.proc.poll() is not None:
                worker.kill()
                self._workers[i] = self._spawn()
                self.restarts += 1
        while len(self._workers) < self.size:
            self._workers.append(self._spawn())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for w in self._workers:
                with contextlib.suppress(OSError):
                    w.conn.send(("stop",))
            deadline = time.monotonic() + 2
            for w in self._workers:
                try:
                    w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    w.kill()
                w.conn.close()
            self._workers.clear()

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers]

    # -- work ----------------------------------------------------------------------
    def run(
        self,
        key: str,
        reward_blob: bytes,
        group: bool,
        items: Sequence[Item],
        timeout: float,
    ) -> dict[int, tuple[Score | list[Score], float]]:
        """Score ``items`` with the pickled reward ``reward_blob`` (cached per worker under
        ``key``). Returns index -> (Score, or one Score per sample for a group, seconds)."""
        results: dict[int, tuple[Score | list[Score], float]] = {}
        if not items:
            return results
        with self._lock:
            self._ensure_started()
            queue: collections.deque[list[Item]] = collections.deque()
            chunk = max(1, min(64, len(items) // (self.size * 4) or 1))
            for start in range(0, len(items), chunk):
                queue.append(list(items[start : start + chunk]))
            idle = list(self._workers)
            busy: dict[Connection, _Worker] = {}
            failures_in_a_row = 0

            def dispatch(worker: _Worker) -> None:
                batch = queue.popleft()
                blob = None if key in worker.loaded else reward_blob
                try:
                    worker.conn.send(("run", key, blob, group, batch))
                except (OSError, ValueError):
                    queue.appendleft(batch)
                    replace(worker, None)
                    return
                worker.loaded.add(key)
                worker.pending.extend(batch)
                worker.started_item_at = time.monotonic()
                grace = LOAD_TIMEOUT if blob is not None else 0.0
                worker.deadline = worker.started_item_at + max(timeout, grace)
                busy[worker.conn] = worker

            def replace(worker: _Worker, failure: Score | None) -> None:
                """Kill ``worker``; the item it was on gets ``failure``; the rest go back.
                After ``FAILURES_IN_A_ROW`` kills with no answer between them, what is still
                queued is not tried: a reward that crashes or hangs on every input must not
                cost a worker restart (or a full timeout) per sample."""
                nonlocal failures_in_a_row
                busy.pop(worker.conn, None)
                worker.kill()
                pending = list(worker.pending)
                worker.pending.clear()
                if failure is not None and pending:
                    idx, _ = pending.pop(0)
                    results[idx] = (failure, time.monotonic() - worker.started_item_at)
                    failures_in_a_row += 1
                if pending:
                    queue.appendleft(pending)
                if failures_in_a_row >= FAILURES_IN_A_ROW and failure is not None:
                    given_up = Score(None, failure.status,
                                     f"not run: the reward failed {failures_in_a_row} times "
                                     f"in a row (last: {failure.reason})")
                    for batch in queue:
                        for idx, _ in batch:
                            results[idx] = (given_up, 0.0)
                    queue.clear()
                fresh = self._spawn()
                self._workers[self._workers.index(worker)] = fresh
                self.restarts += 1
                idle.append(fresh)

            while queue or busy:
                while queue and idle:
                    dispatch(idle.pop())
                if not busy:
                    continue
                now = time.monotonic()
                wait_for = min(w.deadline for w in busy.values()) - now
                ready = wait(list(busy), timeout=max(0.0, wait_for))
                for ready_conn in ready:
                    worker = busy[cast(Connection, ready_conn)]
                    conn = worker.conn
                    try:
                        message = conn.recv()
                    except (EOFError, OSError):
                        reason = worker.describe_exit()
                        replace(worker, Score.error(f"{reason} while scoring"))
                        continue
                    kind = message[0]
                    if kind == "r":
                        failures_in_a_row = 0
                        _, idx, answer, seconds = message
                        if worker.pending and worker.pending[0][0] == idx:
                            worker.pending.popleft()
                        results[idx] = (_to_scores(answer), seconds)
                        worker.started_item_at = time.monotonic()
                        worker.deadline = worker.started_item_at + timeout
                        if not worker.pending:
                            busy.pop(conn)
                            idle.append(worker)
                    elif kind == "loaded":  # set-up done: the first item's clock starts now
                        worker.started_item_at = time.monotonic()
                        worker.deadline = worker.started_item_at + timeout
                    elif kind == "load_error":
                        worker.loaded.discard(key)
                        failure = Score.error(
                            f"could not load the reward in a worker: {message[1]}")
                        for idx, _ in worker.pending:
                            results[idx] = (failure, 0.0)
                        worker.pending.clear()
                        busy.pop(conn)
                        idle.append(worker)
                now = time.monotonic()
                for worker in list(busy.values()):
                    if now >= worker.deadline:
                        replace(worker, Score.timeout(f"exceeded {timeout:g}s hard timeout"))
        return results


_pools: dict[int, WorkerPool] = {}
_pools_lock = threading.Lock()


def shared_pool(size: int | None = None) -> WorkerPool:
    """The process-wide pool of ``size`` workers (default: usable cores), created on first
    use and closed at exit. Configs asking for different sizes get separate pools."""
    wanted = size or usable_cores()
    with _pools_lock:
        pool = _pools.get(wanted)
        if pool is None or pool._closed:
            pool = _pools[wanted] = WorkerPool(wanted)
        return pool


@atexit.register
def _close_shared_pools() -> None:
    for pool in list(_pools.values()):
        pool.close()


def pickle_reward(reward: Any) -> bytes:
    return pickle.dumps(reward, protocol=pickle.HIGHEST_PROTOCOL)
