"""Test mode of a task: each assert-style test in a candidate child, judged by the
slot's judge, with the test's own time limit.

Guarantees: the tests run in order, each in a fresh candidate child that is killed (and
reaped) before the next starts; a test's verdict is the judge's, never the candidate's;
a test that overruns its time is a timeout and the next test runs; the first test's
candidate failing its set-up marks the task's set-up incomplete.  Standard library only
(see :mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from rewardkit_sandbox import _harness as harness
from rewardkit_sandbox.zygote.supervision import (
    KILL_GRACE_S,
    REPORT_LIMIT_BYTES,
    Stuck,
    Task,
    TaskSupervisor,
    pipes,
    read_rest,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from collections.abc import Callable
    from typing import Any

    from rewardkit_sandbox.zygote.judge import Judge

    #: the zygote's fork of a confined child (request, fds, workdir, role): its pid
    Spawn = Callable[[dict[str, Any], tuple[int, ...], str, str], int]

_GONE_GRACE_S = 0.5


class Judging:
    """Run a task's tests, one candidate child and one judged test at a time.

    ``supervisor`` serves the task while a test runs, ``judge`` judges each test,
    ``spawn`` forks a confined candidate child (the zygote's), ``devnull`` is its stdin.
    """

    def __init__(
        self, supervisor: TaskSupervisor, judge: Judge, spawn: Spawn, devnull: int
    ) -> None:
        self.supervisor = supervisor
        self.judge = judge
        self.spawn = spawn
        self.devnull = devnull

    def judge_tests(
        self,
        request: dict[str, Any],
        task: Task,
        writers: list[int],
        workdir: str,
        reply: dict[str, Any],
        tests_fd: int,
    ) -> None:
        """Each test in a candidate child and the slot's judge, judged here from outside.

        A test ends at its own ``test_timeout_s`` (its candidate and the judge alone are
        killed; the next test runs), the task at its wall time or output cap (every
        process of it, and the judge if it is busy).
        """
        timeout_s = float(request.get("test_timeout_s") or request["limits"]["wall_time_s"])
        stop_early = bool(request.get("stop_on_first_failure"))
        records: list[dict[str, Any]] = []
        cpu_time_s, max_rss_kib = 0.0, 0
        for index in range(len(request["test_spans"])):
            started = time.monotonic()
            ran = self._judge_test(request, task, writers, workdir, index, tests_fd, timeout_s)
            if isinstance(ran, str):
                reply["infra_error"] = ran
                return
            verdict, timed_out, status, usage, report = ran
            cpu_time_s += usage.ru_utime + usage.ru_stime
            max_rss_kib = max(max_rss_kib, usage.ru_maxrss)
            reply["cpu_time_s"] = round(cpu_time_s, 6)
            reply["max_rss_kib"] = max_rss_kib
            if task.kill_reason is not None:  # the whole task was stopped
                reply["signal"] = signal.SIGKILL
                break
            setup = report.partition(b"\n")[0]
            if setup + b"\n" != harness.SETUP_DONE_RECORD:
                if setup.startswith(b'{"setup_error"'):
                    reply["infra_error"] = "task setup failed: " + setup.decode(errors="replace")
                    return
                if index == 0:  # no candidate code of this task has run yet
                    reply["setup_incomplete"] = True
                    return
            outcome = harness.test_outcome(verdict, status, timeout_s if timed_out else None)
            outcome["index"] = index
            outcome["wall_time_s"] = round(time.monotonic() - started, 6)
            records.append(outcome)
            if outcome["status"] != "ok" and stop_early:
                break
        if "signal" not in reply:  # every test ran (or the rest were skipped)
            reply["exit_code"] = 0
        reply["tests"] = records

    def _judge_test(
        self,
        request: dict[str, Any],
        task: Task,
        writers: list[int],
        workdir: str,
        index: int,
        tests_fd: int,
        timeout_s: float,
    ) -> tuple[dict[str, Any] | int | None, bool, int | None, Any, bytes] | str:
        """Fork test ``index``'s candidate, hand the test and the candidate's link to the
        judge, serve the task until the judge's verdict (or the test's time is up), then
        kill the candidate.

        Returns the verdict (:func:`harness.test_outcome`), whether the test timed out,
        and the candidate's wait status (None: it was still running), resource use and
        report; or why the test could not be started.
        """
        problem = self.judge.ready(request)
        if problem is not None:
            return problem
        try:
            opened = pipes(3)  # what is still open: closed at the end
        except OSError as error:
            return f"could not create the test's pipes: {error}"
        to_candidate_r, to_candidate_w, to_judge_r, to_judge_w, report_r, report_w = opened
        started = time.monotonic()
        verdict: dict[str, Any] | int | None = None
        try:
            try:
                pid = self.spawn(
                    request,
                    (self.devnull, *writers, report_w, to_candidate_r, to_judge_w),
                    workdir,
                    "candidate",
                )
            except OSError as error:
                return f"fork failed: {error}"
            for fd in (report_w, to_candidate_r, to_judge_w):
                os.close(fd)
                opened.remove(fd)
            span = request["test_spans"][index]
            handed = self.judge.hand(tests_fd, span, index, (to_judge_r, to_candidate_w))
            for fd in (to_judge_r, to_candidate_w):
                os.close(fd)
                opened.remove(fd)
            timed_out = False
            if handed:
                ready = self.supervisor.watch(task, pid, started + timeout_s, self.judge.verdicts)
                timed_out = not ready
                verdict = self.judge.stop() if timed_out else self.judge.verdict()
            else:
                verdict = self.judge.stop()
            if isinstance(verdict, dict) and verdict.get("candidate_gone"):
                # it closed the link: give it a moment to be seen exiting, for the reason
                candidate_ended = self.supervisor.watch(task, pid, time.monotonic() + _GONE_GRACE_S)
            else:
                candidate_ended = self.supervisor.exited(pid)
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
            if not self.supervisor.watch(task, pid, time.monotonic() + KILL_GRACE_S):
                raise Stuck("a test's candidate did not die after SIGKILL")
            _, status, usage = os.wait4(pid, 0)
            report = read_rest(report_r, REPORT_LIMIT_BYTES)
        finally:
            for fd in opened:
                os.close(fd)
        return verdict, timed_out, status if candidate_ended else None, usage, report
