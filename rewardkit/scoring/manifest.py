"""Resuming a Ray engine run: the output grows in ``OUT.partial`` and the manifest
``OUT.progress`` records each committed shard after its lines are on disk
(:class:`Checkpoint`). Its first line records what the shards are a function of (the
input, its size and modification time, the config, ``batch_size`` and the step:
:func:`fingerprint`), so a resume against changed input is refused; a manifest that is not
one this engine wrote is refused naming the file and line (:func:`load_manifest`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import IO, Any

from rewardkit.config import RewardConfig

#: 2: a chat prompt's group is keyed by its messages, not their JSON text (a string
#: prompt spelling that text is another group), so shards may end elsewhere than under 1
MANIFEST_VERSION = 2


class ResumeError(Exception):
    """The output or its manifest do not allow this run (or this resume)."""


def fingerprint(config: RewardConfig, src: Path, batch_size: int, step: int) -> dict[str, Any]:
    """The manifest's first line: what a resume must find unchanged (the input, its size
    and modification time, the config, ``batch_size`` and the step)."""
    stat = src.stat()
    digest = hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:16]
    return {"version": MANIFEST_VERSION, "input": str(src.resolve()), "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns, "batch_size": batch_size, "step": step,
            "config": digest}


def load_manifest(text: str, manifest: Path, partial: Path, expected: dict[str, Any]
                   ) -> tuple[dict[int, dict[str, Any]], int]:
    """Committed shards by number, and the output length they end at. A manifest that is
    not one this engine wrote (a line that is not a shard record, offsets going back) is
    refused naming the file and line; only a torn last line is dropped (that shard was
    not committed)."""
    start_over = f"remove {manifest.name} and {partial.name} to score from the start"
    lines = text.splitlines()
    if not lines:
        return {}, 0
    try:
        header = json.loads(lines[0])
    except ValueError as exc:
        raise ResumeError(f"{manifest}: unreadable manifest header; {start_over}") from exc
    if not isinstance(header, dict):
        raise ResumeError(f"{manifest}: line 1 is not a manifest header; {start_over}")
    if header.get("version") != expected.get("version"):
        raise ResumeError(
            f"{manifest}: written by another rewardkit (manifest version "
            f"{header.get('version')!r}, this one writes {expected.get('version')!r}): its "
            "shards were cut by another group rule (a chat prompt's group was its JSON "
            f"text), so they cannot be resumed; {start_over}")
    changed = [k for k in expected if header.get(k) != expected[k]]
    if changed:
        raise ResumeError(
            f"{manifest}: the earlier run differs in {', '.join(changed)}; resume needs the "
            "same input, config, step and --batch-size (or remove the manifest and "
            f"{partial.name} to start over)")
    done: dict[int, dict[str, Any]] = {}
    length = 0
    for line_no, line in enumerate(lines[1:], 2):
        try:
            entry = json.loads(line)
        except ValueError as exc:
            if line_no == len(lines) and not text.endswith("\n"):
                break  # a torn last line: that shard was not committed
            raise ResumeError(f"{manifest}: line {line_no} is not JSON; {start_over}") from exc
        if not _is_entry(entry, length):
            raise ResumeError(f"{manifest}: line {line_no} is not a shard record of this "
                              f"run; {start_over}")
        done[entry["shard"]] = entry
        length = entry["end_offset"]
    return done, length


def _is_entry(entry: Any, length: int) -> bool:
    """Whether ``entry`` is a shard record ending at or after ``length``."""
    def count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    return (isinstance(entry, dict) and count(entry.get("shard")) and count(entry.get("rows"))
            and count(entry.get("end_offset")) and entry["end_offset"] >= length
            and isinstance(entry.get("bad"), list)
            and all(isinstance(b, list) and len(b) == 2 and count(b[0])
                    and isinstance(b[1], str) for b in entry["bad"])
            and isinstance(entry.get("latencies", {}), dict)
            and all(isinstance(v, list) and all(isinstance(x, int | float) for x in v)
                    for v in entry.get("latencies", {}).values()))


def open_own(path: Path, fresh: bool) -> IO[bytes]:
    """``OUT.partial`` or ``OUT.progress``, read-write, never through a link: a fresh run
    replaces whatever has the name (a leftover, a planted symlink) by a new file created
    exclusively; a resume opens only a regular file."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    if fresh:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        flags |= os.O_CREAT | os.O_EXCL
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise ResumeError(f"{path}: {exc.strerror} (a link there is never followed); "
                          "remove it") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ResumeError(f"{path} is not a regular file; remove it")
    return os.fdopen(fd, "r+b")


class Checkpoint:
    """``OUT.partial`` (``out``) and its manifest ``OUT.progress`` (``log``), both open:
    the shards committed so far (``done``, by number) and the output length they end at
    (``length``)."""

    def __init__(self, log: IO[bytes], out: IO[bytes], manifest: Path, partial: Path) -> None:
        self.log = log
        self.out = out
        self.manifest = manifest
        self.partial = partial
        self.done: dict[int, dict[str, Any]] = {}
        self.length = 0

    def begin(self, expected: dict[str, Any], fresh: bool) -> None:
        """Write the header of a fresh run, or load a resumed run's committed shards
        (refused when ``expected`` differs from its header); either way cut the output
        back to the last committed length (whatever a crash left past it)."""
        if fresh:
            self.log.write((json.dumps(expected) + "\n").encode())
            self.log.flush()
            os.fsync(self.log.fileno())
        else:
            text = self.log.read().decode("utf-8", errors="replace")
            self.done, self.length = load_manifest(text, self.manifest, self.partial, expected)
            self.log.seek(0, os.SEEK_END)
            size = os.fstat(self.out.fileno()).st_size
            if size < self.length:
                raise ResumeError(
                    f"{self.partial} is {size} bytes but {self.manifest.name} records "
                    f"{self.length} committed: one of them is damaged; remove both to score "
                    "from the start")
        self.out.truncate(self.length)
        self.out.seek(self.length)

    def commit(self, shard: int, text: bytes, rows: int, bad: list[Any],
               latencies: dict[str, list[float]]) -> None:
        """Write one shard's lines, then record it in the manifest (each on disk)."""
        self.out.write(text)
        self.out.flush()
        os.fsync(self.out.fileno())
        self.length += len(text)
        entry = {"shard": shard, "rows": rows, "end_offset": self.length, "bad": bad,
                 "latencies": latencies}
        self.log.write((json.dumps(entry) + "\n").encode())
        self.log.flush()
        os.fsync(self.log.fileno())
        self.done[shard] = entry
