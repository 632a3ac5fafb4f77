"""Scoring a JSONL file of samples (``rewardkit score``), streaming, batch by batch.

Each input line is written back plus ``reward`` (the total, or null) and ``components``
({name: {value, status, reason}}, plus ``latency_ms`` for a reward timed sample by sample:
process mode, and ``turn_values`` for a per-turn reward). Malformed lines are reported
with their line number, counted and skipped; nothing else is dropped (what counts as
malformed, and how a line is read and written back: :mod:`rewardkit.scoring.rows`,
shared with the Ray engine).

Whole groups: when the config has a group reward or ``normalize_then_sum``, every prompt's
rows are scored in one batch wherever they are in the file. Adjacent rows (the usual
layout) stream as they come; otherwise rows are indexed by group on disk (SQLite in a
temporary folder) and scored group by group, and the output keeps the input order.

Memory stays flat whatever the length of the file: the summary is accumulated by
:class:`~rewardkit.scoring.metrics.RunningMetrics` and only one batch is held at a time.
The output goes to a temporary file created exclusively beside ``--out`` (never a
pre-planted link, never the input), flushed to disk and renamed over ``--out`` at the end,
and removed on failure. While a run lasts it holds an exclusive lock on ``--out``
(:class:`~rewardkit.scoring.output.OutputLock`, shared with the Ray engine): a second run
on the same output refuses at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import sqlite3
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from rewardkit.authoring import whole_group_needs
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.scoring.metrics import RunningMetrics
from rewardkit.scoring.output import STDIN, OutputLock, ScoringFileError, check_paths
from rewardkit.scoring.rows import count_lines, parse_line, read_lines, render, scored_row
from rewardkit.types import Sample, group_key, group_key_text

ProgressFn = Callable[[int, int | None], None]
#: where a batch's scored lines go: (line number, the line)
Sink = Callable[[int, bytes], None]
#: what :func:`score_batches` hands each scored batch to: its line numbers, rows, samples
#: and the :class:`ScoreResult`
Consumer = Callable[[list[int], list[dict[str, Any]], list[Sample], ScoreResult], None]


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


class _InterruptsHeld:
    """Holds back Ctrl-C (SIGINT) from entering until :meth:`release`: a KeyboardInterrupt
    landing after a file is created and before the ``try`` that removes it would leave the
    file behind. Released, a Ctrl-C that came meanwhile is delivered again, to the handler
    that was there before. Outside the main thread (where no signal handler runs) it holds
    nothing."""

    def __init__(self) -> None:
        self.pending = False
        self.previous: Any = None

    def __enter__(self) -> _InterruptsHeld:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if previous is not None:  # None: a handler not set from Python, left alone
                self.previous = signal.signal(signal.SIGINT, self._hold)
        return self

    def _hold(self, signum: int, frame: Any) -> None:
        self.pending = True

    def release(self) -> None:
        """Let Ctrl-C in again; one that came while held is raised now."""
        if self.previous is None:
            return
        signal.signal(signal.SIGINT, self.previous)
        self.previous = None
        if self.pending:
            self.pending = False
            signal.raise_signal(signal.SIGINT)

    def __exit__(self, *exc: object) -> None:
        self.release()


def _needs_whole_groups(rs: RewardSet) -> bool:
    return bool(whole_group_needs(rs.config.aggregate, {
        name: c.reward_class for name, c in rs.components.items()}))


def _key_digest(row: dict[str, Any]) -> bytes:
    text = group_key_text(group_key(Sample.from_dict(row)))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def score_jsonl(rs: RewardSet, src: Path, dst: Path, step: int = 0, batch_size: int = 1024,
                on_progress: ProgressFn | None = None) -> dict[str, Any]:
    """Score ``src`` (a path, ``-`` for standard input, or a pipe) into ``dst``; returns a
    summary with metrics over all lines."""
    from_stdin = str(src) == STDIN
    regular = check_paths(src, dst)
    with _InterruptsHeld() as held, OutputLock(dst):
        out = _Output(dst)
        try:
            held.release()  # a Ctrl-C during the set-up ends the run here, cleaning up
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


def score_batches(rs: RewardSet, src: Path, consume: Consumer, step: int = 0,
                  batch_size: int = 1024, on_progress: ProgressFn | None = None,
                  whole_groups: bool = False) -> dict[str, Any]:
    """Score ``src`` as :func:`score_jsonl` does (same batches, same whole groups, same
    malformed lines) but hand each scored batch to ``consume`` instead of writing it: the
    engine of the commands that measure a reward (``calibrate``, ``diff``). Groups are
    kept whole when the config needs it or ``whole_groups`` asks. Returns the summary
    (no ``out``)."""
    regular = False
    if str(src) != STDIN:
        mode = src.stat().st_mode  # FileNotFoundError for a missing file
        if stat.S_ISDIR(mode):
            raise ScoringFileError(f"{src} is a folder, not a JSONL file")
        regular = stat.S_ISREG(mode)
    with contextlib.ExitStack() as stack:
        fh: IO[bytes] = sys.stdin.buffer if str(src) == STDIN else stack.enter_context(
            src.open("rb"))
        fh, total_lines, index = _open_input(rs, fh, regular, Path(tempfile.gettempdir()),
                                             stack, whole_groups)
        batches = _Batches(rs, step, batch_size, total_lines, on_progress, consume)

        def ignore(data: bytes) -> None:
            pass

        if index is None or index.adjacent:
            _stream(fh, batches, rs.config.limits.max_line_bytes, ignore)
        else:
            _by_group(fh, index, batches, ignore)
    summary = batches.metrics.metrics()
    return {"step": step, "scored": batches.done, "bad_lines": batches.bad,
            "skipped_lines": len(batches.bad), "components": summary["components"],
            "total": summary["total"]}


def _score(rs: RewardSet, fh: IO[bytes], regular: bool, out: _Output, step: int,
           batch_size: int, on_progress: ProgressFn | None,
           stack: contextlib.ExitStack) -> dict[str, Any]:
    """Score the lines of ``fh`` into ``out``: as they come when each group's rows are
    adjacent (or groups do not matter), else group by group from the index on disk."""
    fh, total_lines, index = _open_input(rs, fh, regular, out.dst.parent, stack)
    batches = _Batches(rs, step, batch_size, total_lines, on_progress)
    if index is None or index.adjacent:
        _stream(fh, batches, rs.config.limits.max_line_bytes, out.fh.write)
    else:
        _by_group(fh, index, batches, out.fh.write)
    summary = batches.metrics.metrics()
    return {"step": step, "scored": batches.done, "bad_lines": batches.bad,
            "skipped_lines": len(batches.bad), "components": summary["components"],
            "total": summary["total"]}


def _open_input(rs: RewardSet, fh: IO[bytes], regular: bool, spool_dir: Path,
                stack: contextlib.ExitStack, whole_groups: bool = False
                ) -> tuple[IO[bytes], int | None, _GroupIndex | None]:
    """The input to read (a pipe is spooled to a file in ``spool_dir`` when whole groups
    are needed: the group index reads rows back by offset), its count of lines when it
    can be counted in advance, and its group index when whole groups are needed."""
    max_bytes = rs.config.limits.max_line_bytes
    total_lines: int | None = None
    if regular:
        total_lines = count_lines(fh, max_bytes)
        fh.seek(0)
    if not (whole_groups or _needs_whole_groups(rs)):
        return fh, total_lines, None
    if not regular:
        spool = stack.enter_context(tempfile.TemporaryFile(dir=spool_dir))  # noqa: SIM115
        shutil.copyfileobj(fh, spool)
        spool.seek(0)
        fh = spool
        total_lines = count_lines(fh, max_bytes)
        fh.seek(0)
    index = _GroupIndex.build(fh, stack, max_bytes)
    fh.seek(0)
    return fh, total_lines, index


def _stream(fh: IO[bytes], batches: _Batches, max_bytes: int,
            write: Callable[[bytes], object]) -> None:
    """Score the lines of ``fh`` in input order, writing each batch as it is scored."""
    def sink(line_no: int, data: bytes) -> None:
        write(data)

    for line_no, _, row, why in read_lines(fh, max_bytes):
        if row is None:
            if why:
                batches.bad.append((line_no, why))
            continue
        sample = Sample.from_dict(row)
        batches.add(line_no, row, sample, group_key(sample), sink)
    batches.flush(sink)


def _by_group(fh: IO[bytes], index: _GroupIndex, batches: _Batches,
              write: Callable[[bytes], object]) -> None:
    """Score the rows of ``fh`` group by group as ``index`` serves them, then write the
    scored lines in input order."""
    batches.bad = index.bad
    for gid, line_no, offset in index.rows_by_group():
        fh.seek(offset)
        row, _ = parse_line(fh.readline(), line_no)
        assert row is not None  # the index holds good lines only
        batches.add(line_no, row, Sample.from_dict(row), gid, index.put_output)
    batches.flush(index.put_output)
    for data in index.outputs_in_order():
        write(data)


class _Batches:
    """Rows gathered into batches of about ``batch_size``, cut only where the group
    changes; each batch is scored by one :meth:`RewardSet.score` call, its lines handed
    to a sink, its result added to the summary and the progress reported."""

    def __init__(self, rs: RewardSet, step: int, batch_size: int, total_lines: int | None,
                 on_progress: ProgressFn | None, consume: Consumer | None = None) -> None:
        self.rs = rs
        self.consume = consume
        self.step = step
        self.batch_size = batch_size
        self.total_lines = total_lines
        self.on_progress = on_progress
        self.metrics = RunningMetrics(step)
        #: (line number, why) of each line not scored
        self.bad: list[tuple[int, str]] = []
        self.done = 0
        self.rows: list[dict[str, Any]] = []
        self.samples: list[Sample] = []
        self.line_nos: list[int] = []
        self.group: Any = None

    def add(self, line_no: int, row: dict[str, Any], sample: Sample, group: Any,
            sink: Sink) -> None:
        """Add a row of ``group``; the batch so far is scored first when it is full and
        the group changes."""
        if len(self.samples) >= self.batch_size and group != self.group:
            self.flush(sink)
        self.group = group
        self.rows.append(row)
        self.samples.append(sample)
        self.line_nos.append(line_no)

    def flush(self, sink: Sink) -> None:
        """Score the batch so far and hand its lines to ``sink``."""
        if not self.samples:
            return
        result = self.rs.score(self.samples, step=self.step)
        if self.consume is not None:
            self.consume(self.line_nos, self.rows, self.samples, result)
        else:
            for line_no, data in zip(self.line_nos, _output_lines(self.rows, result),
                                     strict=True):
                sink(line_no, data)
        result.samples = []
        self.metrics.add(result)
        self.done += len(self.samples)
        self.rows, self.samples, self.line_nos = [], [], []
        if self.on_progress:
            self.on_progress(self.done + len(self.bad), self.total_lines)


def _output_lines(rows: list[dict[str, Any]], result: ScoreResult) -> Iterator[bytes]:
    """The output line of each row: :func:`scored_row`, plus ``latency_ms`` for a reward
    timed sample by sample (process mode)."""
    timed = {name: o.sample_seconds for name, o in result.outcomes.items()
             if o.sample_seconds}
    for j, (row, scored) in enumerate(zip(rows, result, strict=True)):
        line = scored_row(row, scored)
        for name, seconds in timed.items():
            if j in seconds:
                line["components"][name]["latency_ms"] = round(seconds[j] * 1000, 3)
        yield render(line)


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
