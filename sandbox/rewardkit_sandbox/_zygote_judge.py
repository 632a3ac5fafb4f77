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

Standard library only (see :mod:`rewardkit_sandbox._zygote`).
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
    from typing import Any

_TESTS_PER_JUDGE = 2000
_JUDGE_START_TIMEOUT_S = 10.0
_RECORD_LIMIT = 1 << 20


class JudgeProcess:
    """Starting, feeding and stopping the slot's judge (a mixin of ``Zygote``)."""

    pid: int
    judge_uid: int
    devnull: int  # the Zygote's, opened at its start
    judge_pid: int = 0
    judge_socket: Any = None
    judge_verdicts: int = -1
    judge_limits: Any = None
    judge_tests = 0
    judge_busy = False

    if TYPE_CHECKING:  # the Zygote's own confinement of a forked child
        def _enter_task(self, request: dict[str, Any], fds: tuple[int, ...], workdir: str,
                        uid: int = -1) -> None: ...

    def _judge_ready(self, request: dict[str, Any]) -> str | None:
        """Start a judge for ``request``'s limits unless one is up; why not, if it fails."""
        limits = request["limits"]["rlimits"]
        if self.judge_pid and (self.judge_limits != limits
                               or self.judge_tests >= _TESTS_PER_JUDGE):
            self._stop_judge()
        if self.judge_pid:
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
                self._enter_task(judge_request, fds, "/", self.judge_uid)
                harness.serve_judge(4, 3)
            finally:
                os._exit(harness.SETUP_FAILED_EXIT_CODE)
        child.close()
        os.close(verdicts_write)
        self.judge_pid, self.judge_socket, self.judge_verdicts = pid, parent, verdicts_read
        self.judge_limits, self.judge_tests = limits, 0
        setup = self._judge_line(time.monotonic() + _JUDGE_START_TIMEOUT_S)
        if setup + b"\n" != harness.SETUP_DONE_RECORD:
            self._stop_judge()
            return "judge set-up failed: " + (setup.decode(errors="replace") or "no answer")
        return None

    def _judge_test(self, tests_fd: int, span: Any, index: int, link: tuple[int, int]) -> bool:
        """Hand test ``index`` to the judge with its ends of the candidate link."""
        self.judge_tests += 1
        payload = marshal.dumps((span[0], span[1], index))
        try:
            self.judge_socket.sendmsg(
                [payload],
                [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, harness.TEST_FDS.pack(tests_fd, *link))],
            )
        except OSError:
            return False
        self.judge_busy = True
        return True

    def _judge_verdict(self) -> dict[str, Any] | int | None:
        """The verdict the judge has written (call once its pipe is readable); else the
        judge died: its wait status (None if unknown), and it is reaped and forgotten."""
        self.judge_busy = False
        line = self._judge_line(time.monotonic() + 1.0)
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and "status" in record:
                if record.get("restart"):
                    self._stop_judge()
                return record
        return self._stop_judge()

    def _judge_line(self, deadline: float) -> bytes:
        """One line from the judge's verdict pipe (b"" at EOF or after ``deadline``)."""
        data = b""
        while not data.endswith(b"\n") and len(data) < _RECORD_LIMIT:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.judge_verdicts], (), (), remaining)[0]:
                return b""
            chunk = os.read(self.judge_verdicts, 65536)
            if not chunk:
                return b""
            data += chunk
        return data.rstrip(b"\n")

    def _stop_judge(self) -> int | None:
        """Kill the judge (if any), reap it and close its ends; its wait status."""
        status = None
        pid, self.judge_pid = self.judge_pid, 0
        if pid:
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                status = os.waitpid(pid, 0)[1]
        self._judge_reaped()
        return status

    def _signal_judge(self) -> None:
        """SIGKILL a busy judge (the task is being stopped); its pipe then reads EOF."""
        if self.judge_busy and self.judge_pid:
            with contextlib.suppress(OSError):
                os.kill(self.judge_pid, signal.SIGKILL)

    def _judge_reaped(self) -> None:
        self.judge_pid = 0
        self.judge_busy = False
        if self.judge_socket is not None:
            self.judge_socket.close()
            self.judge_socket = None
        if self.judge_verdicts >= 0:
            os.close(self.judge_verdicts)
            self.judge_verdicts = -1
