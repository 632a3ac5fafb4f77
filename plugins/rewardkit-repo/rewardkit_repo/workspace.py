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
sandbox once (:meth:`Workspace.payload`). The kept trees are bounded (:func:`cache_bounds`:
``REWARDKIT_REPO_BASE_CACHE_MB``, default 2048, and ``REWARDKIT_REPO_BASE_CACHE_TREES``,
default 32, per process): past either bound the least recently used trees that no row is
using are removed, with their encoded files. A process's trees and rows live in one folder
of the temporary directory, locked while the process lives; a process that makes its
folder removes those of processes that ended without removing theirs (killed, or crashed
in the middle of writing a tree). A forked child starts a cache of its own. Nothing
writes a linked file in place: ``git apply`` removes a file before it writes the patched
one, and a file put back is removed first, so a row can change its copy, never the base
of the next row.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import fcntl
import fnmatch
import os
import re
import shutil
import subprocess
import tempfile
import threading
import tomllib
from collections import OrderedDict
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


#: the bounds of a process's cache of base trees, from the environment (read when a tree
#: is added): at most this many MiB of files and this many trees; past either, the least
#: recently used trees no row is using are removed
CACHE_MB_VARIABLE, CACHE_MB_DEFAULT = "REWARDKIT_REPO_BASE_CACHE_MB", 2048
CACHE_TREES_VARIABLE, CACHE_TREES_DEFAULT = "REWARDKIT_REPO_BASE_CACHE_TREES", 32
#: the prefix of the folder that holds one process's base trees (and its lock file)
_ROOT_PREFIX = "rewardkit-repo-bases-"
_LOCK_NAME = ".owner.lock"


class _Base:
    """One cached base tree: its folder, the bytes of its files, the (st_dev, st_ino) of
    its regular files, and how many rows are using it now (never removed while > 0)."""

    __slots__ = ("folder", "inodes", "size", "users")

    def __init__(self, folder: str, size: int, inodes: set[tuple[int, int]]) -> None:
        self.folder, self.size, self.inodes, self.users = folder, size, inodes, 0


_base_lock = threading.RLock()
#: (realpath of the repository, commit) -> its base tree, least recently used first
_bases: OrderedDict[tuple[str, str], _Base] = OrderedDict()
#: (st_dev, st_ino) of each file of a cached base tree -> [mode, base64 of its bytes]; an
#: entry goes with its tree, so an inode number reused after the tree's removal is never
#: read from here
_encoded: dict[tuple[int, int], list[Any]] = {}
_base_inodes: set[tuple[int, int]] = set()
#: what the cache saved, for tests and benchmarks: base trees made, files linked, rows
#: prepared, base trees removed to stay within the bounds
stats = {"base_trees": 0, "linked_files": 0, "copied_files": 0, "rows": 0, "evicted": 0}
#: this process's folder of base trees (made on first use) and its lock file, held open:
#: the lock tells other processes that the folder's owner is alive
_root: str | None = None
_root_lock: int | None = None
_owner = os.getpid()


@atexit.register
def _remove_made() -> None:
    if os.getpid() == _owner and _root is not None:
        shutil.rmtree(_root, ignore_errors=True)


def _forget_parents_cache() -> None:
    """In a forked child: the parent's trees are the parent's to remove (it may do so at
    any time), so the child starts a cache of its own."""
    global _root, _root_lock, _owner, _base_lock
    _base_lock = threading.RLock()
    _bases.clear()
    _encoded.clear()
    _base_inodes.clear()
    if _root_lock is not None:
        with contextlib.suppress(OSError):
            os.close(_root_lock)  # the parent's lock stays held by the parent's descriptor
    _root = _root_lock = None
    _owner = os.getpid()


os.register_at_fork(after_in_child=_forget_parents_cache)


def _cache_root() -> str:
    """This process's folder of base trees and rows; made on first use, after removing
    the folders of processes that ended without removing theirs (killed, crashed
    mid-extraction). A folder gets its name only once its owner holds its lock, so no
    process takes another's folder, just made, for an abandoned one."""
    global _root, _root_lock
    if _root is not None and os.path.isdir(_root):
        return _root
    temp = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(temp):
            if name.startswith(_ROOT_PREFIX):
                _remove_if_abandoned(os.path.join(temp, name))
    making = tempfile.mkdtemp(prefix="." + _ROOT_PREFIX, dir=temp)
    lock = os.open(os.path.join(making, _LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                   0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    root = os.path.join(temp, os.path.basename(making)[1:])
    os.rename(making, root)
    _root, _root_lock = root, lock
    return root


def _remove_if_abandoned(folder: str) -> None:
    """Remove another process's folder of base trees when its owner has ended: its lock
    is free (a live owner holds it; the kernel frees it when the owner dies, however)."""
    try:
        lock = os.open(os.path.join(folder, _LOCK_NAME), os.O_RDWR | os.O_CLOEXEC)
    except OSError:  # a folder whose owner has not made its lock yet, or not ours
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(lock)


class CacheConfigError(TaskError):
    """``REWARDKIT_REPO_BASE_CACHE_MB`` or ``..._TREES`` is not a positive whole number."""


def cache_bounds() -> tuple[int, int]:
    """(bytes, trees): the bounds of this process's cache of base trees, from
    ``REWARDKIT_REPO_BASE_CACHE_MB`` (default 2048) and ``REWARDKIT_REPO_BASE_CACHE_TREES``
    (default 32). A value that is not a positive whole number is refused, naming it."""
    bounds = []
    for variable, default in ((CACHE_MB_VARIABLE, CACHE_MB_DEFAULT),
                              (CACHE_TREES_VARIABLE, CACHE_TREES_DEFAULT)):
        text = os.environ.get(variable, "").strip()
        try:
            value = int(text) if text else default
        except ValueError:
            value = 0
        if value < 1:
            raise CacheConfigError(f"{variable}={text!r}: the base-tree cache's bound must "
                                   f"be a positive whole number (default {default})")
        bounds.append(value)
    return bounds[0] << 20, bounds[1]


def _evict(limit_bytes: int, limit_trees: int) -> None:
    """Remove the least recently used trees no row is using until the cache is within its
    bounds (trees in use stay, even past them). Called with the lock held."""
    size = sum(base.size for base in _bases.values())
    for key in list(_bases):
        if size <= limit_bytes and len(_bases) <= limit_trees:
            return
        if _bases[key].users:
            continue
        size -= _forget(key).size
        stats["evicted"] += 1


def _forget(key: tuple[str, str]) -> _Base:
    """Take a tree out of the cache and remove its folder (the lock held, no user)."""
    base = _bases.pop(key)
    _base_inodes.difference_update(base.inodes)
    for inode in base.inodes:
        _encoded.pop(inode, None)
    shutil.rmtree(base.folder, ignore_errors=True)
    return base


def _hold(repo: str, commit: str) -> tuple[tuple[str, str], _Base]:
    """The cached tree of ``commit`` of ``repo`` (made if missing), marked in use and most
    recently used: :func:`_release` it after."""
    if not repo or not commit:
        raise TaskError("the reference needs `repo` (a git repository path) and `base_commit`")
    key = (os.path.realpath(repo), commit)
    with _base_lock:
        base = _bases.get(key)
        if base is not None and os.path.isdir(base.folder):
            _bases.move_to_end(key)
            base.users += 1
            return key, base
        if base is not None:  # removed by someone else (a cleaner of the temp folder)
            _forget(key)
        limit_bytes, limit_trees = cache_bounds()
        base = _extract(repo, commit)
        _bases[key] = base
        _base_inodes.update(base.inodes)
        stats["base_trees"] += 1
        base.users += 1
        _evict(limit_bytes, limit_trees)
        return key, base


def _release(key: tuple[str, str], base: _Base) -> None:
    with _base_lock:
        base.users -= 1
        if not base.users and _bases.get(key) is base:
            with contextlib.suppress(TaskError):
                _evict(*cache_bounds())


def _extract(repo: str, commit: str) -> _Base:
    """A new folder of the cache holding ``commit``'s tree; a partial one (git or tar
    failed, the disk is full) is removed before the error goes on."""
    clone = None
    if os.path.isfile(repo) and repo.endswith(".bundle"):
        repo = clone = _unbundled(repo)
    try:
        if not os.path.isdir(repo):
            raise TaskError(f"repository {repo!r} does not exist")
        resolved = _git(["-C", repo, "rev-parse", "--verify", "--quiet",
                         f"{commit}^{{commit}}"])
        if resolved.returncode != 0:
            raise TaskError(f"commit {commit!r} is not in repository {repo!r}")
        archive = subprocess.run(["git", "-C", repo, "archive", "--format=tar",
                                  resolved.stdout.strip()], capture_output=True, check=False)
        if archive.returncode != 0:
            raise TaskError(f"git archive of {commit!r} failed: {archive.stderr.decode()[:200]}")
        folder = tempfile.mkdtemp(prefix="base-", dir=_cache_root())
        try:
            untar = subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout,
                                   capture_output=True, check=False)
            if untar.returncode != 0:
                raise TaskError(f"the base tree of {commit!r} could not be written: "
                                f"{untar.stderr.decode(errors='replace').strip()[:200]}")
            size, inodes = 0, set()
            for path in _files(folder).values():
                if not path.is_symlink() and path.is_file():
                    status = path.stat()
                    inodes.add((status.st_dev, status.st_ino))
                    size += status.st_size
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return _Base(folder, size, inodes)
    finally:
        if clone is not None:
            shutil.rmtree(clone, ignore_errors=True)


def base_tree(repo: str, commit: str) -> str:
    """A folder holding ``commit``'s tree of ``repo``, kept in this process's cache while
    it is within its bounds (:func:`cache_bounds`); :func:`prepare` holds it while a row
    uses it."""
    key, base = _hold(repo, commit)
    _release(key, base)
    return base.folder


def _unbundled(bundle: str) -> str:
    """A clone of the ``git bundle`` file ``bundle`` (a repository shipped as one file),
    removed by the caller once the base tree is read from it."""
    folder = tempfile.mkdtemp(prefix="bundle-", dir=_cache_root())
    done = _git(["clone", "-q", "--bare", os.path.abspath(bundle), folder])
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
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
                 discarded: list[str], release: Callable[[], None] | None = None) -> None:
        self.folder = folder
        self.candidate_files = candidate_files
        self.test_files = test_files
        self.discarded = discarded
        #: lets the cache remove the base tree again (it is in use until :meth:`close`)
        self._release = release

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
        with _base_lock:  # not while its tree is being removed
            if key in _base_inodes:
                _encoded[key] = encoded
        return encoded

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        release, self._release = self._release, None
        if release is not None:
            release()


def prepare(repo: str, commit: str, patch: str, test_patch: str,
            protected: Callable[[str], bool] = is_protected) -> Workspace | str:
    """The workspace, or why the model's patch does not apply (a string). ``protected``
    says which paths are tests or test configuration (the Go runner has its own).

    Raises :class:`TaskError` for a missing repository or commit or a test patch that
    does not apply to the base.
    """
    key, held = _hold(repo, commit)
    base = held.folder
    try:
        folder = tempfile.mkdtemp(prefix="row-", dir=_cache_root())
    except BaseException:
        _release(key, held)
        raise
    try:
        shutil.copytree(base, folder, symlinks=True, dirs_exist_ok=True, copy_function=_link)
        stats["rows"] += 1
        problem = _apply(patch, folder)
        if problem is not None:
            shutil.rmtree(folder, ignore_errors=True)
            _release(key, held)
            return problem
        discarded = _put_back(base, folder, _patched(test_patch), protected)
        if test_patch.strip():
            problem = _apply(test_patch, folder)
            if problem is not None:
                raise TaskError(f"the test patch does not apply to {commit!r}: {problem}")
        base_files = _files(base)
        candidate, tests = [], []
        for relative, path in _files(folder).items():
            if protected(relative) or relative in _patched(test_patch):
                tests.append(relative)
            elif relative not in base_files or not _same(path, base_files[relative]):
                candidate.append(relative)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        _release(key, held)
        raise
    return Workspace(folder, candidate, tests, discarded, lambda: _release(key, held))


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
