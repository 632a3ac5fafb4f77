"""Runners: one interface over "run this program (with this input or these tests)".

``PythonRunner`` uses a local ``SandboxPool``; ``SandboxFusionRunner`` a remote
SandboxFusion server (``POST /run_code``).  Another language or provider implements
``Runner`` and plugs in the same way.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rewardkit_sandbox.limits import SandboxLimits
from rewardkit_sandbox.pool import SandboxPool
from rewardkit_sandbox.result import SandboxResult, Status, TestResult


@runtime_checkable
class Runner(Protocol):
    """Runs one program and says how it went.

    ``tests`` are assert-style snippets run after the program (each judged separately);
    without them ``stdin`` is fed to the program.  A failure of the runner itself
    (unreachable service, broken sandbox) is ``Status.SANDBOX_ERROR``, never a wrong answer.
    """

    language: str

    def run(
        self, code: str, *, stdin: str | None = None, tests: Sequence[str] | None = None
    ) -> SandboxResult: ...


class PythonRunner:
    """Python programs in a local ``SandboxPool``.

    >>> with SandboxPool(size=1) as pool:
    ...     runner = PythonRunner(pool, test_timeout_s=2.0)
    ...     runner.run("def sq(x): return x * x", tests=["assert sq(3) == 9"]).ok
    True
    """

    language = "python"

    def __init__(
        self,
        pool: SandboxPool,
        *,
        limits: SandboxLimits | None = None,
        test_timeout_s: float | None = None,
        stop_on_first_failure: bool = False,
    ) -> None:
        self.pool = pool
        self.limits = limits
        self.test_timeout_s = test_timeout_s
        self.stop_on_first_failure = stop_on_first_failure

    def run(
        self, code: str, *, stdin: str | None = None, tests: Sequence[str] | None = None
    ) -> SandboxResult:
        return self.pool.run(
            code,
            stdin=stdin,
            tests=tests,
            test_timeout_s=self.test_timeout_s,
            stop_on_first_failure=self.stop_on_first_failure,
            limits=self.limits,
        )


class SandboxFusionRunner:
    """Programs run by a SandboxFusion server (https://github.com/bytedance/SandboxFusion).

    Each call is one ``POST {base_url}/run_code`` with ``{"code", "language",
    "run_timeout", "stdin"}``; with tests, one call per test (program + test), stopping
    at the first failure if asked.  Response ``status`` ``Success``/``Failed`` carries a
    ``run_result`` (``Finished`` or ``TimeLimitExceeded``, ``return_code``, ``stdout``,
    ``stderr``, ``execution_time``); ``SandboxError``, HTTP errors and unreadable
    answers become ``Status.SANDBOX_ERROR``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        language: str = "python",
        run_timeout_s: float = 10.0,
        memory_limit_mb: int | None = None,
        request_timeout_s: float | None = None,
        stop_on_first_failure: bool = False,
        output_cap_bytes: int = 1024 * 1024,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/run_code"
        self.language = language
        self.run_timeout_s = run_timeout_s
        self.memory_limit_mb = memory_limit_mb
        self.request_timeout_s = request_timeout_s or run_timeout_s + 30.0
        self.stop_on_first_failure = stop_on_first_failure
        self.output_cap_bytes = output_cap_bytes
        self.headers = {"Content-Type": "application/json", **(headers or {})}

    def run(
        self, code: str, *, stdin: str | None = None, tests: Sequence[str] | None = None
    ) -> SandboxResult:
        if tests is None:
            return self._run_once(code, stdin)
        started = time.monotonic()
        results: list[TestResult] = []
        outcomes: list[SandboxResult] = []
        for index, test in enumerate(tests):
            outcome = self._run_once(f"{code}\n\n{test}\n", None)
            outcomes.append(outcome)
            error = None if outcome.ok else (outcome.error or _last_line(outcome.stderr))
            results.append(TestResult(index, outcome.status, error, outcome.wall_time_s))
            if outcome.status is Status.SANDBOX_ERROR:
                break
            if not outcome.ok and self.stop_on_first_failure:
                break
        results += [TestResult(index, None) for index in range(len(results), len(tests))]
        first_bad = next((o for o in outcomes if not o.ok), None)
        if first_bad is None and len(outcomes) < len(tests):  # cannot happen, kept honest
            first_bad = SandboxResult(Status.FAILED, error="not every test ran")
        summary = first_bad or (outcomes[-1] if outcomes else SandboxResult(Status.OK))
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
            tests=tuple(results),
            error=summary.error if first_bad else None,
        )

    def _run_once(self, code: str, stdin: str | None) -> SandboxResult:
        payload: dict[str, Any] = {
            "code": code,
            "language": self.language,
            "run_timeout": self.run_timeout_s,
            "stdin": stdin or "",
        }
        if self.memory_limit_mb is not None:
            payload["memory_limit_MB"] = self.memory_limit_mb
        request = urllib.request.Request(
            self.url, data=json.dumps(payload).encode(), headers=self.headers, method="POST"
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=self.request_timeout_s) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as error:
            detail = error.read()[:500].decode(errors="replace")
            return _sandbox_error(f"SandboxFusion answered HTTP {error.code}: {detail}", started)
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            return _sandbox_error(f"SandboxFusion unreachable at {self.url}: {error}", started)
        except ValueError as error:
            return _sandbox_error(f"SandboxFusion sent invalid JSON: {error}", started)
        return self._result_of(body, started)

    def _cap(self, text: Any) -> tuple[str, bool]:
        raw = str(text or "").encode()
        if len(raw) <= self.output_cap_bytes:
            return raw.decode(), False
        return raw[: self.output_cap_bytes].decode(errors="ignore"), True

    def _result_of(self, body: Any, started: float) -> SandboxResult:
        if not isinstance(body, dict) or body.get("status") not in {
            "Success",
            "Failed",
            "SandboxError",
        }:
            return _sandbox_error(f"unexpected SandboxFusion answer: {str(body)[:300]}", started)
        if body["status"] == "SandboxError":
            return _sandbox_error(
                f"SandboxFusion: {body.get('message') or 'SandboxError'}", started
            )
        compiled = body.get("compile_result")
        run = body.get("run_result")
        if not isinstance(run, dict):
            if isinstance(compiled, dict) and compiled.get("return_code") not in (0, None):
                stderr, cut = self._cap(compiled.get("stderr"))
                return SandboxResult(
                    Status.FAILED,
                    exit_code=compiled.get("return_code"),
                    stderr=stderr,
                    stderr_truncated=cut,
                    wall_time_s=round(time.monotonic() - started, 6),
                    error="compilation failed",
                )
            return _sandbox_error(f"SandboxFusion answer without run_result: {body}", started)
        stdout, stdout_cut = self._cap(run.get("stdout"))
        stderr, stderr_cut = self._cap(run.get("stderr"))
        return_code = run.get("return_code")
        signal_number = None
        run_status = run.get("status")
        if run_status == "TimeLimitExceeded":
            status, error = Status.TIMEOUT, f"run_timeout of {self.run_timeout_s:g}s exceeded"
        elif run_status != "Finished":
            status, error = Status.SANDBOX_ERROR, f"SandboxFusion run status {run_status!r}"
        elif return_code == 0:
            status, error = Status.OK, None
        elif isinstance(return_code, int) and return_code < 0:
            signal_number = -return_code
            status, error = Status.CRASHED, f"killed by signal {signal_number}"
        elif "MemoryError" in stderr:
            status, error = Status.MEMORY, "MemoryError"
        else:
            status, error = Status.FAILED, f"exited with code {return_code}"
        if status is not Status.SANDBOX_ERROR and (stdout_cut or stderr_cut):
            status, error = Status.OUTPUT_LIMIT, "output exceeded its cap"
        execution_time = run.get("execution_time")
        return SandboxResult(
            status=status,
            exit_code=return_code if isinstance(return_code, int) else None,
            signal=signal_number,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=stdout_cut,
            stderr_truncated=stderr_cut,
            wall_time_s=round(time.monotonic() - started, 6),
            cpu_time_s=float(execution_time) if isinstance(execution_time, (int, float)) else 0.0,
            error=error,
            metadata={"provider": "sandbox_fusion", "response_status": body["status"]},
        )


def _sandbox_error(message: str, started: float) -> SandboxResult:
    return SandboxResult(
        Status.SANDBOX_ERROR, error=message, wall_time_s=round(time.monotonic() - started, 6)
    )


def _last_line(text: str) -> str | None:
    lines = text.strip().splitlines()
    return lines[-1][:1000] if lines else None
