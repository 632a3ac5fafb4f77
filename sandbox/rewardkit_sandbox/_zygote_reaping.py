"""Ending a task: kill its process group and every process of its uid, then reap.

The zygote is a child subreaper, so a task's orphans come back to it to be reaped.
Standard library only (see :mod:`rewardkit_sandbox._zygote`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from rewardkit_sandbox._uid_kill import kill_every_process_of_uid


class KillAndReap:
    """Kill and reap what a task started (``pid``: the zygote's own pid)."""

    pid: int
    uid: int
    uid_isolation: bool
    #: the slot's judge (see :mod:`._zygote_judge`): a child that outlives tasks, spared
    #: by the end-of-task sweep (it runs as another uid) and by these checks; 0 if none
    judge_pid: int = 0

    def _kill_task(self, pid: int, main_child_reaped: bool = False) -> None:
        """SIGKILL the task's process group, then everything its uid runs (or our children)."""
        if not main_child_reaped:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        elif not self._has_live_children():
            return
        if self.uid_isolation:
            kill_every_process_of_uid(self.uid)
        else:
            self._kill_children()

    def _sweep(self, deadline: float) -> bool:
        """After the task's own children are reaped: kill and reap whatever is left of it
        (daemons, orphans).  False when something outlived SIGKILL until ``deadline``."""
        if not self._has_live_children():
            return True
        self._kill_task(0, main_child_reaped=True)
        return self._reap_descendants(deadline)

    def _has_live_children(self) -> bool:
        """Reap what has exited; True while a child other than the judge lives."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                if not self.judge_pid:
                    return True
                return any(child != self.judge_pid for child in _children_of(self.pid))
            if pid == self.judge_pid:
                self._judge_reaped()

    def _judge_reaped(self) -> None:
        """The judge's exit was reaped here (see :mod:`._zygote_judge`)."""
        self.judge_pid = 0

    def _kill_children(self) -> None:
        for child in _children_of(self.pid):
            if child == self.judge_pid:
                continue
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(child, signal.SIGKILL)

    def _reap_descendants(self, deadline: float) -> bool:
        """Reap until no child is left; orphans reparent here (subreaper).  False on timeout."""
        pause = 0.0002
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid:
                if pid == self.judge_pid:
                    self._judge_reaped()
                continue
            if self.judge_pid and not self._has_live_children():
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
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                children.extend(int(item) for item in listing.read().split())
    return children
