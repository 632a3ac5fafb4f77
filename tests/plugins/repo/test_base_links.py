"""A symbolic link the repository itself has (semver's tests/coerce.py points into docs/)
reaches the sandboxed test run as the file it points to; one leading out of the tree does
not, and a link the patch makes is still removed."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_repo import FIX, diff_of, git, make_repo

from rewardkit import Sample

rewardkit_repo = pytest.importorskip("rewardkit_repo")

TESTS = '''\
from calc import add, mul
from helper import expected


def test_add():
    assert add(2, 3) == expected()


def test_mul():
    assert mul(2, 3) == 6


def test_outside():
    import outside
    assert outside.x == 1
'''


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("links")
    repo = root / "repo"
    reference = make_repo(repo)
    (repo / "docs").mkdir()
    (repo / "docs" / "helper.py").write_text("def expected():\n    return 5\n")
    os.symlink("../docs/helper.py", repo / "tests" / "helper.py")
    (root / "outside.py").write_text("x = 1\n")
    os.symlink(str(root / "outside.py"), repo / "outside.py")
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    (repo / "pytest.ini").write_text("[pytest]\npythonpath = tests\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a helper linked from docs")
    reference["base_commit"] = git(repo, "rev-parse", "HEAD")
    return repo, reference


def _score(reference: dict[str, Any], completion: str) -> Any:
    return rewardkit_repo.RepoTests().score(
        Sample(prompt="fix add", completion=completion, reference=reference))


def test_a_link_of_the_repository_reaches_the_tests(task: tuple[Path, dict[str, Any]]) -> None:
    repo, reference = task
    score = _score(reference, FIX)
    assert score.value == 1.0, score.details.get("log")
    assert _score(reference, diff_of(repo, {"README": "x\n"})).value == 0.0


def test_a_link_out_of_the_tree_is_not_followed(task: tuple[Path, dict[str, Any]]) -> None:
    _, reference = task
    row = {**reference, "PASS_TO_PASS": ["tests/test_calc.py::test_outside"]}
    score = _score(row, FIX)
    assert score.value == 0.0
    assert score.details["tests"]["tests/test_calc.py::test_outside"] == "failed"
