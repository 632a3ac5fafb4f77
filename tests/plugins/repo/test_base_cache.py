"""The cache of prepared base trees: a GRPO group of 16 patches of one task extracts the
base once and copies no file's data, and no row can change the base the next row gets."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_repo import FIX, MODULE, diff_of, make_repo

from rewardkit import Sample

rewardkit_repo = pytest.importorskip("rewardkit_repo")
workspace = pytest.importorskip("rewardkit_repo.workspace")


def _score(reference: dict[str, object], completion: str) -> Any:
    return rewardkit_repo.RepoTests().score(
        Sample(prompt="fix add", completion=completion, reference=reference))


def test_a_group_of_16_extracts_the_base_once_and_links_its_files(tmp_path: Path) -> None:
    reference = make_repo(tmp_path / "repo")
    wrong = diff_of(tmp_path / "repo", {"calc.py": MODULE.replace("a - b", "a * b")})
    group = [FIX if index % 2 == 0 else wrong for index in range(16)]
    before = dict(workspace.stats)
    values = [_score(reference, patch).value for patch in group]
    assert values == [1.0, 0.0] * 8
    assert workspace.stats["base_trees"] - before["base_trees"] == 1
    assert workspace.stats["rows"] - before["rows"] == 16
    # every file of every row was a link to the base: none was copied
    assert workspace.stats["copied_files"] == before["copied_files"]
    assert workspace.stats["linked_files"] - before["linked_files"] == 16 * 3


def test_a_patch_cannot_change_the_cached_base_for_the_next_row(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    reference = make_repo(repo)
    base = Path(workspace.base_tree(str(repo), str(reference["base_commit"])))
    module = (base / "calc.py").read_bytes()
    tests = (base / "tests" / "test_calc.py").read_bytes()
    # the fix, a rewrite of the tests (put back), a deletion and a new file
    hostile = FIX + diff_of(repo, {"tests/test_calc.py": "def test_add():\n    pass\n",
                                   "pytest.ini": None, "new.py": "x = 1\n"})
    first = workspace.prepare(str(repo), str(reference["base_commit"]), hostile, "")
    try:
        assert (Path(first.folder) / "calc.py").read_text() != module.decode()
        assert "calc.py" in first.candidate_files
        assert not os.path.samefile(Path(first.folder) / "calc.py", base / "calc.py")
        # the deleted configuration file and the rewritten test are put back
        folder = Path(first.folder)
        assert (folder / "pytest.ini").read_bytes() == (base / "pytest.ini").read_bytes()
        assert (Path(first.folder) / "tests" / "test_calc.py").read_bytes() == tests
    finally:
        first.close()
    assert (base / "calc.py").read_bytes() == module
    assert (base / "tests" / "test_calc.py").read_bytes() == tests
    assert (base / "pytest.ini").exists() and not (base / "new.py").exists()
    # the next row of the group sees the bug again: a patch that leaves it is paid 0
    assert _score(reference, diff_of(repo, {"README": "notes\n"})).value == 0.0
    assert _score(reference, FIX).value == 1.0


def test_an_untouched_file_is_encoded_from_the_base_a_changed_one_from_the_row(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    reference = make_repo(repo)
    prepared = workspace.prepare(str(repo), str(reference["base_commit"]), FIX, "")
    try:
        untouched = prepared.payload("pytest.ini")
        assert prepared.payload("pytest.ini") is untouched
        changed = prepared.payload("calc.py")
        assert b"a + b" in base64.b64decode(changed[1])
    finally:
        prepared.close()
