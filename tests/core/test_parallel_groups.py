"""Under ``pytest -n 2 --dist loadgroup`` an ``xdist_group`` runs whole, in order, on
one worker (tests/xdist_groups.py; pytest-xdist 3.8 alone does not on pytest 9.2).

Two real workers run a module of grouped tests that each append their worker and name
to one file, beside ungrouped tests that the other worker may take."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("xdist")

TESTS = Path(__file__).resolve().parents[1]

GROUPED = '''
import os, pytest
pytestmark = pytest.mark.xdist_group("chain")
LOG = os.environ["GROUP_LOG"]

@pytest.mark.parametrize("step", range(12))
def test_step(step):
    with open(LOG, "a") as log:
        log.write(f"{os.environ['PYTEST_XDIST_WORKER']} {step}\\n")
'''

UNGROUPED = '''
import time, pytest

@pytest.mark.parametrize("n", range(12))
def test_free(n):
    time.sleep(0.05)
'''


def test_a_group_runs_whole_and_in_order_on_one_worker(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch):
    log = pytester.path / "group.log"
    monkeypatch.setenv("GROUP_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makeconftest('pytest_plugins = ["xdist_groups"]\n')
    pytester.makepyfile(test_grouped=GROUPED, test_free=UNGROUPED)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup",
                                           "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=24)
    lines = [line.split() for line in log.read_text().splitlines()]
    assert len({worker for worker, _ in lines}) == 1, lines
    assert [int(step) for _, step in lines] == list(range(12))
