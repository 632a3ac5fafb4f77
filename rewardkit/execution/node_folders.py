"""The folders where processes of one node share state: budgets' lock files, the sandbox
uid claims.  Each is a fixed path (every rank, worker and Ray actor must find the same
one, whatever its ``$TMPDIR``), so another local user could try to make it first: a
folder of theirs, one anyone may write (``0777``), a symbolic link to a folder of root's,
lock files that are links.  Root would then create or write files where the links
point, or share lock files the other user holds (and so be denied every slot).

So a node folder is used only when it is safe, checked with ``lstat`` at every level:

- the folder itself is a real directory (not a link), owned by this process's user, and
  nobody else may enter it (mode ``0700``: no group or other bits); made so when missing;
- every folder above it is owned by root or this user and writable by no one else unless
  sticky (``/tmp``, ``/dev/shm``: nobody can rename or replace another user's entry), and
  a link above it is one that root or this user made;
- files in it are opened with ``O_NOFOLLOW`` and must be regular files of this user.

Anything else is an :class:`UnsafeFolderError` that says which path, what is wrong and
what to do; the folder is never repaired or removed (it may hold a live process's locks).
For root, :func:`state_root` is ``/run`` (writable by root only, so nobody can make
root's folders first), else the node's shared memory.
"""

from __future__ import annotations

import contextlib
import os
import stat


class UnsafeFolderError(PermissionError):
    """A node folder (or a file in it) that another user made or could change."""


def state_root() -> str:
    """Where this user's node-wide folders go: ``/run`` for root when only root may write
    it, else ``/dev/shm`` (node-local memory) when it is there, else ``/tmp``."""
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            info = os.lstat("/run")
            if (stat.S_ISDIR(info.st_mode) and info.st_uid == 0
                    and not info.st_mode & 0o022 and os.access("/run", os.W_OK)):
                return "/run"
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return "/tmp"


def private_folder(path: str) -> str:
    """Make ``path`` (and missing folders above it) mode 0700, or check that the existing
    one is safe (see the module); returns the absolute path.  ``UnsafeFolderError`` when
    it is not."""
    path = os.path.abspath(path)
    parts = path.strip("/").split("/")
    current = "/"
    for depth, part in enumerate(parts):
        current = os.path.join(current, part)
        last = depth == len(parts) - 1
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(current, 0o700)
            info = os.lstat(current)
        if last:
            _check_own(current, info)
        else:
            _check_above(current, info)
    return path


def open_private_file(path: str, flags: int = os.O_RDWR | os.O_CREAT) -> int:
    """A descriptor of ``path``, a file in a :func:`private_folder`, never through a link;
    ``UnsafeFolderError`` when it is a link or not this user's regular file."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        if os.path.islink(path):
            raise UnsafeFolderError(
                f"{path} is a symbolic link, refused: a lock file must be a file of its "
                f"own ({_ADVICE})"
            ) from error
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise UnsafeFolderError(
            f"{path} is not a regular file of uid {os.geteuid()} (uid {info.st_uid}, mode "
            f"{stat.filemode(info.st_mode)}), refused ({_ADVICE})"
        )
    return fd


_ADVICE = ("another local user may have made it to redirect or block this process: remove "
           "it once no rewardkit process uses it, or choose another folder")


def _check_own(path: str, info: os.stat_result) -> None:
    uid = os.geteuid()
    if stat.S_ISLNK(info.st_mode):
        problem = f"is a symbolic link (to {os.readlink(path)!r})"
    elif not stat.S_ISDIR(info.st_mode):
        problem = f"is not a folder ({stat.filemode(info.st_mode)})"
    elif info.st_uid != uid:
        problem = f"belongs to uid {info.st_uid}, not to this process's uid {uid}"
    elif info.st_mode & 0o077:
        problem = f"has mode {stat.S_IMODE(info.st_mode):04o}, not 0700"
    else:
        return
    raise UnsafeFolderError(f"node folder {path} {problem}: refused ({_ADVICE})")


def _check_above(path: str, info: os.stat_result) -> None:
    uid = os.geteuid()
    if info.st_uid not in (0, uid):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a folder"
        raise UnsafeFolderError(
            f"{path}, above a node folder, is {kind} of uid {info.st_uid} (neither root "
            f"nor uid {uid}): refused ({_ADVICE})"
        )
    if stat.S_ISLNK(info.st_mode):
        info = os.stat(path)  # a link of root's or ours: where it points must be safe too
        if info.st_uid not in (0, uid):
            raise UnsafeFolderError(
                f"{path}, above a node folder, leads to a folder of uid {info.st_uid}: "
                f"refused ({_ADVICE})"
            )
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFolderError(f"{path}, above a node folder, is not a folder: refused")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise UnsafeFolderError(
            f"{path}, above a node folder, may be written by other users (mode "
            f"{stat.S_IMODE(info.st_mode):04o}, not sticky): refused ({_ADVICE})"
        )
