"""Runners: one interface over "run this program (with this input or these tests)".

``PythonRunner`` uses a local ``SandboxPool``; ``rewardkit_sandbox.remote`` has the
remote clients (SandboxFusion, Piston, Judge0, E2B).  Another language or provider
implements ``Runner`` and plugs in the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rewardkit_sandbox.limits import SandboxLimits
from rewardkit_sandbox.pool import SandboxPool
from rewardkit_sandbox.remote.sandbox_fusion import SandboxFusionRunner
from rewardkit_sandbox.result import SandboxResult


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


__all__ = ["PythonRunner", "Runner", "SandboxFusionRunner"]
