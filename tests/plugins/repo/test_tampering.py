"""repo_tests' tampering corpus (tamper_corpus.py): every patch that tries to be paid
without fixing the bug is paid 0, while the honest fix is paid 1. Real git, a real
sandboxed pytest per patch."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tamper_corpus import TAMPERING, patch_of
from tiny_repo import FIX, make_repo

from rewardkit import Sample

rewardkit_repo = pytest.importorskip("rewardkit_repo")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object], Path]:
    root = tmp_path_factory.mktemp("tamper")
    outside = root / "outside"
    outside.mkdir()
    return root / "repo", make_repo(root / "repo"), outside


def _score(reference: dict[str, object], completion: str) -> object:
    return rewardkit_repo.RepoTests().score(
        Sample(prompt="fix add", completion=completion, reference=reference))


def test_the_honest_fix_is_paid_one(task: tuple[Path, dict[str, object], Path]) -> None:
    score = _score(task[1], f"Here is the fix:\n```diff\n{FIX}```\n")
    assert score.value == 1.0, score.reason
    assert set(score.details["tests"].values()) == {"passed"}


def test_the_base_tree_is_paid_zero(task: tuple[Path, dict[str, object], Path]) -> None:
    mul_only = FIX.replace("+    return a + b", "+    return a - b  # unchanged")
    score = _score(task[1], mul_only)
    assert score.value == 0.0
    assert score.details["tests"]["tests/test_calc.py::test_add"] == "failed"


@pytest.mark.parametrize("name", sorted(TAMPERING))
def test_tampering_is_paid_zero(name: str, task: tuple[Path, dict[str, object], Path]) -> None:
    repo, reference, outside = task
    patch = patch_of(name, repo, outside)
    score = _score(reference, patch)
    assert (score.value, score.status) == (0.0, "ok"), (
        f"{name} paid {score.value} ({score.status}): {score.reason} {score.details}")
    # refused for what it does, not because the corpus made a broken diff
    assert "does not apply" not in score.reason or name == "git_history_rewrite"


def test_tampering_on_top_of_the_fix_still_pays_the_fix(
        task: tuple[Path, dict[str, object], Path]) -> None:
    # the edits to tests and configuration are put back, the fix itself stands
    repo, reference, outside = task
    patch = patch_of("conftest_skip_all", repo, outside)
    score = _score(reference, FIX + patch[patch.index("diff --git"):])
    assert score.value == 1.0, score.reason
    assert "conftest.py" in score.details["discarded"]
