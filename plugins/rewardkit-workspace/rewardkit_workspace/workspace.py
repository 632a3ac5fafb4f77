"""The workspace a rollout left, made into a private copy the criteria read.

A row names its workspace in a column (``workspace`` by default): a directory, a ``.tar``
/ ``.tar.gz`` / ``.tgz`` / ``.zip`` archive, or (small tasks, tests) a mapping of relative
paths to file text. Directories and archives must lie under one of the reward's
``allowed_roots`` (after resolving links), else the row is an error.

The copy holds regular files and directories only, so that nothing a criterion reads can
lead out of the workspace:

- a symbolic link is copied as the file it names when that file is a regular file inside
  the workspace, and left out otherwise (a link to ``/etc/passwd`` is no file here);
- a file with several hard links is left out (it may be a host file linked in);
- FIFOs, sockets and devices are left out (a criterion never blocks on one);
- every file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked again after opening;
- sizes are capped (each file, the whole workspace, the number of entries): over a cap
  the workspace is refused (:class:`WorkspaceError`), never read whole;
- archive members with absolute paths, ``..`` segments, links or special types are left
  out, and the bytes actually decompressed count against the caps (a zip bomb stops at the
  cap, whatever its headers claim).

What was left out is listed in :attr:`PrivateCopy.left_out` (it lands in the score's
details).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO

_CHUNK = 1 << 16


class WorkspaceError(Exception):
    """The workspace cannot be read: missing, outside the allowed roots, over a cap."""


@dataclass(frozen=True)
class Caps:
    """Limits on what one workspace copy may hold."""

    file_bytes: int = 4 * 1024 * 1024
    total_bytes: int = 32 * 1024 * 1024
    entries: int = 10_000


@dataclass
class PrivateCopy:
    """A private directory holding the workspace's regular files; remove with close()."""

    root: str
    left_out: list[str] = field(default_factory=list)
    total_bytes: int = 0
    entries: int = 0

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PrivateCopy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def relative_path(name: str) -> PurePosixPath | None:
    """``name`` as a path inside the workspace, or None when it is absolute, empty or
    climbs out with ``..``."""
    if not name or "\x00" in name:
        return None
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or any(part == ".." for part in path.parts):
        return None
    parts = [p for p in path.parts if p not in ("", ".")]
    return PurePosixPath(*parts) if parts else None


def private_copy(source: object, allowed_roots: list[str], caps: Caps) -> PrivateCopy:
    """Copy the workspace ``source`` (a path or a mapping of path -> text) privately."""
    copy = PrivateCopy(tempfile.mkdtemp(prefix="rewardkit-workspace-"))
    try:
        if isinstance(source, Mapping):
            _from_mapping(source, copy, caps)
            return copy
        if not isinstance(source, str) or not source:
            raise WorkspaceError(
                "the workspace column must be a directory path, an archive path or a "
                f"mapping of file paths to text, got {type(source).__name__}")
        path = _allowed(source, allowed_roots)
        if os.path.isdir(path):
            _from_directory(path, copy, caps)
        elif path.endswith((".tar", ".tar.gz", ".tgz")):
            _from_tar(path, copy, caps)
        elif path.endswith(".zip"):
            _from_zip(path, copy, caps)
        else:
            raise WorkspaceError(
                f"workspace {source!r} is neither a directory nor a .tar/.tar.gz/.tgz/.zip "
                "archive")
        return copy
    except BaseException:
        copy.close()
        raise


def _allowed(source: str, roots: list[str]) -> str:
    if not roots:
        raise WorkspaceError("no allowed_roots configured: a workspace path cannot be read")
    resolved = os.path.realpath(source)
    for root in roots:
        base = os.path.realpath(expand_root(root))
        if os.path.commonpath([base, resolved]) == base:
            if not os.path.exists(resolved):
                raise WorkspaceError(f"workspace {source!r} does not exist")
            return resolved
    raise WorkspaceError(
        f"workspace {source!r} is outside the allowed roots {roots} (resolved: {resolved})")


def expand_root(root: str) -> str:
    """``root`` with ``$VAR`` / ``${VAR}`` and ``~`` expanded (``$REWARDKIT_WORKSPACES``:
    the folder a trainer's environments make their workspaces in); a WorkspaceError
    when it names a variable that is not set."""
    expanded = os.path.expanduser(os.path.expandvars(root))
    if "$" in expanded:
        raise WorkspaceError(
            f"allowed root {root!r} names an environment variable that is not set "
            "(rewardkit train sets REWARDKIT_WORKSPACES for a run with an environment)")
    return expanded


class _Writer:
    """Writes files into the copy, counting bytes and entries against the caps."""

    def __init__(self, copy: PrivateCopy, caps: Caps) -> None:
        self.copy, self.caps = copy, caps

    def entry(self) -> None:
        self.copy.entries += 1
        if self.copy.entries > self.caps.entries:
            raise WorkspaceError(f"the workspace has more than {self.caps.entries} entries")

    def write(self, rel: PurePosixPath, stream: IO[bytes], executable: bool = False) -> None:
        """Copy ``stream`` to ``rel``; only the executable bit of the mode is kept."""
        self.entry()
        target = os.path.join(self.copy.root, *rel.parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        size = 0
        with open(target, "wb") as out:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                self.copy.total_bytes += len(chunk)
                if size > self.caps.file_bytes:
                    raise WorkspaceError(
                        f"file {str(rel)!r} is over the cap of {self.caps.file_bytes} bytes")
                if self.copy.total_bytes > self.caps.total_bytes:
                    raise WorkspaceError(
                        f"the workspace is over the cap of {self.caps.total_bytes} bytes")
                out.write(chunk)
        os.chmod(target, 0o755 if executable else 0o644)


def _from_mapping(files: Mapping[object, object], copy: PrivateCopy, caps: Caps) -> None:
    import io

    writer = _Writer(copy, caps)
    for name, text in files.items():
        rel = relative_path(str(name))
        if rel is None:
            copy.left_out.append(f"{name} (not a relative path inside the workspace)")
            continue
        data = text.encode() if isinstance(text, str) else None
        if data is None:
            raise WorkspaceError(f"file {name!r} of the inline workspace is not text")
        writer.write(rel, io.BytesIO(data))


def _open_regular(path: str) -> tuple[int, os.stat_result] | str:
    """A read descriptor of the regular file at ``path`` (never following a link), or why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        return f"cannot open: {error.strerror}"
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return "not a regular file"
    if info.st_nlink > 1:
        os.close(fd)
        return "a file with several hard links"
    return fd, info


def _from_directory(top: str, copy: PrivateCopy, caps: Caps) -> None:
    writer = _Writer(copy, caps)
    pending = [top]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = PurePosixPath(os.path.relpath(entry.path, top))
                writer.entry()
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if os.path.commonpath([top, target]) != top or not os.path.isfile(target):
                        copy.left_out.append(f"{rel} (a link out of the workspace or not "
                                             "to a file)")
                        continue
                    source = target
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                    os.makedirs(os.path.join(copy.root, *rel.parts), exist_ok=True)
                    continue
                else:
                    source = entry.path
                opened = _open_regular(source)
                if isinstance(opened, str):
                    copy.left_out.append(f"{rel} ({opened})")
                    continue
                fd, info = opened
                if info.st_size > caps.file_bytes:
                    os.close(fd)
                    raise WorkspaceError(
                        f"file {str(rel)!r} is over the cap of {caps.file_bytes} bytes")
                with os.fdopen(fd, "rb") as stream:
                    writer.write(rel, stream, bool(info.st_mode & 0o100))


def _from_tar(path: str, copy: PrivateCopy, caps: Caps) -> None:
    writer = _Writer(copy, caps)
    try:
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                writer.entry()
                rel = relative_path(member.name)
                if rel is None:
                    copy.left_out.append(f"{member.name} (an absolute or climbing path)")
                elif member.isdir():
                    os.makedirs(os.path.join(copy.root, *rel.parts), exist_ok=True)
                elif not member.isreg():
                    copy.left_out.append(f"{member.name} (a link or special file)")
                else:
                    stream = archive.extractfile(member)
                    if stream is not None:
                        writer.write(rel, stream, bool(member.mode & 0o100))
    except (tarfile.TarError, EOFError, OSError) as error:
        raise WorkspaceError(f"archive {path!r} cannot be read: {error}") from None


def _from_zip(path: str, copy: PrivateCopy, caps: Caps) -> None:
    writer = _Writer(copy, caps)
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                rel = relative_path(info.filename)
                mode = info.external_attr >> 16
                if rel is None:
                    writer.entry()
                    copy.left_out.append(f"{info.filename} (an absolute or climbing path)")
                elif info.is_dir():
                    writer.entry()
                    os.makedirs(os.path.join(copy.root, *rel.parts), exist_ok=True)
                elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):
                    writer.entry()
                    copy.left_out.append(f"{info.filename} (a link or special file)")
                else:
                    with archive.open(info) as stream:
                        writer.write(rel, stream, bool(mode & 0o100))
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError) as error:
        raise WorkspaceError(f"archive {path!r} cannot be read: {error}") from None
