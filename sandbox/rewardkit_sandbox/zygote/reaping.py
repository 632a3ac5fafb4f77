"""Ending a task: kill its process group and every process of its uid, then reap.

Guarantees: after :meth:`Reaper.sweep` returns True, no process of the task is left
(its own children reaped, orphans reaped too: the zygote is a child subreaper, so they
come back to it), and the slot's judge, a child that outlives tasks, is neither killed
nor counted; nor is the slot's forker, the zygote's other long-lived child.  Standard
library only (see :mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from rewardkit_sandbox._uid_kill import kill_every_process_of_uid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rewardkit_sandbox.zygote.forker import Forker
    from rewardkit_sandbox.zygote.judge import Judge


class Reaper:
    """Kill and reap what a task started.

    ``zygote_pid``: whose children are the task's; ``uid``: the slot uid whose every
    process is killed when ``uid_isolation`` holds (else the zygote's children are);
    ``judge``: the slot's judge, spared, and told when its exit is reaped here;
    ``forker``: the slot's forker (if it runs), likewise.
    """

    def __init__(
        self, zygote_pid: int, uid: int, uid_isolation: bool, judge: Judge, forker: Forker
    ) -> None:
        self.zygote_pid = zygote_pid
        self.uid = uid
        self.uid_isolation = uid_isolation
        self.judge = judge
        self.forker = forker

    def _spared(self, pid: int) -> bool:
        """Whether ``pid`` is the judge or the forker."""
        return pid != 0 and pid in (self.judge.pid, self.forker.pid)

    def _reaped(self, pid: int) -> None:
        if pid == self.judge.pid:
            self.judge.reaped()
        elif pid == self.forker.pid:
            self.forker.gone()

    def kill_task(self, pid: int, main_child_reaped: bool = False) -> None:
        """SIGKILL the task's process group, then everything its uid runs (or our children)."""
        if not main_child_reaped:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        elif not self.children_left():
            return
        if self.uid_isolation:
            kill_every_process_of_uid(self.uid)
        else:
            self._kill_children()

    def sweep(self, deadline: float) -> bool:
        """After the task's own children are reaped: kill and reap whatever is left of it
        (daemons, orphans).  False when something outlived SIGKILL until ``deadline``."""
        if not self.children_left():
            return True
        self.kill_task(0, main_child_reaped=True)
        return self.reap_descendants(deadline)

    def children_left(self) -> bool:
        """Reap what has exited; True while a child other than the judge and the forker
        lives."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                if not self.judge.pid and not self.forker.pid:
                    return True
                return any(not self._spared(child) for child in _children_of(self.zygote_pid))
            self._reaped(pid)

    def _kill_children(self) -> None:
        for child in _children_of(self.zygote_pid):
            if self._spared(child):
                continue
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(child, signal.SIGKILL)

    def reap_descendants(self, deadline: float) -> bool:
        """Reap until no child is left; orphans reparent here (subreaper).  False on timeout."""
        pause = 0.0002
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid:
                self._reaped(pid)
                continue
            if (self.judge.pid or self.forker.pid) and not self.children_left():
                return True
            if time.monotonic() > deadline:
                return False
            if not self.uid_isolation:
                self._kill_children()
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def _children_of(pid: int) -> list[int]:
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            listing = _read_all(f"/proc/{pid}/task/{task}/children")
            children.extend(int(item) for item in listing.split())
    return children


def _read_all(path: str) -> bytes:
    """A small /proc file's bytes, read with bare descriptors: ``open()`` would add
    five syscalls and an io stack (its objects are copy-on-write faults after a fork)
    to every task's sweep."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = b""
        while chunk := os.read(fd, 4096):
            data += chunk
        return data
    finally:
        os.close(fd)
