"""The slot's judge: the confined process that runs every test's statements.

The zygote starts it on the first task with tests and keeps it across tasks (forking a
fresh judge per test cost as much as the rest of the test).  It is a child of the
zygote, confined like a task child (the task's rlimits, but no CPU limit, which would
add up over tests, and RLIMIT_NPROC 1: a test cannot fork or start threads, so nothing
of the judge's uid outlives a test; no-new-privs, seccomp, no network, not dumpable,
killed with the zygote) but as its own uid, the *judge uid*, so
that no candidate can signal, trace or read it, and the end-of-task sweep of the slot
uid spares it.  It never runs candidate code: per test it gets, over a unix socket, the
test's span in the task's tests file and the ends of the link to that test's candidate
(``SCM_RIGHTS``), and answers with one JSON record on its verdict pipe, which no other
process holds.  A judge that timed out, died, ran a test that ended it badly, served
:data:`_TESTS_PER_JUDGE` tests, or has other limits than the task asks for, is replaced.

Guarantees: a test is handed only to a judge started for the task's limits; a verdict
comes only from the judge's own pipe; a judge that cannot be trusted with the next test
is killed, reaped and forgotten before another starts.  Standard library only (see
:mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import _socket
import contextlib
import json
import marshal
import os
import resource
import select
import signal
import time

from rewardkit_sandbox import _harness as harness

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from collections.abc import Callable
    from typing import Any

    #: the zygote's confinement of a freshly forked child (request, fds, workdir, uid)
    EnterTask = Callable[[dict[str, Any], tuple[int, ...], str, int], None]

_TESTS_PER_JUDGE = 2000
_JUDGE_START_TIMEOUT_S = 10.0
_RECORD_LIMIT = 1 << 20
#: a verdict is one short line: a read of 64 KiB allocated (and touched) heap pages for
#: nothing, each a copy-on-write fault after a fork
_VERDICT_READ = 4096


class Judge:
    """Starting, feeding and stopping the slot's judge.

    ``uid``: the judge uid it runs as; ``devnull``: the zygote's, its stdio;
    ``enter_task``: the zygote's confinement of a forked child, applied to the judge.
    ``pid`` is 0 while no judge runs; ``verdicts`` is its verdict pipe (-1 if none).
    """

    def __init__(self, uid: int, devnull: int, enter_task: EnterTask) -> None:
        self.uid = uid
        self.devnull = devnull
        self.enter_task = enter_task
        self.pid = 0
        self.socket: Any = None
        self.verdicts = -1
        self.limits: Any = None
        self.tests = 0
        self.busy = False

    def ready(self, request: dict[str, Any]) -> str | None:
        """Start a judge for ``request``'s limits unless one is up; why not, if it fails."""
        limits = request["limits"]["rlimits"]
        if self.pid and (self.limits != limits
                               or self.tests >= _TESTS_PER_JUDGE):
            self.stop()
        if self.pid:
            return None
        try:
            parent, child = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        except OSError as error:
            return f"could not create the judge's socket: {error}"
        try:
            verdicts_read, verdicts_write = os.pipe()
        except OSError as error:
            parent.close()
            child.close()
            return f"could not create the judge's pipe: {error}"
        try:
            pid = os.fork()
        except OSError as error:
            for end in (parent, child):
                end.close()
            for fd in (verdicts_read, verdicts_write):
                os.close(fd)
            return f"fork of the judge failed: {error}"
        if pid == 0:
            try:
                judge_request = {**request, "limits": {**request["limits"], "rlimits": [
                    (resource.RLIMIT_NPROC, 1, 1) if entry[0] == resource.RLIMIT_NPROC
                    else entry
                    for entry in limits
                    if entry[0] != resource.RLIMIT_CPU
                ]}}
                fds = (self.devnull, self.devnull, self.devnull, verdicts_write, child.fileno())
                self.enter_task(judge_request, fds, "/", self.uid)
                harness.serve_judge(4, 3)
            finally:
                os._exit(harness.SETUP_FAILED_EXIT_CODE)
        child.close()
        os.close(verdicts_write)
        self.pid, self.socket, self.verdicts = pid, parent, verdicts_read
        self.limits, self.tests = limits, 0
        setup = self._line(time.monotonic() + _JUDGE_START_TIMEOUT_S)
        if setup + b"\n" != harness.SETUP_DONE_RECORD:
            self.stop()
            return "judge set-up failed: " + (setup.decode(errors="replace") or "no answer")
        return None

    def hand(self, tests_fd: int, span: Any, index: int, link: tuple[int, int]) -> bool:
        """Hand test ``index`` to the judge with its ends of the candidate link."""
        self.tests += 1
        payload = marshal.dumps((span[0], span[1], index))
        try:
            self.socket.sendmsg(
                [payload],
                [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, harness.TEST_FDS.pack(tests_fd, *link))],
            )
        except OSError:
            return False
        self.busy = True
        return True

    def verdict(self) -> dict[str, Any] | int | None:
        """The verdict the judge has written (call once its pipe is readable); else the
        judge died: its wait status (None if unknown), and it is reaped and forgotten."""
        self.busy = False
        line = self._line(time.monotonic() + 1.0)
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and "status" in record:
                if record.get("restart"):
                    self.stop()
                return record
        return self.stop()

    def _line(self, deadline: float) -> bytes:
        """One line from the judge's verdict pipe (b"" at EOF or after ``deadline``)."""
        data = b""
        while not data.endswith(b"\n") and len(data) < _RECORD_LIMIT:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.verdicts], (), (), remaining)[0]:
                return b""
            chunk = os.read(self.verdicts, _VERDICT_READ)
            if not chunk:
                return b""
            data += chunk
        return data.rstrip(b"\n")

    def stop(self) -> int | None:
        """Kill the judge (if any), reap it and close its ends; its wait status."""
        status = None
        pid, self.pid = self.pid, 0
        if pid:
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                status = os.waitpid(pid, 0)[1]
        self.reaped()
        return status

    def kill_if_busy(self) -> None:
        """SIGKILL a busy judge (the task is being stopped); its pipe then reads EOF."""
        if self.busy and self.pid:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)

    def reaped(self) -> None:
        self.pid = 0
        self.busy = False
        if self.socket is not None:
            self.socket.close()
            self.socket = None
        if self.verdicts >= 0:
            os.close(self.verdicts)
            self.verdicts = -1
