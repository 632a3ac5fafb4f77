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


def _commits(repo: Path, count: int, size: int = 0) -> list[str]:
    """``count`` more commits of ``repo``, each a distinct base tree (``size`` bytes of
    data in a file of its own)."""
    from tiny_repo import git

    made = []
    for index in range(count):
        (repo / "data.bin").write_bytes(bytes([index]) * size if size else b"%d" % index)
        git(repo, "add", "data.bin")
        git(repo, "commit", "-q", "-m", f"tree {index}")
        made.append(git(repo, "rev-parse", "HEAD"))
    return made


def test_past_its_bound_the_cache_removes_the_least_recently_used_tree_not_one_in_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the cache kept every base tree for the process's life: a training run over many
    # repositories filled the disk
    monkeypatch.setenv("REWARDKIT_REPO_BASE_CACHE_TREES", "2")
    repo = tmp_path / "repo"
    make_repo(repo)
    first, *others, last = _commits(repo, 5)
    before = dict(workspace.stats)
    held = workspace.prepare(str(repo), first, FIX, "")  # a row using `first`'s tree
    try:
        held_base = Path(workspace.base_tree(str(repo), first))
        payload = held.payload("pytest.ini")  # encoded once, from the base
        folders = [Path(workspace.base_tree(str(repo), commit)) for commit in others]
        # four trees past a bound of two: the oldest not in use went, the used one stayed
        assert held_base.is_dir() and (held_base / "calc.py").is_file()
        assert not folders[0].exists() and not folders[1].exists()
        assert folders[2].is_dir()
        assert len(workspace._bases) == 2
        assert held.payload("pytest.ini") is payload
        assert (Path(held.folder) / "calc.py").read_text().count("a + b") == 1
    finally:
        held.close()
    # released, `first` is the least recently used: the next tree takes its place, and
    # its files' encodings go with it (their inode numbers may be reused by other files)
    newest = Path(workspace.base_tree(str(repo), last))
    assert not held_base.exists() and folders[2].is_dir() and newest.is_dir()
    assert len(workspace._bases) == 2
    assert workspace.stats["evicted"] - before["evicted"] >= 3
    assert all(inode in workspace._base_inodes for inode in workspace._encoded)
    ini = os.lstat(newest / "pytest.ini")
    assert (ini.st_dev, ini.st_ino) in workspace._base_inodes
    # an evicted tree is made again when a row needs it, and grades as before
    assert _score({**make_reference(repo), "base_commit": first}, FIX).value == 1.0
    assert workspace.stats["base_trees"] - before["base_trees"] == 6


def make_reference(repo: Path) -> dict[str, object]:
    return {"repo": str(repo), "test_patch": "",
            "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
            "PASS_TO_PASS": ["tests/test_calc.py::test_mul"]}


def test_the_byte_bound_counts_the_trees_files(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDKIT_REPO_BASE_CACHE_MB", "1")
    repo = tmp_path / "repo"
    make_repo(repo)
    big = _commits(repo, 2, size=700 * 1024)
    one = Path(workspace.base_tree(str(repo), big[0]))
    two = Path(workspace.base_tree(str(repo), big[1]))  # 1.4 MB together
    assert two.is_dir() and not one.exists()


def test_a_bound_that_is_not_a_positive_number_is_the_row_s_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    reference = make_repo(repo)
    monkeypatch.setenv("REWARDKIT_REPO_BASE_CACHE_TREES", "lots")
    score = _score(reference, FIX)
    assert score.status == "error"
    assert "REWARDKIT_REPO_BASE_CACHE_TREES='lots'" in (score.reason or "")
    assert "positive whole number" in (score.reason or "")


_CHILD = """
import os, signal, sys
sys.path.insert(0, {here!r})
from rewardkit_repo import workspace
folder = workspace.base_tree(sys.argv[1], sys.argv[2])
print(workspace._root, flush=True)
if sys.argv[3] == "crash":  # killed in the middle of writing a tree
    partial = os.path.join(workspace._root, "base-partial")
    os.mkdir(partial)
    open(os.path.join(partial, "half.py"), "w").write("x = ")
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.read()  # alive until told
"""


def test_a_killed_process_s_trees_are_removed_by_the_next_a_live_one_s_kept(
        tmp_path: Path) -> None:
    import subprocess

    repo = tmp_path / "repo"
    reference = make_repo(repo)
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    code = _CHILD.format(here=str(Path(__file__).parent))
    args = [sys.executable, "-c", code, str(repo), str(reference["base_commit"])]
    crashed = subprocess.run([*args, "crash"], env=env, capture_output=True, text=True,
                             timeout=60)
    assert crashed.returncode == -9
    crashed_root = Path(crashed.stdout.strip())
    assert (crashed_root / "base-partial" / "half.py").exists()
    live = subprocess.Popen([*args, "live"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout is not None
        live_root = Path(live.stdout.readline().strip())
        assert live_root.is_dir()
        # the next process to make its cache removes the killed one's, not the live one's
        third = subprocess.Popen([*args, "live"], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert third.stdout is not None
        third_root = Path(third.stdout.readline().strip())
        assert not crashed_root.exists()
        assert live_root.is_dir() and any(live_root.glob("base-*/calc.py"))
        assert third_root.is_dir() and third_root != live_root
        third.communicate("", timeout=60)  # an ordinary exit removes its own
        assert not third_root.exists()
    finally:
        live.communicate("", timeout=60)
    assert not live_root.exists()
    assert sorted(p.name for p in temp.iterdir()) == []
