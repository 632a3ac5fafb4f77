"""Reading a run's result: the zygote's facts about a finished run (exit code, signal,
kill reason, test records) turned into a :class:`SandboxResult` with its status."""

from __future__ import annotations

import signal
from typing import Any

from rewardkit_sandbox.limits import SandboxLimits
from rewardkit_sandbox.result import SandboxResult, Status, TestResult


def verdict(
    finished: dict[str, Any],
    request: dict[str, Any],
    limits: SandboxLimits,
    stdout: bytes,
    stderr: bytes,
    wall_time_s: float,
    raw_stdout: bool = False,
) -> SandboxResult:
    """Turn the zygote's facts about a run into a status (``raw_stdout``: stdout kept as
    bytes, in ``stdout_bytes``, not decoded)."""
    exit_code = finished.get("exit_code")
    signal_number = finished.get("signal")
    cpu_time_s = float(finished.get("cpu_time_s", 0.0))
    tests = _test_results(finished, request)
    status, error = _status_of(finished, limits, tests, exit_code, signal_number, cpu_time_s)
    stdout_truncated = bool(finished.get("stdout_truncated"))
    stderr_truncated = bool(finished.get("stderr_truncated"))
    if stdout_truncated or stderr_truncated:
        status, error = Status.OUTPUT_LIMIT, error or "output exceeded its cap"
    if finished.get("infra_error"):
        status, error = Status.SANDBOX_ERROR, str(finished["infra_error"])
    return SandboxResult(
        status=status,
        exit_code=exit_code,
        signal=signal_number,
        stdout="" if raw_stdout else stdout.decode("utf-8", errors="replace"),
        stderr=stderr.decode("utf-8", errors="replace"),
        stdout_truncated=stdout_truncated,
        stderr_truncated=stderr_truncated,
        wall_time_s=round(wall_time_s, 6),
        cpu_time_s=cpu_time_s,
        tests=tests,
        error=error,
        metadata={"max_rss_kib": finished.get("max_rss_kib"),
                  **({"harness": tuple(finished["harness"])} if finished.get("harness") else {})},
        stdout_bytes=stdout if raw_stdout else None,
    )


def _status_of(
    finished: dict[str, Any],
    limits: SandboxLimits,
    tests: tuple[TestResult, ...] | None,
    exit_code: int | None,
    signal_number: int | None,
    cpu_time_s: float,
) -> tuple[Status, str | None]:
    kill_reason = finished.get("kill_reason")
    if kill_reason == "timeout":
        return Status.TIMEOUT, f"wall time limit of {limits.wall_time_s:g}s exceeded"
    if kill_reason == "output_limit":
        return Status.OUTPUT_LIMIT, "output exceeded its cap"
    if finished.get("setup_incomplete"):
        return Status.SANDBOX_ERROR, "the task child ended before its set-up completed"
    if finished.get("memory"):
        return Status.MEMORY, f"memory limit of {limits.memory_bytes} bytes exceeded"
    if signal_number is not None:
        cpu_limit = max(1, -(-limits.cpu_time_s // 1))
        if signal_number == signal.SIGXCPU or (
            signal_number == signal.SIGKILL and cpu_time_s >= cpu_limit
        ):
            return Status.TIMEOUT, f"CPU time limit of {cpu_limit:g}s exceeded"
        if signal_number == signal.SIGXFSZ:
            return Status.OUTPUT_LIMIT, f"file size limit of {limits.file_size_bytes} exceeded"
        return Status.CRASHED, f"killed by {signal.Signals(signal_number).name}"
    if tests is None:
        if exit_code == 0:
            return Status.OK, None
        return Status.FAILED, f"exited with code {exit_code}"
    for test in tests:
        if test.status is not None and test.status is not Status.OK:
            return test.status, f"test {test.index}: {test.error}"
    if exit_code != 0 or any(test.status is None for test in tests):
        return Status.FAILED, "the test harness ended before every test ran"
    return Status.OK, None


def _test_results(
    finished: dict[str, Any], request: dict[str, Any]
) -> tuple[TestResult, ...] | None:
    if request.get("test_spans") is None:
        return None
    reported: dict[int, dict[str, Any]] = {}
    for record in finished.get("tests") or []:
        index = record.get("index")
        if isinstance(index, int) and index not in reported:
            reported[index] = record
    results = []
    for index in range(len(request["test_spans"])):
        record = reported.get(index)
        if record is None:
            results.append(TestResult(index, None))
            continue
        try:
            status = Status(str(record.get("status")))
        except ValueError:
            status = Status.FAILED
        results.append(
            TestResult(index, status, record.get("error"), float(record.get("wall_time_s", 0.0)))
        )
    return tuple(results)
