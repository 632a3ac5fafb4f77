"""What every remote runner shares: tests one request each, the budget, caps, verdicts.

A provider client only says how one program run (with a stdin) becomes requests and how
its answer reads (``_run_once``); ``RemoteRunner`` does the rest the same way for all of
them: a run holds one slot of the node's ``ExecutionBudget`` (and a request token) for
its requests, assert-style tests run as program + test, one run each, and the answer is
read into the ``Status`` vocabulary with output capped.  The queueing time is in
``SandboxResult.metadata["queued_s"]``, retries in ``["retries"]``.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rewardkit_sandbox.budget import BudgetWaitTimeout, ExecutionBudget, Ticket
from rewardkit_sandbox.remote.http import HttpClient, RemoteError, RequestLog
from rewardkit_sandbox.result import SandboxResult, Status, TestResult

#: what a test's program prints once its test has run, by language: a program that
#: exits (status 0) before its test would otherwise pass it.  The line's token is new
#: for every run; a program that reads its own source could still find it.
_COMPLETION_LINES = {
    "python": "print({token!r}, flush=True)",
    "python3": "print({token!r}, flush=True)",
    "javascript": "console.log({token!r});",
    "nodejs": "console.log({token!r});",
    "typescript": "console.log({token!r});",
    "bash": "echo {token}",
}


@dataclasses.dataclass(frozen=True)
class RemoteOptions:
    """What every remote runner takes, whichever provider runs the program.

    One definition for the four clients (``PistonRunner``, ``Judge0Runner``,
    ``E2BRunner``, ``SandboxFusionRunner``), each of which adds only its provider's own
    keywords.  ``build_remote_runner`` fills it from a reward's config (``language``,
    ``run_timeout_s``, ``memory_limit_mb``, ``stop_on_first_failure``, the budget, the
    API key's header, and ``runner_options``' ``request_timeout_s``, ``max_wait_s`` and
    ``max_retry_wait_s``), so the keys users write stay what they were.

    >>> RemoteOptions(run_timeout_s=5).request_timeout_s is None  # the runner derives it
    True
    """

    #: the program's language, as the provider names it
    language: str = "python"
    #: the program's wall limit, sent to the provider (seconds)
    run_timeout_s: float = 10.0
    #: the program's memory limit, sent to the provider; None: the provider's default
    memory_limit_mb: int | None = None
    #: one request's wall-clock deadline; None: ``run_timeout_s`` plus 30 s (Piston:
    #: plus its compile timeout too)
    request_timeout_s: float | None = None
    #: with tests: stop at the first failing one (the rest are not run)
    stop_on_first_failure: bool = False
    #: stdout and stderr each cut to this many bytes (a cut output is ``output_limit``)
    output_cap_bytes: int = 1024 * 1024
    #: sent with every request (an API key's header); E2B adds its own ``X-API-Key``
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: the node-wide budget a run holds a slot of; None: runs are not budgeted
    budget: ExecutionBudget | None = None
    #: the longest a run waits for a budget slot before it is ``sandbox_error``
    max_wait_s: float | None = None
    #: the longest ``Retry-After`` (429/503) a request waits before giving up
    max_retry_wait_s: float = 30.0


class RemoteRunner:
    """Base of the remote runners (see the module docstring); not used on its own.

    ``name`` is the provider's name in HTTP errors; ``headers`` are the provider's own,
    sent after ``options.headers``; ``setup_s`` is time a run needs beyond
    ``run_timeout_s`` before its answer (a compile stage) in the default request deadline.
    """

    #: the provider's name, in metadata and errors
    provider: str = "remote"
    language: str

    def __init__(
        self,
        options: RemoteOptions,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        setup_s: float = 0.0,
    ) -> None:
        self.language = options.language
        self.run_timeout_s = options.run_timeout_s
        self.memory_limit_mb = options.memory_limit_mb
        self.request_timeout_s = (
            options.request_timeout_s or options.run_timeout_s + setup_s + 30.0
        )
        self.stop_on_first_failure = options.stop_on_first_failure
        self.output_cap_bytes = options.output_cap_bytes
        self.budget = options.budget
        self.max_wait_s = options.max_wait_s
        self.http = HttpClient(
            name,
            {**options.headers, **(headers or {})},
            max_retry_wait_s=options.max_retry_wait_s,
        )

    def run(
        self, code: str, *, stdin: str | None = None, tests: Sequence[str] | None = None
    ) -> SandboxResult:
        """Run ``code`` on ``stdin``, or once per test as program + test."""
        if tests is None:
            return self._budgeted(code, stdin)
        started = time.monotonic()
        results: list[TestResult] = []
        outcomes: list[SandboxResult] = []
        completion = _COMPLETION_LINES.get(self.language.lower())
        for index, test in enumerate(tests):
            program = self.with_test(code, test)
            token = f"rewardkit-test-done-{secrets.token_hex(8)}"
            if completion is not None:
                program += completion.format(token=token) + "\n"
            outcome = self._budgeted(program, None)
            if completion is not None:
                outcome = _completed(outcome, token)
            outcomes.append(outcome)
            error = None
            if not outcome.ok:  # a failing test: its exception's line says more than "exit 1"
                failed = outcome.status is Status.FAILED
                error = (_last_line(outcome.stderr) if failed else None) or outcome.error
            results.append(TestResult(index, outcome.status, error, outcome.wall_time_s))
            if outcome.status is Status.SANDBOX_ERROR:
                break
            if not outcome.ok and self.stop_on_first_failure:
                break
        results += [TestResult(index, None) for index in range(len(results), len(tests))]
        return _combined(outcomes, tuple(results), started)

    def with_test(self, code: str, test: str) -> str:
        """The program one test runs: the candidate's code, then the test."""
        return f"{code}\n\n{test}\n"

    def _budgeted(self, code: str, stdin: str | None) -> SandboxResult:
        started = time.monotonic()
        log = RequestLog()
        if self.budget is None:
            return self._attempt(code, stdin, None, log, started)
        try:
            with self.budget.acquire(max_wait_s=self.max_wait_s) as ticket:
                return self._attempt(code, stdin, ticket, log, started)
        except BudgetWaitTimeout as error:
            return self.sandbox_error(str(error), started, queued_s=time.monotonic() - started)
        except OSError as error:  # its lock files cannot be opened (no descriptor left)
            return self.sandbox_error(f"the node's execution budget is unusable: {error}", started)

    def _attempt(
        self,
        code: str,
        stdin: str | None,
        ticket: Ticket | None,
        log: RequestLog,
        started: float,
    ) -> SandboxResult:
        try:
            result = self._run_once(code, stdin, ticket, log)
        except RemoteError as error:
            result = self.sandbox_error(str(error), started)
        except Exception as error:  # an answer no branch foresaw: a status, not a traceback
            result = self.sandbox_error(f"unexpected {self.provider} answer: {error!r}", started)
        queued = ticket.queued_s if ticket is not None else 0.0
        metadata = {
            **result.metadata,
            "provider": self.provider,
            "queued_s": round(queued, 6),
            "retries": log.retries,
            "retry_wait_s": round(log.retry_wait_s, 3),
        }
        return dataclasses.replace(result, metadata=metadata)

    def _run_once(
        self, code: str, stdin: str | None, ticket: Ticket | None, log: RequestLog
    ) -> SandboxResult:
        raise NotImplementedError

    def post(self, url: str, payload: Any, ticket: Ticket | None, log: RequestLog) -> Any:
        """The JSON answer to the run's ``POST`` of ``payload``, within its request
        deadline, its first request token taken with the ``ticket``'s slot."""
        return self.http.request(
            "POST", url, body=payload, timeout_s=self.request_timeout_s, ticket=ticket, log=log
        ).json()

    # -- reading answers ------------------------------------------------------------

    def cap(self, text: Any) -> tuple[str, bool]:
        """``text`` cut to the output cap, and whether it was cut."""
        raw = str(text or "").encode()
        if len(raw) <= self.output_cap_bytes:
            return raw.decode(errors="replace"), False
        return raw[: self.output_cap_bytes].decode(errors="ignore"), True

    def verdict(
        self,
        started: float,
        *,
        exit_code: int | None,
        stdout: Any = "",
        stderr: Any = "",
        signal: int | None = None,
        timed_out: bool = False,
        out_of_memory: bool = False,
        output_limited: bool = False,
        cpu_time_s: float = 0.0,
        metadata: dict[str, object] | None = None,
    ) -> SandboxResult:
        """A finished run read into a ``Status`` (timeout, memory, crash, exit code, caps).

        An answer that says none of them (no exit code, no signal, no limit hit: a
        field missing or of another type) does not say how the program ended: that is
        the provider's failure, ``sandbox_error``, never a wrong answer.
        """
        ended = timed_out or out_of_memory or output_limited or signal is not None
        if not ended and (type(exit_code) is not int):
            return self.sandbox_error(
                f"{self.provider} answer without an exit code, signal or limit "
                f"(exit code {exit_code!r}): cannot tell how the program ended",
                started,
            )
        out, out_cut = self.cap(stdout)
        err, err_cut = self.cap(stderr)
        if timed_out:
            status, error = Status.TIMEOUT, f"run_timeout of {self.run_timeout_s:g}s exceeded"
        elif out_of_memory:
            status, error = Status.MEMORY, "memory limit exceeded"
        elif signal is not None:
            status, error = Status.CRASHED, f"killed by signal {signal}"
        elif exit_code == 0:
            status, error = Status.OK, None
        elif "MemoryError" in err:  # Python's, when the address-space limit was hit
            status, error = Status.MEMORY, "MemoryError"
        else:
            status, error = Status.FAILED, f"exited with code {exit_code}"
        if out_cut or err_cut or output_limited:
            status, error = Status.OUTPUT_LIMIT, "output exceeded its cap"
        return SandboxResult(
            status=status,
            exit_code=exit_code,
            signal=signal,
            stdout=out,
            stderr=err,
            stdout_truncated=out_cut,
            stderr_truncated=err_cut,
            wall_time_s=round(time.monotonic() - started, 6),
            cpu_time_s=cpu_time_s,
            error=error,
            metadata=metadata or {},
        )

    def compile_failure(
        self, started: float, output: Any, exit_code: int | None = None
    ) -> SandboxResult:
        """The program did not compile: a wrong answer, with the compiler's (capped) words."""
        err, cut = self.cap(output)
        return SandboxResult(
            Status.FAILED,
            exit_code=exit_code,
            stderr=err,
            stderr_truncated=cut,
            wall_time_s=round(time.monotonic() - started, 6),
            error=f"compilation failed: {_last_line(err) or 'no compiler output'}",
            metadata={"stage": "compile"},
        )

    def sandbox_error(self, message: str, started: float, **metadata: object) -> SandboxResult:
        """The provider, not the program, failed: never to be scored as a wrong answer."""
        return SandboxResult(
            Status.SANDBOX_ERROR,
            error=message,
            wall_time_s=round(time.monotonic() - started, 6),
            metadata=dict(metadata),
        )


def _combined(
    outcomes: list[SandboxResult], results: tuple[TestResult, ...], started: float
) -> SandboxResult:
    """One result for a test run: the first bad outcome's verdict, every output joined."""
    first_bad = next((o for o in outcomes if not o.ok), None)
    summary = first_bad or (outcomes[-1] if outcomes else SandboxResult(Status.OK))
    queued = sum(_number(o.metadata.get("queued_s")) for o in outcomes)
    retries = int(sum(_number(o.metadata.get("retries")) for o in outcomes))
    return SandboxResult(
        status=summary.status,
        exit_code=summary.exit_code,
        signal=summary.signal,
        stdout="".join(o.stdout for o in outcomes),
        stderr="".join(o.stderr for o in outcomes),
        stdout_truncated=any(o.stdout_truncated for o in outcomes),
        stderr_truncated=any(o.stderr_truncated for o in outcomes),
        wall_time_s=round(time.monotonic() - started, 6),
        cpu_time_s=sum(o.cpu_time_s for o in outcomes),
        tests=results,
        error=summary.error if first_bad else None,
        metadata={**summary.metadata, "queued_s": round(queued, 6), "retries": retries},
    )


def _completed(outcome: SandboxResult, token: str) -> SandboxResult:
    """``outcome`` without the completion line; a clean exit without it is a failure."""
    lines = outcome.stdout.splitlines(keepends=True)
    kept = [line for line in lines if line.rstrip("\r\n") != token]
    if len(kept) < len(lines):
        return dataclasses.replace(outcome, stdout="".join(kept))
    if outcome.status is not Status.OK:
        return outcome
    return dataclasses.replace(
        outcome,
        status=Status.FAILED,
        error="the program ended before its test ran (exit 0 without the test's end)",
    )


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _last_line(text: str) -> str | None:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:1000] if lines else None
