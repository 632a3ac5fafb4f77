"""Process-mode execution: a reusable pool of worker processes with hard timeouts.

Each worker is a fresh interpreter (``python -m rewardkit._pool_child``) talking over a
pipe. Work is sent in chunks; the parent gives every item ``timeout`` seconds from the
moment the worker started it (the previous item's answer) and, past that, kills the
worker, marks the item ``timeout`` and hands the rest of the chunk to a replacement.
A worker that dies mid-item costs that item (status ``error``), nothing else.

Rules that keep one call from hurting another, or the caller:

- every request carries a call id and every answer echoes it: an answer left over from
  an interrupted call is dropped, never taken for the next call's;
- a call that ends by an exception (Ctrl-C, an error in the caller's thread) kills the
  workers still busy with it, so the next call starts on clean workers;
- the items are dealt out strided over the batch, so a burst of bad rows next to each
  other is spread over many chunks; the call stops trying a reward only when it failed
  (worker killed) on nearly every item tried, at least ``BREAKER_MIN_FAILURES`` times;
- workers die with the parent whatever kills it: a small reaper process holds the read
  end of a pipe from the parent and, when it sees end of file (the parent is gone, even
  by SIGKILL), kills every worker it was told about. That works while a worker runs
  code that holds the GIL, where a watchdog thread in the worker could not run;
- workers do not hold the caller's stdout and stderr: their output goes through a pipe
  that a parent thread copies to the parent's stderr.

Nothing here uses signals in the caller, so it works from any thread (Ray actors,
dataloader threads, TRL's reward threads).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import itertools
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe, wait
from typing import IO, Any, cast

from rewardkit.types import Score, Status

#: (index, payload) where the payload is a Sample (per-sample) or a list (per-group)
Item = tuple[int, Any]
#: the breaker: a call stops trying a reward once at least this many items killed their
#: worker (crash or timeout) ...
BREAKER_MIN_FAILURES = 16
#: ... and they are at least this share of the items tried
BREAKER_FAILURE_RATE = 0.9
#: seconds a worker may take to import and set up a reward before its first item
LOAD_TIMEOUT = 120.0
#: set in a worker's environment: the parent's main script, for rewards defined there
MAIN_PATH_ENV = "REWARDKIT_PARENT_MAIN"
#: set in a worker while it runs the parent's main script: no pool may start then
LOADING_MAIN_ENV = "REWARDKIT_LOADING_PARENT_MAIN"
#: a Score as it crosses the pipe
WireScore = tuple[float | None, str, str, Any]

_REAPER = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
pids = set()
for line in sys.stdin:
    op, _, pid = line.partition(" ")
    (pids.add if op == "+" else pids.discard)(int(pid))
for pid in pids:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""


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


def _main_script() -> str | None:
    """The path of the script run as ``__main__``, if it is one (not ``-m``, not a REPL)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or getattr(main, "__spec__", None) is not None or not path.endswith(".py"):
        return None
    return os.path.abspath(path) if os.path.isfile(path) else None


def _copy_output(stream: IO[bytes]) -> None:
    """Copy a worker's stdout/stderr to ours until the worker closes it."""
    with contextlib.suppress(Exception):
        for line in iter(stream.readline, b""):
            with contextlib.suppress(Exception):
                sys.stderr.write(line.decode("utf-8", "replace"))
                sys.stderr.flush()
    with contextlib.suppress(OSError):
        stream.close()


class _Reaper:
    """A process that kills the registered workers when this process goes away."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _stdin(self) -> IO[bytes] | None:
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-c", _REAPER], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
            except OSError:
                self._proc = None
                return None
        return self._proc.stdin

    def tell(self, op: str, pid: int) -> None:
        with self._lock:
            stdin = self._stdin()
            if stdin is None:
                return
            with contextlib.suppress(OSError, ValueError):
                stdin.write(f"{op} {pid}\n".encode())
                stdin.flush()

    def close(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self._proc.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=5)
            self._proc = None


_reaper = _Reaper()
_call_ids = itertools.count(1)


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
        main_path = _main_script()
        if main_path:
            env[MAIN_PATH_ENV] = main_path
        fd = child_conn.fileno()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewardkit._pool_child", str(fd), str(os.getpid())],
            pass_fds=(fd,),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            close_fds=True,
        )
        child_conn.close()
        _reaper.tell("+", proc.pid)
        assert proc.stdout is not None
        threading.Thread(target=_copy_output, args=(proc.stdout,), daemon=True,
                         name=f"rewardkit-worker-{proc.pid}-output").start()
        return _Worker(proc, parent_conn)

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        _reaper.tell("-", worker.proc.pid)

    def _ensure_started(self) -> None:
        if self._closed:
            raise RuntimeError("worker pool is closed")
        # a worker that died while idle (OOM killer, a stray signal) is replaced before it
        # is handed work, so that no sample is blamed for it
        for i, worker in enumerate(self._workers):
            if worker.proc.poll() is not None:
                self._retire(worker)
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
                _reaper.tell("-", w.proc.pid)
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
        if not items:
            return {}
        with self._lock:
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

    def _replace(self, worker: _Worker) -> _Worker:
        self._retire(worker)
        fresh = self._spawn()
        self._workers[self._workers.index(worker)] = fresh
        self.restarts += 1
        return fresh


class _Call:
    """The state of one ``WorkerPool.run``: the queue of chunks, who is busy, results."""

    def __init__(self, pool: WorkerPool, call_id: int, key: str, blob: bytes, group: bool,
                 items: Sequence[Item], timeout: float) -> None:
        self.pool = pool
        self.call_id = call_id
        self.key = key
        self.blob = blob
        self.group = group
        self.timeout = timeout
        self.results: dict[int, tuple[Score | list[Score], float]] = {}
        # strided chunks: chunk j holds items j, j + n_chunks, ... so that the first
        # items tried are spread over the whole batch
        size = max(1, min(64, len(items) // (pool.size * 4) or 1))
        n_chunks = -(-len(items) // size)
        self.queue: collections.deque[list[Item]] = collections.deque(
            list(items[j::n_chunks]) for j in range(n_chunks))
        self.idle = list(pool._workers)
        self.busy: dict[Connection, _Worker] = {}
        self.failures = 0
        self.answers = 0

    def serve(self) -> None:
        while self.queue or self.busy:
            while self.queue and self.idle:
                self._dispatch(self.idle.pop())
            if not self.busy:
                continue
            wait_for = min(w.deadline for w in self.busy.values()) - time.monotonic()
            for ready in wait(list(self.busy), timeout=max(0.0, wait_for)):
                worker = self.busy.get(cast(Connection, ready))
                if worker is not None:
                    self._receive(worker)
            now = time.monotonic()
            for worker in list(self.busy.values()):
                if now >= worker.deadline:
                    self._lost(worker, Score.timeout(
                        f"exceeded {self.timeout:g}s hard timeout"))

    def _dispatch(self, worker: _Worker) -> None:
        batch = self.queue.popleft()
        blob = None if self.key in worker.loaded else self.blob
        try:
            worker.conn.send(("run", self.call_id, self.key, blob, self.group, batch))
        except (OSError, ValueError):  # the worker is gone: not the batch's fault
            self.queue.appendleft(batch)
            self.idle.append(self.pool._replace(worker))
            return
        except Exception as exc:  # an item that cannot be pickled (too deep, unpicklable)
            self._send_one_by_one(worker, batch, exc)
            return
        worker.loaded.add(self.key)
        worker.pending.extend(batch)
        worker.started_item_at = time.monotonic()
        grace = LOAD_TIMEOUT if blob is not None else 0.0
        worker.deadline = worker.started_item_at + max(self.timeout, grace)
        self.busy[worker.conn] = worker

    def _send_one_by_one(self, worker: _Worker, batch: list[Item], exc: Exception) -> None:
        """The items that cannot be sent get an error; the others go back one per chunk."""
        for idx, payload in reversed(batch):
            problem: BaseException | None = exc if len(batch) == 1 else None
            if problem is None:
                try:
                    pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException as item_exc:  # RecursionError, PicklingError...
                    problem = item_exc
            if problem is None:
                self.queue.appendleft([(idx, payload)])
                continue
            reason = f"{type(problem).__name__}: {problem}"[:300]
            self.results[idx] = (Score.error(
                f"sample cannot be sent to a worker process: {reason}"), 0.0)
        self.idle.append(worker)

    def _receive(self, worker: _Worker) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            self._lost(worker, Score.error(f"{worker.describe_exit()} while scoring"))
            return
        except Exception as exc:  # an answer that cannot be unpickled
            self._lost(worker, Score.error(f"unreadable answer from a worker: {exc}"))
            return
        kind, call_id = message[0], message[1]
        if call_id != self.call_id:
            return  # a stale answer of an earlier, interrupted call
        if kind == "r":
            self.answers += 1
            _, _, idx, answer, seconds = message
            if worker.pending and worker.pending[0][0] == idx:
                worker.pending.popleft()
            self.results[idx] = (_to_scores(answer), seconds)
            worker.started_item_at = time.monotonic()
            worker.deadline = worker.started_item_at + self.timeout
            if not worker.pending:
                self.busy.pop(worker.conn)
                self.idle.append(worker)
        elif kind == "loaded":  # set-up done: the first item's clock starts now
            worker.started_item_at = time.monotonic()
            worker.deadline = worker.started_item_at + self.timeout
        elif kind == "load_error":
            worker.loaded.discard(self.key)
            failure = Score.error(f"could not load the reward in a worker: {message[2]}")
            for idx, _ in worker.pending:
                self.results[idx] = (failure, 0.0)
            worker.pending.clear()
            self.busy.pop(worker.conn)
            self.idle.append(worker)

    def _lost(self, worker: _Worker, failure: Score) -> None:
        """The worker died or timed out on its current item: that item gets ``failure``,
        the rest of its chunk goes back to the queue for a fresh worker."""
        self.busy.pop(worker.conn, None)
        pending = list(worker.pending)
        worker.pending.clear()
        if pending:
            idx, _ = pending.pop(0)
            self.results[idx] = (failure, time.monotonic() - worker.started_item_at)
            self.failures += 1
        if pending:
            self.queue.appendleft(pending)
        self.idle.append(self.pool._replace(worker))
        tried = self.failures + self.answers
        if (self.queue and self.failures >= BREAKER_MIN_FAILURES
                and self.failures >= BREAKER_FAILURE_RATE * tried):
            given_up = Score(None, failure.status,
                             f"not run: the reward failed on {self.failures} of the "
                             f"{tried} samples tried in this call (last: {failure.reason})")
            for batch in self.queue:
                for idx, _ in batch:
                    self.results[idx] = (given_up, 0.0)
            self.queue.clear()


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
    _reaper.close()


def pickle_reward(reward: Any) -> bytes:
    return pickle.dumps(reward, protocol=pickle.HIGHEST_PROTOCOL)
