"""Serving one task while it runs: its stdin fed, its outputs drained up to their caps,
the pool's messages answered, its wall time enforced, and what is left killed and read.

Guarantees: a task never runs past its wall time plus :data:`KILL_GRACE_S` (else
:class:`Stuck`, and the zygote exits); no output is kept beyond its cap; a task is
stopped once, for its first reason (timeout, output limit, the pool's kill or the pool
gone).  Standard library only (see :mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import os
import select
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from typing import Any

    from rewardkit_sandbox._protocol import Channel
    from rewardkit_sandbox.zygote.judge import Judge
    from rewardkit_sandbox.zygote.reaping import Reaper

REPORT_LIMIT_BYTES = 4 * 1024 * 1024
KILL_GRACE_S = 5.0
_READ_CHUNK = 65536
#: read_rest's first read: what is left in a pipe is usually little or nothing (EOF), and
#: a 64 KiB read buffer costs heap pages (copy-on-write faults after a fork) even then
_FIRST_READ = 4096


class Output:
    """Keeps up to ``cap`` bytes of one output stream; ``truncated`` once more was written."""

    __slots__ = ("cap", "data", "truncated")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> bool:
        """Keep what fits; True once more than the cap was written."""
        room = self.cap - len(self.data)
        if len(chunk) > room:
            if room > 0:
                self.data += chunk[:room]
            self.truncated = True
        else:
            self.data += chunk
        return self.truncated


class Task:
    """What the zygote keeps about the task it serves: outputs, stdin still to feed, its
    deadline, and why (if) it was stopped."""

    __slots__ = (
        "deadline",
        "kill_reason",
        "open_outputs",
        "outputs",
        "pending",
        "pool_gone",
        "stderr",
        "stdin_fd",
        "stdout",
    )

    def __init__(self, limits: dict[str, Any]) -> None:
        self.deadline = time.monotonic() + float(limits["wall_time_s"])
        self.stdout = Output(int(limits["stdout_bytes"]))
        self.stderr = Output(int(limits["stderr_bytes"]))
        self.outputs: dict[int, Output] = {}
        self.open_outputs: list[int] = []  # read ends that have not reached EOF
        self.stdin_fd = -1
        self.pending = memoryview(b"")
        self.kill_reason: str | None = None
        self.pool_gone = False


class Stuck(Exception):
    """A process of the task outlived its SIGKILL: the zygote reports it and exits."""


class TaskSupervisor:
    """Serve a running task from the zygote: ``channel`` to the pool (its messages are
    read while a task runs), ``reaper`` to kill and reap the task, ``judge`` killed with
    the task when it is busy."""

    def __init__(self, channel: Channel, reaper: Reaper, judge: Judge) -> None:
        self.channel = channel
        self.reaper = reaper
        self.judge = judge

    def end_task(self, task: Task, reply: dict[str, Any]) -> None:
        """Kill and reap what is left of the task, then read what it left in the pipes."""
        if not self.reaper.sweep(time.monotonic() + KILL_GRACE_S):
            reply["infra_error"] = "processes of the task survived SIGKILL"
            reply["fatal"] = True
        # Every writer is dead now: what is left in the pipes is all there is.
        for fd in task.open_outputs:
            output = task.outputs[fd]
            output.add(read_rest(fd, output.cap + 1))

    @staticmethod
    def exited(pid: int) -> bool:
        """Whether child ``pid`` has exited (without reaping it)."""
        try:
            return bool(os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT))
        except ChildProcessError:
            return True

    def watch(
        self, task: Task, pid: int, until: float | None, ready_fd: int = -1
    ) -> bool:
        """Serve the task while ``pid`` runs: its stdin and outputs, the pool's messages,
        the task's wall time.  True once ``pid`` exited (or, given, ``ready_fd`` is
        readable); False when ``until`` (a test's own limit) passed first.  ``Stuck``
        when it outlives its SIGKILL."""
        pidfd = os.pidfd_open(pid) if ready_fd < 0 else ready_fd
        readers: list[int] = [pidfd, *task.open_outputs]
        if not task.pool_gone:
            readers.append(self.channel.fd)
        writers: list[int] = [task.stdin_fd] if task.stdin_fd >= 0 else []
        try:
            while True:
                now = time.monotonic()
                if task.deadline <= now:
                    if task.kill_reason is not None:  # killed, yet not dead within the grace
                        raise Stuck("task did not die after SIGKILL")
                    self.stop(task, pid, "timeout")
                    continue
                limit = task.deadline
                if until is not None and task.kill_reason is None:
                    if until <= now:
                        return False
                    limit = min(limit, until)
                ready, writable, _ = select.select(readers, writers, [], limit - now)
                for fd in ready:
                    if fd == pidfd:
                        continue
                    if fd in task.outputs:
                        chunk = os.read(fd, _READ_CHUNK)
                        if not chunk:
                            readers.remove(fd)
                            task.open_outputs.remove(fd)
                        elif task.outputs[fd].add(chunk):
                            self.stop(task, pid, "output_limit")
                    elif fd == self.channel.fd:
                        message = self.channel.receive()
                        if message is None:
                            task.pool_gone = True
                            readers.remove(self.channel.fd)
                            self.stop(task, pid, "pool closed")
                        elif message.get("op") == "kill":
                            self.stop(task, pid, str(message.get("reason", "killed")))
                if writable:
                    task.pending = feed(task.stdin_fd, task.pending)
                    if not task.pending:  # all fed (or the reader is gone): EOF for the program
                        writers.clear()
                        os.close(task.stdin_fd)
                        task.stdin_fd = -1
                if pidfd in ready:
                    return True
        finally:
            if ready_fd < 0:
                os.close(pidfd)

    def stop(self, task: Task, pid: int, reason: str) -> None:
        """End the whole task (once): kill every process of it, then allow a grace."""
        if task.kill_reason is None:
            task.kill_reason = reason
            self.judge.kill_if_busy()
            self.reaper.kill_task(pid)
            task.deadline = time.monotonic() + KILL_GRACE_S


def pipes(count: int) -> list[int]:
    """``count`` pipes as one list (read, write, read, write, ...); on an ``OSError`` the
    ones already made are closed before it propagates."""
    opened: list[int] = []
    try:
        for _ in range(count):
            opened += os.pipe()
    except OSError:
        for fd in opened:
            os.close(fd)
        raise
    return opened


def feed(fd: int, pending: memoryview) -> memoryview:
    """Write what the (non-blocking) pipe takes; empty once done or the reader is gone."""
    try:
        while pending:
            pending = pending[os.write(fd, pending[:_READ_CHUNK]) :]
    except BlockingIOError:
        return pending
    except OSError:  # the program closed stdin or exited
        return pending[:0]
    return pending



def read_rest(fd: int, limit: int) -> bytes:
    """Read what a pipe holds now, without blocking, up to ``limit`` bytes.

    Asks ``select`` before each read: an empty pipe (the usual case) costs one call,
    and a writer still alive somewhere (a daemon of a test) can neither make it wait
    nor, by refilling the pipe, keep it reading: it stops at ``limit``.
    """
    rest = bytearray()
    while len(rest) < limit and select.select([fd], (), (), 0)[0]:
        chunk = os.read(fd, min(_READ_CHUNK if rest else _FIRST_READ, limit - len(rest)))
        if not chunk:
            break
        rest += chunk
    return bytes(rest)

