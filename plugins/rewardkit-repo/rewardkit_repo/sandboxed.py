"""One driver run in the shared sandbox pool, for every runner of ``repo_tests``.

A runner builds its driver's source, its JSON header and its limits; this runs the
driver under the node's execution budget and turns how the run ended into a score: past
the budget a timeout, a sandbox failure an error, a run the code under test ended
without a verdict (the driver shares the tests' uid: killed, out of memory or output)
0 with its status, and otherwise the driver's printed JSON report for the runner to judge.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rewardkit_code.sandboxes import local_budget, shared_sandbox_pool
from rewardkit_sandbox import SandboxLimits, SandboxPool, SandboxUnavailableError, Status

from rewardkit import Score


def run_driver(driver: str, header: dict[str, Any], limits: SandboxLimits,
               import_paths: tuple[str, ...], concurrency: int | None, time_budget_s: float,
               name: str, prepare: Callable[[SandboxPool, dict[str, Any]], None] | None = None,
               **details: Any) -> Score | dict[str, Any]:
    """The driver's report (a dict), or the score that ends the row without one.
    ``prepare(pool, header)``: adds to the header what needs the pool (in the budget)."""
    try:
        pool = shared_sandbox_pool(concurrency, import_paths)
    except SandboxUnavailableError as error:
        return Score.error(f"no sandbox: {error}")
    with local_budget(concurrency).acquire():
        if prepare is not None:
            prepare(pool, header)
        result = pool.run(driver + "\nmain()\n", stdin=json.dumps(header), limits=limits)
    if result.status is Status.TIMEOUT:
        return Score.timeout(f"the tests ran past {time_budget_s:g} s")
    if result.status is Status.SANDBOX_ERROR:
        return Score.error(f"the sandbox failed: {result.error}")
    if result.status is not Status.OK:
        return Score.ok(0.0, f"the test run ended without a verdict ({result.status}): "
                             f"{(result.error or result.stderr)[-300:]}", **details)
    try:
        report: dict[str, Any] = json.loads(result.stdout)
    except ValueError:
        return Score.error(f"the {name} printed no verdict")
    return report
