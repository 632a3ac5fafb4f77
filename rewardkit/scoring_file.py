"""Scoring a JSONL file of samples (``rewardkit score``), streaming, batch by batch.

Each input line is written back plus ``reward`` (the total, or null) and ``components``
({name: {value, status, reason}}, plus ``latency_ms`` for a reward timed sample by sample:
process mode). Malformed lines are reported with their line number,
counted and skipped; nothing else is dropped. What counts as malformed: not valid UTF-8,
not a JSON object, no ``completion`` key, a ``completion`` that is null, a number or
true/false (not text: ``84`` is not scored as ``"84"``), the non-standard constants ``NaN`` /
``Infinity``, or nesting deeper than ``MAX_DEPTH``. Lines end at ``\\n`` only (a bare
``\\r`` is part of the line, as JSON allows).

Whole groups: when the config has a group reward or ``normalize_then_sum``, every prompt's
rows are scored in one batch wherever they are in the file. Adjacent rows (the usual
layout) stream as they come; otherwise rows are indexed by group on disk (SQLite in a
temporary folder) and scored group by group, and the output keeps the input order.

Memory stays flat whatever the length of the file: the summary is accumulated by
:class:`RunningMetrics` and only one batch is held at a time. The output goes to a
temporary file created exclusively beside ``--out`` (never a pre-planted link, never the
input), flushed to disk and renamed over ``--out`` at the end, and removed on failure.
While a run lasts it holds an exclusive lock on ``--out`` (:class:`OutputLock`, shared with
the Ray engine): a second run on the same output refuses at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import shutil
import sqlite3
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from rewardkit.composition import RewardSet, group_key
from rewardkit.running_metrics import RunningMetrics
from rewardkit.types import Sample

ProgressFn = Callable[[int, int | None], None]
#: deepest nesting of a row's JSON (rows deeper are malformed: they break recursion
#: limits and pickling)
MAX_DEPTH = 100
#: ``src`` that means standard input
STDIN = "-"


class ScoringFileError(Exception):
    """A problem with the files asked for (printed as an error, no traceback)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not standard JSON: {name}")


def _depth(obj: Any, limit: int) -> int:
    """Nesting depth of ``obj``, counted up to ``limit + 1``."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def row_problem(row: Any) -> str:
    """Why ``row`` (a parsed JSONL line or a parquet row) cannot be scored, or "": not an
    object, no ``completion``, or a ``completion`` that is null, a number or true/false
    (not text: ``84`` would be scored as ``"84"``, null as an empty completion)."""
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    if "completion" not in row:
        return "no 'completion' key"
    if row["completion"] is None or isinstance(row["completion"], bool | int | float):
        return (f"'completion' is {json.dumps(row['completion'])}, not text or chat "
                "messages (write it as a string)")
    return ""


def parse_line(raw: bytes, line_no: int) -> tuple[dict[str, Any] | None, str]:
    """(row, "") for a good line, (None, why) for a malformed one, (None, "") if blank."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"invalid UTF-8 at byte {exc.start + 1}; the line would not be " \
                     "written back unchanged"
    if line_no == 1 and text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return None, ""
    try:
        row = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:
        return None, str(exc)
    except RecursionError:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    why = row_problem(row)
    if why:
        return None, why
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and _depth(row, MAX_DEPTH) > MAX_DEPTH:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    return row, ""


def _lines(fh: IO[bytes], max_bytes: int, first: int = 1
           ) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, byte offset, raw line) split at ``\\n`` only, from where ``fh`` is
    (its line number ``first``, offsets counted from there); the line is None when it is
    longer than ``max_bytes`` (``limits.max_line_bytes``): such a line is read in pieces
    and dropped, so memory is bounded by the cap, never by the longest line."""
    offset = 0
    line_no = first - 1
    while raw := fh.readline(max_bytes + 1):
        line_no += 1
        start = offset
        offset += len(raw)
        if len(raw) <= max_bytes or raw.endswith(b"\n"):
            yield line_no, start, raw
            continue
        while (piece := fh.readline(1 << 20)) and not piece.endswith(b"\n"):
            offset += len(piece)
        offset += len(piece)
        yield line_no, start, None


def _too_long(max_bytes: int) -> str:
    return f"line longer than {max_bytes:,} bytes (limits.max_line_bytes): not read"


def read_lines(fh: IO[bytes], max_bytes: int, first: int = 1
               ) -> Iterator[tuple[int, int, dict[str, Any] | None, str]]:
    """(line number, byte offset, row, why) for each line of ``fh`` from where it is, as
    both engines read them: ``row`` is None for a blank line (``why`` "") and for a
    malformed one or one over ``max_bytes`` (``why`` says what is wrong, for the report)."""
    for line_no, offset, raw in _lines(fh, max_bytes, first):
        row, why = (None, _too_long(max_bytes)) if raw is None else parse_line(raw, line_no)
        yield line_no, offset, row, why


def _count_lines(fh: IO[bytes], max_bytes: int) -> int:
    """Lines of ``fh`` that are not blank (an over-long one counts: it is reported)."""
    return sum(1 for _, _, raw in _lines(fh, max_bytes) if raw is None or raw.strip())


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def render(row: dict[str, Any]) -> bytes:
    """One output line: standard JSON (no NaN), valid UTF-8 (lone surrogates escaped)."""
    try:
        text = json.dumps(row, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # a number out of float range in the input (1e400): null
        row = _finite(row)
        text = json.dumps(row, ensure_ascii=False, default=str, allow_nan=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate ("\ud83d") stays a JSON escape
        return json.dumps(row, ensure_ascii=True, default=str,
                          allow_nan=False).encode("ascii") + b"\n"


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


class _Output:
    """The output file, written to a temporary beside it and renamed at the end."""

    def __init__(self, dst: Path) -> None:
        if dst.is_dir():
            raise ScoringFileError(f"--out {dst} is a folder; give a file name")
        dst.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=dst.parent, prefix=f".{dst.name}.", suffix=".partial")
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        self.path = Path(name)
        self.dst = dst
        self.fh = os.fdopen(fd, "wb")

    def commit(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        os.replace(self.path, self.dst)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.fh.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


def _needs_whole_groups(rs: RewardSet) -> bool:
    return rs.config.aggregate == "normalize_then_sum" or any(
        c.reward_class.group for c in rs.components.values())


def _key_digest(row: dict[str, Any]) -> bytes:
    key = group_key(Sample.from_dict(row))
    text = key if isinstance(key, str) else json.dumps(key, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def score_jsonl(rs: RewardSet, src: Path, dst: Path, step: int = 0, batch_size: int = 1024,
                on_progress: ProgressFn | None = None) -> dict[str, Any]:
    """Score ``src`` (a path, ``-`` for standard input, or a pipe) into ``dst``; returns a
    summary with metrics over all lines."""
    from_stdin = str(src) == STDIN
    regular = check_paths(src, dst)
    with OutputLock(dst):
        out = _Output(dst)
        try:
            with contextlib.ExitStack() as stack:
                fh: IO[bytes] = sys.stdin.buffer if from_stdin else stack.enter_context(
                    src.open("rb"))
                summary = _score(rs, fh, regular, out, step, batch_size, on_progress, stack)
            out.commit()
        except BaseException:
            out.discard()
            raise
    summary["out"] = str(dst)
    return summary


def _score(rs: RewardSet, fh: IO[bytes], regular: bool, out: _Output, step: int,
           batch_size: int, on_progress: ProgressFn | None,
           stack: contextlib.ExitStack) -> dict[str, Any]:
    bad: list[tuple[int, str]] = []
    metrics = RunningMetrics(step)
    total_lines: int | None = None
    max_bytes = rs.config.limits.max_line_bytes
    if regular:
        total_lines = _count_lines(fh, max_bytes)
        fh.seek(0)
    index: _GroupIndex | None = None
    if _needs_whole_groups(rs):
        if not regular:  # the group index reads rows back by offset: spool the pipe
            spool = stack.enter_context(tempfile.TemporaryFile(dir=out.dst.parent))  # noqa: SIM115
            shutil.copyfileobj(fh, spool)
            spool.seek(0)
            fh = spool
            total_lines = _count_lines(fh, max_bytes)
            fh.seek(0)
        index = _GroupIndex.build(fh, stack, max_bytes)
        fh.seek(0)
    done = 0

    def flush(rows: list[dict[str, Any]], samples: list[Sample],
              sink: Callable[[int, bytes], None], line_nos: list[int]) -> None:
        nonlocal done
        if not samples:
            return
        result = rs.score(samples, step=step)
        timed = {name: o.sample_seconds for name, o in result.outcomes.items()
                 if o.sample_seconds}
        for j, (line_no, row, scored) in enumerate(zip(line_nos, rows, result, strict=True)):
            row["reward"] = scored.total
            row["components"] = {
                name: {"value": s.value, "status": str(s.status), "reason": s.reason}
                for name, s in scored.scores.items()
            }
            for name, seconds in timed.items():  # samples timed one by one (process mode)
                if j in seconds:
                    row["components"][name]["latency_ms"] = round(seconds[j] * 1000, 3)
            sink(line_no, render(row))
        result.samples = []
        metrics.add(result)
        done += len(samples)
        rows.clear()
        samples.clear()
        line_nos.clear()
        if on_progress:
            on_progress(done + len(bad), total_lines)

    rows: list[dict[str, Any]] = []
    samples: list[Sample] = []
    line_nos: list[int] = []
    if index is None or index.adjacent:
        write = out.fh.write

        def sink(line_no: int, data: bytes) -> None:
            write(data)

        for line_no, _, row, why in read_lines(fh, max_bytes):
            if row is None:
                if why:
                    bad.append((line_no, why))
                continue
            sample = Sample.from_dict(row)
            if len(samples) >= batch_size and group_key(sample) != group_key(samples[-1]):
                flush(rows, samples, sink, line_nos)
            rows.append(row)
            samples.append(sample)
            line_nos.append(line_no)
        flush(rows, samples, sink, line_nos)
    else:
        bad = index.bad
        previous: int | None = None
        for gid, line_no, offset in index.rows_by_group():
            fh.seek(offset)
            row, _ = parse_line(fh.readline(), line_no)
            assert row is not None  # the index holds good lines only
            if len(samples) >= batch_size and gid != previous:
                flush(rows, samples, index.put_output, line_nos)
            previous = gid
            rows.append(row)
            samples.append(Sample.from_dict(row))
            line_nos.append(line_no)
        flush(rows, samples, index.put_output, line_nos)
        for data in index.outputs_in_order():
            out.fh.write(data)
    summary = metrics.metrics()
    return {"step": step, "scored": done, "bad_lines": bad, "skipped_lines": len(bad),
            "components": summary["components"], "total": summary["total"]}


class _GroupIndex:
    """Rows by group key on disk: tells whether each group's rows are adjacent in the
    file and, when they are not, serves the rows group by group and collects the scored
    lines to write them back in input order."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.adjacent = True
        self.bad: list[tuple[int, str]] = []

    @classmethod
    def build(cls, fh: IO[bytes], stack: contextlib.ExitStack, max_bytes: int) -> _GroupIndex:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="rewardkit-groups-"))
        db = sqlite3.connect(os.path.join(folder, "index.sqlite"))
        stack.callback(db.close)
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE groups (key BLOB PRIMARY KEY, gid INTEGER)")
        db.execute("CREATE TABLE rows (line INTEGER PRIMARY KEY, offset INTEGER, gid INTEGER)")
        db.execute("CREATE TABLE output (line INTEGER PRIMARY KEY, data BLOB)")
        index = cls(db)
        previous: bytes | None = None
        gid = -1
        pending: list[tuple[int, int, int]] = []
        for line_no, offset, row, why in read_lines(fh, max_bytes):
            if row is None:
                if why:
                    index.bad.append((line_no, why))
                continue
            key = _key_digest(row)
            if key != previous:
                found = db.execute("SELECT gid FROM groups WHERE key = ?", (key,)).fetchone()
                if found is None:
                    gid += 1
                    db.execute("INSERT INTO groups VALUES (?, ?)", (key, gid))
                    current = gid
                else:
                    index.adjacent = False
                    current = found[0]
                previous = key
            pending.append((line_no, offset, current))
            if len(pending) >= 10_000:
                db.executemany("INSERT INTO rows VALUES (?, ?, ?)", pending)
                pending.clear()
        db.executemany("INSERT INTO rows VALUES (?, ?, ?)", pending)
        if not index.adjacent:
            db.execute("CREATE INDEX rows_by_group ON rows (gid, line)")
        return index

    def rows_by_group(self) -> Iterator[tuple[int, int, int]]:
        cursor = self.db.execute("SELECT gid, line, offset FROM rows ORDER BY gid, line")
        yield from cursor

    def put_output(self, line_no: int, data: bytes) -> None:
        self.db.execute("INSERT INTO output VALUES (?, ?)", (line_no, data))

    def outputs_in_order(self) -> Iterator[bytes]:
        for (data,) in self.db.execute("SELECT data FROM output ORDER BY line"):
            yield data
