"""The verdict of one sandboxed run."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Status(enum.StrEnum):
    """How a run ended.

    ``ok``: exited 0 (and every test passed).  ``failed``: non-zero exit, an exception, or
    a failing test: a wrong answer.  ``timeout``: wall or CPU time limit.  ``memory``: the
    address-space limit (MemoryError).  ``output_limit``: wrote more than the stdout/stderr
    cap or a file over the file-size limit.  ``crashed``: killed by a signal (segfault,
    abort, killed itself).  ``sandbox_error``: the infrastructure failed (zygote died, fork
    failed, set-up failed): not the program's fault, never to be scored as a wrong answer.
    Compiled languages (:mod:`rewardkit_sandbox.languages`) add ``compile_error`` and
    ``compile_timeout`` (the candidate's fault: a wrong answer) and ``toolchain_missing``
    (the machine lacks the compiler or runtime: infrastructure, like ``sandbox_error``).
    """

    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT_LIMIT = "output_limit"
    CRASHED = "crashed"
    SANDBOX_ERROR = "sandbox_error"
    COMPILE_ERROR = "compile_error"
    COMPILE_TIMEOUT = "compile_timeout"
    TOOLCHAIN_MISSING = "toolchain_missing"


@dataclass(frozen=True)
class TestResult:
    """One assert-style test: ``status`` is ``None`` when it was not run (stopped early)."""

    __test__ = False  # not a pytest test class

    index: int
    status: Status | None
    error: str | None = None
    wall_time_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status is Status.OK


@dataclass(frozen=True)
class SandboxResult:
    """Everything known about one run; ``stdout``/``stderr`` are capped (see the flags)."""

    status: Status
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0
    tests: tuple[TestResult, ...] | None = None
    error: str | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    #: stdout as written, for a run asked with ``raw_stdout=True`` (``stdout`` is then
    #: empty): a task that answers with binary data (a compiled-language build)
    stdout_bytes: bytes | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def tests_passed(self) -> int:
        return sum(test.passed for test in self.tests or ())
