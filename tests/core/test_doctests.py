"""The ``>>>`` examples in rewardkit's docstrings run, so they cannot go stale."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rewardkit

MODULES = sorted(info.name for info in pkgutil.walk_packages(rewardkit.__path__, "rewardkit."))


def _examples(name: str) -> int:
    finder = doctest.DocTestFinder()
    return sum(len(t.examples) for t in finder.find(importlib.import_module(name)))


def test_some_modules_have_examples():
    assert sum(_examples(name) for name in MODULES) >= 5


@pytest.mark.parametrize("name", [m for m in MODULES if _examples(m)])
def test_examples_in_docstrings_run(name: str):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
