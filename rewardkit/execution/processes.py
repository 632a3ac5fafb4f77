"""The pool's worker processes: started, watched, killed, and their output copied.

- a worker is a fresh interpreter (``python -m rewardkit.execution.worker``) that leads
  its own process group and is always killed with the whole group: a process its reward
  started (an external checker slower than the timeout) dies with it;
- workers die with the parent whatever kills it: a small reaper process holds the read
  end of a pipe from the parent and, when it sees end of file (the parent is gone, even
  by SIGKILL), kills every worker it was told about. That works while a worker runs
  code that holds the GIL, where a watchdog thread in the worker could not run;
- workers do not hold the caller's stdout and stderr: their output goes through a pipe
  that one parent thread (for all workers) copies to the parent's stderr, and the
  parent closes its end of a retired worker's pipe itself rather than wait for the end
  of file a surviving grandchild could hold back, so no fd, thread or process is left
  behind by a timeout.
"""

from __future__ import annotations

import collections
import contextlib
import mmap
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from typing import IO, cast

from rewardkit.execution.protocol import AREA_BYTES, HEADER, MAIN_PATH_ENV, Chunk

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


class SharedArea:
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
class WorkerProcess:
    """A worker process as the parent holds it: the process, its pipe and shared memory,
    and what the current call has sent it."""

    proc: subprocess.Popen[bytes]
    conn: Connection
    area: SharedArea
    #: the read end of its output pipe (owned by ``_output``)
    output: int
    loaded: set[str] = field(default_factory=set)
    #: the chunks it holds, the one in progress first
    chunks: collections.deque[Chunk] = field(default_factory=collections.deque)
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
                    target=self._copy_output, args=(self._wake[0],), daemon=True,
                    name="rewardkit-worker-output")
                self._thread.start()
            self._ops.append((op, fd, done))
            assert self._wake is not None
            with contextlib.suppress(OSError):
                os.write(self._wake[1], b"x")
            return True

    def _copy_output(self, wake: int) -> None:
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


def spawn() -> WorkerProcess:
    """A new worker process, with its shared memory and output pipe, told to the reaper."""
    parent_conn, child_conn = Pipe(duplex=True)
    area = SharedArea()
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
    return WorkerProcess(proc, parent_conn, area, output)


def retire(worker: WorkerProcess) -> None:
    """Kill ``worker`` with its group and release what it held (memory, output pipe)."""
    worker.kill()
    worker.area.close()
    _output.drop(worker.output)
    _reaper.tell("-", worker.proc.pid)


def close_reaper() -> None:
    """Stop the reaper (at exit, once every pool is closed)."""
    _reaper.close()
