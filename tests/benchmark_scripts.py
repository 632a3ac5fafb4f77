"""The scripts of benchmarks/ loaded as modules by the tests that check them (their
headline parsers, corpora and helpers): ``from benchmark_scripts import BENCHMARKS, load``
(tests/ is on ``sys.path``, as for tests/xdist_groups.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str) -> ModuleType:
    """benchmarks/``name``.py, executed afresh as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
