"""rewardkit-sandbox: isolated execution of untrusted code for reward computation.

>>> from rewardkit_sandbox import SandboxPool, PythonRunner
>>> with SandboxPool(size=1) as pool:
...     runner = PythonRunner(pool)
...     result = runner.run("def add(a, b): return a + b", tests=["assert add(1, 2) == 3"])
...     result.status, result.tests_passed
(<Status.OK: 'ok'>, 1)
"""

from typing import TYPE_CHECKING

from rewardkit_sandbox.languages import (
    LANGUAGES,
    CompileCache,
    CompiledRunner,
    language_named,
    shared_compile_cache,
)
from rewardkit_sandbox.layers import Layer, LayerReport
from rewardkit_sandbox.limits import SandboxLimits
from rewardkit_sandbox.pool import (
    DEFAULT_PRELOAD,
    SandboxPool,
    SandboxTask,
    SandboxUidsTakenError,
    SandboxUnavailableError,
    detect_layers,
)
from rewardkit_sandbox.result import SandboxResult, Status, TestResult

if TYPE_CHECKING:
    from rewardkit_sandbox.runners import PythonRunner, Runner, SandboxFusionRunner

doctor = detect_layers

#: the runners, imported when first named: the remote ones share rewardkit's node-wide
#: ExecutionBudget (rewardkit.execution.budget), while the local pool above stands alone
#: (a system python3 with only this package on its path can run it)
_RUNNERS = ("PythonRunner", "Runner", "SandboxFusionRunner")


def __getattr__(name: str) -> object:
    if name in _RUNNERS:
        from rewardkit_sandbox import runners

        return getattr(runners, name)
    raise AttributeError(f"module 'rewardkit_sandbox' has no attribute {name!r}")

__all__ = [
    "DEFAULT_PRELOAD",
    "LANGUAGES",
    "CompileCache",
    "CompiledRunner",
    "Layer",
    "LayerReport",
    "PythonRunner",
    "Runner",
    "SandboxFusionRunner",
    "SandboxLimits",
    "SandboxPool",
    "SandboxResult",
    "SandboxTask",
    "SandboxUidsTakenError",
    "SandboxUnavailableError",
    "Status",
    "TestResult",
    "detect_layers",
    "doctor",
    "language_named",
    "shared_compile_cache",
]
