"""The path from ``RewardSet.score`` to a verdict names its layers (issue 38 item 5):
dispatch (``dispatch_component``), execute (``execute_reward``, ``execute_inline``,
``execute_in_workers``, ``WorkerPool.execute``), the worker's ``_score_chunk``, and the
code reward's ``_execute`` / ``_judge_tests`` / ``_judge_cases``, where 15 functions
were named ``run*``. A ``threading.Thread.run`` override would keep its name."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import rewardkit.execution

_ROOT = Path(__file__).resolve().parents[2]
_MODULES = [*Path(rewardkit.execution.__file__).parent.glob("*.py"),
            _ROOT / "plugins/rewardkit-code/rewardkit_code/code_execution.py"]


def _run_named(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            bases = {ast.unparse(base) for base in node.bases}
            if bases & {"Thread", "threading.Thread"}:
                continue  # its run is threading.Thread.run
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = node.name.lstrip("_")
            if name == "run" or name.startswith("run_"):
                found.append(f"{path.name}:{node.lineno} {node.name}")
    return found


def test_no_function_on_the_scoring_path_is_named_run():
    assert len(_MODULES) > 10
    assert [hit for path in _MODULES for hit in _run_named(path)] == []


def test_the_layers_are_where_their_names_say():
    from rewardkit.execution import dispatch_component, execute_reward
    from rewardkit.execution.pool import WorkerPool

    assert dispatch_component.__module__ == "rewardkit.execution.dispatch"
    assert execute_reward.__module__ == "rewardkit.execution.local"
    assert callable(WorkerPool.execute) and not hasattr(WorkerPool, "run")
    assert not issubclass(WorkerPool, threading.Thread)
