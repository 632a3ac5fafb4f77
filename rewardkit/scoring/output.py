"""Where both engines of ``rewardkit score`` may write, checked before anything is
scored (:func:`check_paths`), and the lock each holds on ``--out`` for the whole run
(:class:`OutputLock`): a second run on the same output refuses at once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

#: ``src`` that means standard input
STDIN = "-"


class ScoringFileError(Exception):
    """A problem with the files asked for (printed as an error, no traceback)."""


def check_paths(src: Path, dst: Path) -> bool:
    """The output-path rules of both engines, checked before anything is scored: the
    input exists and is not a folder, ``dst`` is not a folder and not the input. Returns
    whether ``src`` is a regular file (``-`` and pipes are not)."""
    if dst.is_dir():
        raise ScoringFileError(f"--out {dst} is a folder; give a file name")
    if str(src) == STDIN:
        return False
    mode = src.stat().st_mode  # FileNotFoundError for a missing file
    if stat.S_ISDIR(mode):
        raise ScoringFileError(f"{src} is a folder, not a JSONL file")
    if dst.exists() and os.path.samefile(src, dst):
        raise ScoringFileError(f"--out {dst} is the input file; write elsewhere")
    return stat.S_ISREG(mode)


class OutputLock:
    """An exclusive lock on ``--out`` for the whole run (both engines), so that a second
    run on the same output (a scheduler retrying a job whose first attempt still runs)
    refuses at once instead of interleaving or replacing the first one's rows.

    The lock is ``flock`` on ``.OUT.lock`` beside the output (opened without following
    a link), removed by its holder at the end; a run that locked a file just removed
    checks the name still leads to its file and retries otherwise."""

    def __init__(self, dst: Path) -> None:
        self.path = dst.with_name(f".{dst.name}.lock")
        self.dst = dst
        self.fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.dst.parent.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o600)
            except OSError as exc:
                raise ScoringFileError(f"cannot lock --out {self.dst}: {self.path}: "
                                       f"{exc.strerror}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                raise ScoringFileError(
                    f"--out {self.dst} is being written by another run (it holds "
                    f"{self.path}); wait for it to end or write elsewhere") from exc
            held = os.fstat(fd)
            try:
                now = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                self.fd = fd
                return self
            os.close(fd)  # its holder removed it as we opened it: lock the new one

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self.fd)
            self.fd = None
