"""The private copy a ``repo_tests`` run tests: the base commit, the model's patch, then
every test file and test-configuration file put back to the base, then the test patch.

What counts as test or configuration (:func:`is_protected`): ``conftest.py`` anywhere,
``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``sitecustomize.py``, ``usercustomize.py``,
``.pth`` files, test modules (``test_*.py``, ``*_test.py``), anything under a ``tests``,
``test`` or ``testing`` folder (their ``__init__.py`` too), and ``pyproject.toml`` when the
patch changed its ``[tool.pytest.ini_options]``. A protected file the patch changed is
restored, one it added is removed, and so is every symbolic link the patch made.
The copy has no ``.git``: the repository's history is read once, outside the sandbox.

The base tree of a (repository, commit) is made once per process and kept (a GRPO group of
16 patches of one task extracts it once); each row's copy is made of hard links to it, so
no file's data is copied, and a file the row leaves untouched is read and encoded for the
sandbox once (:meth:`Workspace.payload`). Nothing writes a linked file in place: ``git
apply`` removes a file before it writes the patched one, and a file put back is removed
first, so a row can change its copy, never the base of the next row.
"""

from __future__ import annotations

import atexit
import base64
import fnmatch
import os
import re
import shutil
import subprocess
import tempfile
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

_PROTECTED_NAMES = frozenset({"conftest.py", "pytest.ini", "tox.ini", "setup.cfg",
                              "sitecustomize.py", "usercustomize.py", ".pytest.ini"})
_TEST_FOLDERS = frozenset({"tests", "test", "testing"})
_FENCE = re.compile(r"```(?:diff|patch)?[ \t]*\n(.*?)```", re.DOTALL)


class TaskError(ValueError):
    """The row itself is wrong (repository, commit, test patch, test id): not the model's."""


def is_protected(relative: str) -> bool:
    """Whether ``relative`` (a path in the repository, ``/``-separated) is a test file or
    a test-configuration file, which the model's patch may not change."""
    parts = relative.split("/")
    name = parts[-1]
    return (
        name in _PROTECTED_NAMES
        or name.endswith(".pth")
        or fnmatch.fnmatch(name, "test_*.py")
        or fnmatch.fnmatch(name, "*_test.py")
        or any(part in _TEST_FOLDERS for part in parts[:-1])
    )


def extract_patch(completion: str) -> str | None:
    """The unified diff in ``completion``: the last fenced ```diff block, else the text
    itself from its first ``diff --git`` / ``--- `` line; None when there is none."""
    fenced = _FENCE.findall(completion)
    text = fenced[-1] if fenced else completion
    match = re.search(r"^(diff --git |--- )", text, re.MULTILINE)
    if match is None:
        return None
    patch = text[match.start():]
    if not re.search(r"^(@@ |rename from |deleted file mode |GIT binary patch)", patch,
                     re.MULTILINE):
        return None
    return patch if patch.endswith("\n") else patch + "\n"


def _git(args: list[str], cwd: str | None = None, stdin: str | None = None,
         ) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
           "GIT_CEILING_DIRECTORIES": "/"}
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env=env, timeout=120, check=False)


_base_lock = threading.Lock()
_bases: dict[tuple[str, str], str] = {}
#: (st_dev, st_ino) of each file of a kept base tree -> [mode, base64 of its bytes]; the
#: base trees live as long as the process, so their inodes are never reused meanwhile
_encoded: dict[tuple[int, int], list[Any]] = {}
_base_inodes: set[tuple[int, int]] = set()
#: what the cache saved, for tests and benchmarks: base trees made, files linked, rows
stats = {"base_trees": 0, "linked_files": 0, "copied_files": 0, "rows": 0}
#: folders this process made for base trees and unbundled repositories, removed at exit
_made: list[str] = []


@atexit.register
def _remove_made() -> None:
    if os.getpid() == _owner:
        for folder in _made:
            shutil.rmtree(folder, ignore_errors=True)


_owner = os.getpid()


def base_tree(repo: str, commit: str) -> str:
    """A folder holding ``commit``'s tree of ``repo``, made once per process."""
    if not repo or not commit:
        raise TaskError("the reference needs `repo` (a git repository path) and `base_commit`")
    with _base_lock:
        key = (os.path.realpath(repo), commit)
        if key in _bases and os.path.isdir(_bases[key]):
            return _bases[key]
        if os.path.isfile(repo) and repo.endswith(".bundle"):
            repo = _unbundled(repo)
        if not os.path.isdir(repo):
            raise TaskError(f"repository {repo!r} does not exist")
        resolved = _git(["-C", repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"])
        if resolved.returncode != 0:
            raise TaskError(f"commit {commit!r} is not in repository {repo!r}")
        folder = tempfile.mkdtemp(prefix="rewardkit-repo-base-")
        _made.append(folder)
        archive = subprocess.run(["git", "-C", repo, "archive", "--format=tar",
                                  resolved.stdout.strip()], capture_output=True, check=False)
        if archive.returncode != 0:
            raise TaskError(f"git archive of {commit!r} failed: {archive.stderr.decode()[:200]}")
        subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
        for path in _files(folder).values():
            if not path.is_symlink() and path.is_file():
                status = path.stat()
                _base_inodes.add((status.st_dev, status.st_ino))
        _bases[key] = folder
        stats["base_trees"] += 1
        return folder


def _unbundled(bundle: str) -> str:
    """A clone of the ``git bundle`` file ``bundle`` (a repository shipped as one file)."""
    folder = tempfile.mkdtemp(prefix="rewardkit-repo-bundle-")
    _made.append(folder)
    done = _git(["clone", "-q", "--bare", os.path.abspath(bundle), folder])
    if done.returncode != 0:
        raise TaskError(f"{bundle!r} is not a git bundle: {done.stderr.strip()[:200]}")
    return folder


def _apply(patch: str, folder: str) -> str | None:
    """Apply ``patch`` in ``folder`` (no repository there); git's complaint, or None."""
    if re.search(r"^(---|\+\+\+) (a/|b/)?\.git/|^diff --git a/\.git/", patch, re.MULTILINE):
        return "the patch touches .git"
    done = _git(["apply", "--whitespace=nowarn", "-"], cwd=folder, stdin=patch)
    return None if done.returncode == 0 else (done.stderr.strip() or "git apply failed")[:500]


def _files(folder: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root, dirs, names in os.walk(folder):
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]:
            path = Path(root, name)
            found[path.relative_to(folder).as_posix()] = path
    return found


def _pytest_section(path: Path) -> object:
    try:
        return tomllib.loads(path.read_text()).get("tool", {}).get("pytest")
    except (OSError, ValueError):
        return "unreadable"


class Workspace:
    """The prepared copy: ``folder``, the files the candidate changed (``candidate_files``),
    the protected ones (``test_files``), and what was put back (``discarded``)."""

    def __init__(self, folder: str, candidate_files: list[str], test_files: list[str],
                 discarded: list[str]) -> None:
        self.folder = folder
        self.candidate_files = candidate_files
        self.test_files = test_files
        self.discarded = discarded

    def payload(self, relative: str) -> list[Any]:
        """``[mode, base64 of the bytes]`` of a regular file of the copy: a link to the
        base tree is encoded once per process, any other file each time."""
        full = os.path.join(self.folder, relative)
        status = os.lstat(full)
        key = (status.st_dev, status.st_ino)
        cached = _encoded.get(key)
        if cached is not None:
            return cached
        with open(full, "rb") as handle:
            encoded = [status.st_mode & 0o755, base64.b64encode(handle.read()).decode()]
        if key in _base_inodes:
            _encoded[key] = encoded
        return encoded

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def prepare(repo: str, commit: str, patch: str, test_patch: str,
            protected: Callable[[str], bool] = is_protected) -> Workspace | str:
    """The workspace, or why the model's patch does not apply (a string). ``protected``
    says which paths are tests or test configuration (the Go runner has its own).

    Raises :class:`TaskError` for a missing repository or commit or a test patch that
    does not apply to the base.
    """
    base = base_tree(repo, commit)
    folder = tempfile.mkdtemp(prefix="rewardkit-repo-")
    shutil.copytree(base, folder, symlinks=True, dirs_exist_ok=True, copy_function=_link)
    stats["rows"] += 1
    try:
        problem = _apply(patch, folder)
        if problem is not None:
            shutil.rmtree(folder, ignore_errors=True)
            return problem
        discarded = _put_back(base, folder, _patched(test_patch), protected)
        if test_patch.strip():
            problem = _apply(test_patch, folder)
            if problem is not None:
                raise TaskError(f"the test patch does not apply to {commit!r}: {problem}")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    base_files = _files(base)
    candidate, tests = [], []
    for relative, path in _files(folder).items():
        if protected(relative) or relative in _patched(test_patch):
            tests.append(relative)
        elif relative not in base_files or not _same(path, base_files[relative]):
            candidate.append(relative)
    return Workspace(folder, candidate, tests, discarded)


def _link(source: str, target: str) -> None:
    """Link ``target`` to the base tree's ``source`` (a copy where links cannot be made)."""
    try:
        os.link(source, target)
        stats["linked_files"] += 1
    except OSError:
        shutil.copy2(source, target)
        stats["copied_files"] += 1


def _same(path: Path, original: Path) -> bool:
    """Whether ``path`` holds the bytes of the base tree's ``original`` (a link to it does)."""
    if path.is_symlink() or original.is_symlink():
        return path.is_symlink() == original.is_symlink() and \
            os.readlink(path) == os.readlink(original)
    if os.path.samefile(path, original):
        return True
    return path.read_bytes() == original.read_bytes()


def _patched(patch: str) -> set[str]:
    """The paths a patch writes or removes."""
    return set(re.findall(r"^(?:\+\+\+ b|--- a)/(\S+)", patch, re.MULTILINE))


def _put_back(base: str, folder: str, also: set[str],
              is_protected: Callable[[str], bool] = is_protected) -> list[str]:
    """Restore protected files (and the paths in ``also``: the test patch's) and links to
    ``base``; the paths it touched."""
    base_files = _files(base)
    touched: list[str] = []
    for relative, path in sorted(_files(folder).items()):
        original = base_files.get(relative)
        link = path.is_symlink() and (original is None or not original.is_symlink()
                                      or os.readlink(original) != os.readlink(path))
        protected = is_protected(relative) or relative in also
        if relative == "pyproject.toml" and original is not None:
            protected = _pytest_section(path) != _pytest_section(original)
        if not (link or protected):
            continue
        if original is None:
            if path.is_symlink() or not path.is_dir():
                path.unlink()
                touched.append(relative)
        elif link or not _same(path, original):
            path.unlink()
            shutil.copy2(original, path, follow_symlinks=False)
            touched.append(relative)
    for relative in base_files:
        target = Path(folder, relative)
        if (is_protected(relative) or relative in also) and not target.exists() \
                and not target.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(base_files[relative], target, follow_symlinks=False)
            touched.append(relative)
    return touched
