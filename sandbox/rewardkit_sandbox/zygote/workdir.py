"""A task's work directory: created empty before the task, removed with what the task
left after it.

Guarantees: each task gets a directory of its own, owned by the slot uid, mode 0700,
never one a previous task left behind; :meth:`WorkDirectories.clean` removes what the
task wrote there and in the scratch directories without following a symlink, and says
when the private scratch space is not empty again.  Standard library only (see
:mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import contextlib
import os
import stat

# tmpfs sizes a directory as 2 * BOGO_DIRENT_SIZE plus BOGO_DIRENT_SIZE per entry.
_TMPFS_DIRENT = 20
_TMPFS_EMPTY_DIR = 2 * _TMPFS_DIRENT


class WorkDirectories:
    """Work directories of one slot's tasks, one at a time.

    ``uid``/``gid``: their owner when ``uid_isolation`` holds; ``mountns``: the scratch
    directories are the zygote's own tmpfs mounts (``scratch_mounts``, of
    ``scratch_dirs``); ``fixed_workdir``: the one name every task's directory has (the
    private /tmp), else a fresh name under ``workdir_base``; ``chmod_workdir``: the
    umask would not give 0700.
    """

    def __init__(
        self,
        uid: int,
        gid: int,
        uid_isolation: bool,
        mountns: bool,
        fixed_workdir: str,
        workdir_base: str,
        chmod_workdir: bool,
        scratch_dirs: tuple[str, ...],
        scratch_mounts: list[str],
    ) -> None:
        self.uid = uid
        self.gid = gid
        self.uid_isolation = uid_isolation
        self.mountns = mountns
        self.fixed_workdir = fixed_workdir
        self.workdir_base = workdir_base
        self.chmod_workdir = chmod_workdir
        self.scratch_dirs = scratch_dirs
        self.scratch_mounts = scratch_mounts
        #: scratch mounts :meth:`clean` found removed (from outside the sandbox)
        self.gone: list[str] = []

    def make(self) -> str:
        while True:
            workdir = self.fixed_workdir or (
                f"{self.workdir_base}/rewardkit-task-{os.urandom(6).hex()}"
            )
            try:
                os.mkdir(workdir, 0o700)
            except FileExistsError:
                if self.fixed_workdir:  # the last task's was not removed: never reuse it
                    raise
                continue
            break
        try:
            if self.uid_isolation:
                os.chown(workdir, self.uid, self.gid)
            if self.chmod_workdir:
                os.chmod(workdir, 0o700)
        except OSError:
            os.rmdir(workdir)
            raise
        return workdir

    def clean(self, workdir: str) -> bool:
        """Remove what the task left; False when the private scratch space is not empty."""
        if self.mountns and self._only_an_empty_workdir(workdir):
            with contextlib.suppress(OSError):
                os.rmdir(workdir)
                return True
        _remove_tree(workdir)
        for directory in self.scratch_dirs:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                try:
                    if not self.mountns and entry.stat(follow_symlinks=False).st_uid != self.uid:
                        continue
                    if not self.mountns and not self.uid_isolation:
                        continue
                    _remove_tree(entry.path)
                except OSError:
                    continue
        if not self.mountns:
            return True
        self.gone = []
        for path in self.scratch_mounts:
            try:
                if os.lstat(path).st_size != _TMPFS_EMPTY_DIR:
                    self.gone = []
                    return False
            except FileNotFoundError:
                # removed outside (another process of the machine): the kernel detached
                # our tmpfs over it, and a folder made there again would be the host's
                self.gone.append(path)
            except OSError:
                return False
        return not self.gone

    def why_not_clean(self) -> str:
        """Why :meth:`clean` said False (the zygote is retired either way)."""
        if self.gone:
            return (f"scratch folders {self.gone} were removed outside the sandbox "
                    "(their tmpfs is gone)")
        return "files of the task could not be removed"

    def _only_an_empty_workdir(self, workdir: str) -> bool:
        """True when the task left nothing: a few lstat() instead of listing directories.

        Only on the zygote's own tmpfs mounts, where a directory's size counts its entries
        exactly: /tmp holds one entry (the work directory, an empty directory), and the
        other scratch directories none.
        """
        try:
            info = os.lstat(workdir)
            if not stat.S_ISDIR(info.st_mode) or info.st_size != _TMPFS_EMPTY_DIR:
                return False
            for directory in self.scratch_mounts:
                expected = _TMPFS_EMPTY_DIR + (_TMPFS_DIRENT if directory == "/tmp" else 0)
                if os.lstat(directory).st_size != expected:
                    return False
        except OSError:
            return False
        return "/tmp" in self.scratch_mounts and os.path.dirname(workdir) == "/tmp"


#: where import paths from inside a scratch directory are shown again (under a tmpfs)


def _remove_tree(path: str) -> None:
    """``rm -rf path`` as root over a tree the task wrote: never follows a symlink.

    Descends by directory descriptors opened with O_NOFOLLOW (like shutil.rmtree's safe
    variant, without its imports), iteratively, so depth costs descriptors, not stack.
    Whatever cannot be removed stays; the caller checks.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(path, flags)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)  # a file, a symlink, or already gone
        return
    # (directory fd, names still to remove in it, its own name in the parent)
    stack: list[tuple[int, list[str], str]] = []
    try:
        stack.append((top, os.listdir(top), ""))
    except OSError:
        os.close(top)
        return
    while stack:
        fd, names, own_name = stack[-1]
        if not names:
            stack.pop()
            os.close(fd)
            if stack:
                with contextlib.suppress(OSError):
                    os.rmdir(own_name, dir_fd=stack[-1][0])
            continue
        name = names.pop()
        try:
            os.unlink(name, dir_fd=fd)
            continue
        except IsADirectoryError:
            pass
        except OSError:
            continue
        try:
            child = os.open(name, flags, dir_fd=fd)
        except OSError:
            continue
        try:
            stack.append((child, os.listdir(child), name))
        except OSError:
            os.close(child)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def shared_temp_dir() -> str:
    """Where work directories go without a mount namespace (``tempfile.gettempdir``'s pick)."""
    for candidate in (os.environ.get("TMPDIR"), os.environ.get("TEMP"), os.environ.get("TMP")):
        if candidate and os.path.isdir(candidate):
            return os.path.abspath(candidate)
    for candidate in ("/tmp", "/var/tmp", "/usr/tmp"):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return os.getcwd()
