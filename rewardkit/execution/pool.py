"""Process-mode execution: a reusable pool of worker processes with hard timeouts.

Each worker is a fresh interpreter (``python -m rewardkit.execution.worker``) talking over a
pipe, with a small shared memory area (an anonymous file both map). Work is sent in
chunks, one pickled message each (samples as columns: no object per sample to pickle),
and a worker holds two chunks at a time so it never waits for the parent between
them. For each item the worker writes into the shared memory when it started it and,
once done, its value if it is a plain ``ok`` float, then the count of items done;
other verdicts (reasons, details, errors, groups) come back in batched messages, and
a message ends each chunk. The parent sleeps in ``wait`` on the pipes until a message
or the earliest deadline: it gives every item ``timeout`` seconds from the moment the
worker started it (read in the shared memory) and, past that, kills the worker, marks
the item ``timeout`` and hands the rest of the chunk to a replacement. A worker that
dies mid-item costs that item (status ``error``), nothing else: the items it finished
keep their results (the shared memory outlives it, and what it sent is read first).

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
  that one parent thread (for all workers) copies to the parent's stderr;
- a worker leads its own process group, and a worker is killed with its whole group: a
  process the reward started (an external checker slower than the timeout) dies with it,
  and the parent closes its end of the worker's output pipe itself rather than wait for
  the end of file a surviving grandchild could hold back, so no fd, thread or process
  is left behind by a timeout.

Nothing here uses signals in the caller, so it works from any thread (Ray actors,
dataloader threads, TRL's reward threads).
"""

from __future__ import annotations

import array
import atexit
import collections
import contextlib
import itertools
import mmap
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe, wait
from typing import IO, Any, cast

from rewardkit.types import Sample, Score, Status

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
#: a Score as it crosses the pipe: (value, status, reason, details)
WireScore = tuple[float | None, str, str, Any]
#: most items in one chunk (one message to a worker; the answers come back through the
#: shared memory and one message, more when many verdicts carry details)
MAX_CHUNK = 256
#: chunks per worker a call aims at, so that a worker slowed by other load leaves a
#: short tail
CHUNKS_PER_WORKER = 16

# A worker's shared memory: a header, then two slots for the results of the chunk in
# progress and of the one queued behind it (a worker holds up to two chunks, so it never
# waits for the parent between chunks).
#: header: call id, chunk number, items finished (int64 each), when the item in
#: progress started (float64, ``time.monotonic``)
HEADER = struct.Struct("qqqd")
HEADER_BYTES = 64
#: chunks a worker holds at once
SLOTS = 2
#: per-item codes: value not in the shared memory (not finished, or its answer goes in
#: a message), value in the shared memory
PENDING, PLAIN = 0, 1
AREA_BYTES = HEADER_BYTES + SLOTS * 17 * MAX_CHUNK


def slot_offsets(slot: int) -> tuple[int, int, int]:
    """Byte offsets of a slot's values (float64), seconds (float64) and codes (uint8)."""
    base = HEADER_BYTES + slot * 17 * MAX_CHUNK
    return base, base + 8 * MAX_CHUNK, base + 16 * MAX_CHUNK


_REAPER = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
pids = set()
for line in sys.stdin:
    op, _, pid = line.partition(" ")
    (pids.add if op == "+" else pids.discard)(int(pid))
for pid in pids:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
"""


_STATUS = {str(s): s for s in Status}
_new_score = Score.__new__
_set = object.__setattr__


def _score(value: float | None, status: str, reason: str, details: Any) -> Score:
    # what the frozen dataclass's __init__ does, at half its cost (once per sample)
    score = _new_score(Score)
    _set(score, "value", value)
    _set(score, "status", _STATUS.get(status, status))
    _set(score, "reason", reason)
    _set(score, "details", details)
    return score


def to_score(answer: WireScore | list[WireScore]) -> Score | list[Score]:
    """A Score (a list of them for a group) from its wire form."""
    if isinstance(answer, list):
        return [_score(*wire) for wire in answer]
    return _score(*answer)


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class _Area:
    """A worker's shared memory (an anonymous file both processes map): the progress
    of the chunk in progress and the plain results, readable even after the worker
    died."""

    def __init__(self) -> None:
        if hasattr(os, "memfd_create"):
            self.fd = os.memfd_create("rewardkit-worker")
        else:  # pragma: no cover - no memfd (macOS): an unlinked temporary file
            with tempfile.TemporaryFile() as handle:
                self.fd = os.dup(handle.fileno())
        os.ftruncate(self.fd, AREA_BYTES)
        self.map = mmap.mmap(self.fd, AREA_BYTES)

    def header(self) -> tuple[int, int, int, float]:
        return cast(tuple[int, int, int, float], HEADER.unpack_from(self.map, 0))

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


@dataclass
class _Chunk:
    """Items of one call sent to a worker in one message: their positions in the call."""

    seq: int
    positions: list[int]
    slot: int
    #: when its worker could start it: sent, or the chunk before it finished, or the
    #: reward finished loading
    ready_at: float
    #: answers sent in messages: item number -> wire form
    answers: dict[int, Any] = field(default_factory=dict)
    #: its end message arrived
    finished: bool = False


@dataclass
class _Worker:
    proc: subprocess.Popen[bytes]
    conn: Connection
    area: _Area
    #: the read end of its output pipe (owned by ``_output``)
    output: int
    loaded: set[str] = field(default_factory=set)
    #: the chunks it holds, the one in progress first
    chunks: collections.deque[_Chunk] = field(default_factory=collections.deque)
    #: the reward is being loaded: its first item's clock has not started
    loading: bool = False

    def kill(self) -> None:
        self.kill_group()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.conn.close()

    def kill_group(self) -> None:
        """SIGKILL the worker and every process in its group (what its reward started).
        The group is the worker's pid: valid while any member lives, even once the
        worker itself is reaped."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.proc.kill()

    def describe_exit(self) -> str:
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                return "worker process stopped answering"
        if code < 0:
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


class _Output:
    """One thread that copies every worker's output (its stdout and stderr, one pipe) to
    our stderr, line by line. The parent hands it the read end of a worker's pipe when
    the worker starts and takes it back (``drop``) when the worker is retired: what is
    waiting in the pipe is copied, then the fd is closed, whether or not some
    grandchild of the worker still holds the write end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ops: list[tuple[str, int, threading.Event | None]] = []
        self._wake: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None

    def add(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._post("+", fd, None)

    def drop(self, fd: int) -> None:
        """Copy what ``fd`` holds, close it; returns once done (at most a second)."""
        done = threading.Event()
        if self._post("-", fd, done):
            done.wait(timeout=1.0)

    def _post(self, op: str, fd: int, done: threading.Event | None) -> bool:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                if op == "-":  # no thread (it could not start): nothing is reading fd
                    with contextlib.suppress(OSError):
                        os.close(fd)
                    return False
                self._wake = os.pipe()
                os.set_blocking(self._wake[0], False)
                self._ops = []
                self._thread = threading.Thread(
                    target=self._run, args=(self._wake[0],), daemon=True,
                    name="rewardkit-worker-output")
                self._thread.start()
            self._ops.append((op, fd, done))
            assert self._wake is not None
            with contextlib.suppress(OSError):
                os.write(self._wake[1], b"x")
            return True

    def _run(self, wake: int) -> None:
        selector = selectors.DefaultSelector()
        selector.register(wake, selectors.EVENT_READ)
        partial: dict[int, bytes] = {}
        while True:
            for key, _ in selector.select():
                fd = cast(int, key.fd)
                if fd == wake:
                    with contextlib.suppress(OSError):
                        os.read(wake, 4096)
                    with self._lock:
                        ops, self._ops = self._ops, []
                    for op, target, done in ops:
                        if op == "+":
                            try:
                                selector.register(target, selectors.EVENT_READ)
                            except (OSError, ValueError):  # not a pipe we can watch
                                with contextlib.suppress(OSError):
                                    os.close(target)
                                continue
                            partial[target] = b""
                            continue
                        if target in partial:
                            self._copy(target, partial)
                            self._close(selector, target, partial)
                        if done is not None:
                            done.set()
                elif fd in partial and not self._copy(fd, partial):
                    self._close(selector, fd, partial)

    @staticmethod
    def _copy(fd: int, partial: dict[int, bytes]) -> bool:
        """Copy the complete lines waiting in ``fd``; False at its end of file."""
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            lines, _, rest = (partial[fd] + data).rpartition(b"\n")
            partial[fd] = rest
            if lines:
                _write_stderr(lines + b"\n")

    @staticmethod
    def _close(selector: selectors.BaseSelector, fd: int, partial: dict[int, bytes]) -> None:
        rest = partial.pop(fd, b"")
        if rest:
            _write_stderr(rest + b"\n")
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(fd)
        with contextlib.suppress(OSError):
            os.close(fd)


def _write_stderr(data: bytes) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(data.decode("utf-8", "replace"))
        sys.stderr.flush()


_output = _Output()


class _Reaper:
    """A process that kills the registered workers when this process goes away."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _stdin(self) -> IO[bytes] | None:
        if self._proc is None or self._proc.poll() is not None:
            try:
                # its own session, as the workers: a signal to our process group (a
                # scheduler ending the job) does not take it down before it kills them
                self._proc = subprocess.Popen(
                    [sys.executable, "-c", _REAPER], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                    start_new_session=True)
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


class CallResult:
    """What one ``WorkerPool.run`` found, by item position: ``values[i]`` the value
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
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self.restarts = 0

    # -- life cycle ----------------------------------------------------------------
    def _spawn(self) -> _Worker:
        parent_conn, child_conn = Pipe(duplex=True)
        area = _Area()
        env = dict(os.environ)
        path = [p for p in sys.path if p]
        if path:
            env["PYTHONPATH"] = os.pathsep.join(path)
        main_path = _main_script()
        if main_path:
            env[MAIN_PATH_ENV] = main_path
        fd = child_conn.fileno()
        output, output_w = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rewardkit.execution.worker", str(fd), str(os.getpid()),
                 str(area.fd)],
                pass_fds=(fd, area.fd),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output_w,
                stderr=output_w,
                close_fds=True,
                # its own process group, killed whole (see kill_group)
                start_new_session=True,
            )
        except BaseException:
            area.close()
            parent_conn.close()
            os.close(output)
            raise
        finally:
            child_conn.close()
            os.close(output_w)
        _reaper.tell("+", proc.pid)
        _output.add(output)
        return _Worker(proc, parent_conn, area, output)

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        worker.area.close()
        _output.drop(worker.output)
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
                    w.conn.send_bytes(_STOP)
            deadline = time.monotonic() + 2
            for w in self._workers:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                w.kill()  # the worker if it did not stop, and what its rewards started
                w.area.close()
                _output.drop(w.output)
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
        items: Sequence[Any],
        timeout: float,
    ) -> CallResult:
        """Score ``items`` (Samples, or lists of Samples for a group reward) with the
        pickled reward ``reward_blob`` (cached per worker under ``key``)."""
        if not items:
            return CallResult(0)
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


_STOP = pickle.dumps(("stop",))


def encode_items(items: Sequence[Any], group: bool) -> Any:
    """The items of a chunk as they cross the pipe. Samples go as columns (a list per
    field, so a prompt shared by a group is sent once and no object is rebuilt per
    sample by the pickler); anything else as it is."""
    if group:
        flat = [s for members in items for s in members]
        return ("groups", [len(members) for members in items], encode_items(flat, False))
    if not all(type(s) is Sample for s in items):
        return ("objects", list(items))
    completions = [s.completion for s in items]
    if all(type(c) is str for c in completions):
        # one string: pickled in one copy, cut up again in the worker
        return ("joined", "".join(completions), [len(c) for c in completions],
                [s.prompt for s in items], [s.reference for s in items],
                [s.metadata for s in items], [s.group for s in items],
                [None if s.text is s.completion else s.text for s in items])
    return ("columns",
            [s.prompt for s in items], completions,
            [s.reference for s in items], [s.metadata for s in items],
            [s.group for s in items],
            # the text is sent only where it is not the completion itself
            [None if s.text is s.completion else s.text for s in items])


class _Call:
    """The state of one ``WorkerPool.run``: the queue of chunks, what each worker holds,
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
        self.queue: collections.deque[list[int]] = collections.deque(
            list(range(j, n, n_chunks)) for j in range(n_chunks))
        self.workers = list(pool._workers)
        self.failures = 0
        self.answers = 0

    @property
    def busy(self) -> dict[Connection, _Worker]:
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

    def _deadline(self, worker: _Worker) -> tuple[float, float]:
        """When the item in progress times out, and when it started."""
        head = worker.chunks[0]
        if worker.loading:
            return head.ready_at + max(self.timeout, LOAD_TIMEOUT), head.ready_at
        call, seq, _, started = worker.area.header()
        if call != self.call_id or all(c.seq != seq for c in worker.chunks):
            started = head.ready_at  # the worker has not started an item of its chunks
        return started + self.timeout, started

    def _dispatch(self, worker: _Worker) -> None:
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
        worker.chunks.append(_Chunk(seq, positions, slot, time.monotonic()))

    def _swap(self, worker: _Worker) -> None:
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

    def _receive(self, worker: _Worker) -> None:
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
    def _next(worker: _Worker) -> None:
        """The worker moves on to its next chunk: that chunk's clock starts now."""
        if worker.chunks:
            head = worker.chunks[0]
            head.ready_at = max(head.ready_at, time.monotonic())

    def _collect(self, area: _Area, chunk: _Chunk, upto: int) -> list[int]:
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
        self.answers += upto - len(missing)
        return missing

    def _drain(self, worker: _Worker) -> None:
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

    def _lost(self, worker: _Worker, failure: Score, started: float | None = None) -> None:
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
            self.failures += 1
            requeue += rest[1:]
        # not the whole rest at once: a chunk must fit its worker's shared memory
        for at in range(len(requeue) - len(requeue) % MAX_CHUNK, -1, -MAX_CHUNK):
            if requeue[at:at + MAX_CHUNK]:
                self.queue.appendleft(requeue[at:at + MAX_CHUNK])
        worker.chunks.clear()
        self._swap(worker)
        tried = self.failures + self.answers
        if (self.queue and self.failures >= BREAKER_MIN_FAILURES
                and self.failures >= BREAKER_FAILURE_RATE * tried):
            given_up = Score(None, failure.status,
                             f"not run: the reward failed on {self.failures} of the "
                             f"{tried} samples tried in this call (last: {failure.reason})")
            for positions in self.queue:
                for pos in positions:
                    self.results.scores[pos] = given_up
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
