"""repo_tests on a real bug-fix task, built from a local copy of its public repository by
benchmarks/build_repo_tasks.py: the project's own fix is paid 1.0, the base tree and a
wrong patch 0. The copies are not part of this repository (nothing is downloaded at test
time): without one the test is skipped with the reason. The recorded run over all 15
tasks of benchmarks/repo_tasks_sources.toml is in docs/agentic.md."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

rewardkit_repo = pytest.importorskip("rewardkit_repo")

from rewardkit import Sample  # noqa: E402

#: where copies of the repositories are looked for (owner+name/repo, as the fetch tool
#: leaves them); REWARDKIT_REPO_MIRRORS overrides it
MIRRORS = Path(os.environ.get("REWARDKIT_REPO_MIRRORS", "/work/.mirror"))
#: one small task: cachetools 57d2e48 (Fix #387), unittest-style tests under src/ layout
FIX = "57d2e4813d9801f97034559e22428bac6f7c6c9b"


@pytest.fixture(scope="module")
def task() -> dict[str, Any]:
    if not (MIRRORS / "tkem+cachetools" / "repo").is_dir():
        pytest.skip(f"no local copy of tkem/cachetools under {MIRRORS} (real tasks are built "
                    "from fetched repositories, never downloaded by the tests); see "
                    "benchmarks/repo_tasks_sources.toml")
    from build_repo_tasks import build_all

    rows, left_out = build_all(MIRRORS, {}, only=[FIX])
    assert rows, left_out
    return rows[0]


def _score(task: dict[str, Any], patch: str) -> Any:
    from bench_repo_tasks import reference

    return rewardkit_repo.RepoTests().score(
        Sample(prompt="fix the bug", completion=patch, reference=reference(task)))


def test_the_task_is_derived_by_running_the_tests(task: dict[str, Any]) -> None:
    assert task["base_commit"] != task["fix_commit"]
    assert task["FAIL_TO_PASS"] and task["PASS_TO_PASS"]
    assert not set(task["FAIL_TO_PASS"]) & set(task["PASS_TO_PASS"])


def test_the_projects_own_fix_is_paid_and_the_base_and_a_wrong_patch_are_not(
        task: dict[str, Any]) -> None:
    from bench_repo_tasks import NOOP

    assert _score(task, task["patch"]).value == 1.0
    base = _score(task, NOOP)
    assert (base.value, base.status) == (0.0, "ok")
    assert any(base.details["tests"][test] != "passed" for test in task["FAIL_TO_PASS"])
    wrong = _score(task, task["wrong_patch"])
    assert (wrong.value, wrong.status) == (0.0, "ok")
