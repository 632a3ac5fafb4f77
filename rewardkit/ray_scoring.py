"""Offline scoring of large JSONL or parquet files on Ray Data (``rewardkit score --engine ray``).

How it keeps its promises:

* **groups whole**: the driver reads the input once (streaming) and cuts it into shards of
  about ``batch_size`` rows, only where the group (prompt) changes, as the local scorer
  does; a shard is scored by one ``RewardSet.score`` call, so group rewards and per-group
  normalisation see every completion of a prompt (lines of one prompt must be adjacent);
* **streaming, bounded memory**: shards are the blocks of a Ray Data pipeline whose
  scoring actors read their own rows from the input (a path every node can read) and
  return the scored lines; Ray Data's backpressure bounds what is in flight, and the
  driver writes each shard as it comes, in input order. Parquet rows come from a reading
  stage before the actors (:func:`read_units`), which streams each row group once and
  cuts it into shards, however many shards share the group;
* **resumable, no lost and no duplicated rows**: the output grows in ``OUT.partial``;
  after a shard's lines are on disk (fsync) the driver appends one line to the manifest
  ``OUT.progress`` with the shard and the output length it ends at (fsync again). After a
  crash, ``--resume`` cuts ``OUT.partial`` back to the last committed length, skips the
  committed shards and scores the rest. The shards are a function of the input and
  ``batch_size``, and the manifest's first line records both (with the input's size and
  modification time), so a resume against changed input is refused;
* **progress**: ``on_progress(rows_done, rows_total)`` after every shard;
* **a row that kills its process**: a shard whose actor dies is retried
  ``SHARD_RETRIES`` times, then rescored in pieces in fresh actors (:class:`_Rescue`) until
  the rows that kill the process are found: those are reported with their line number,
  the rest of the shard is scored, and the run ends;
* **the local engine's promises**: lines are read and written with its code
  (:func:`read_lines`, :func:`row_problem`, :func:`render`; a line over
  ``limits.max_line_bytes`` is reported, never read whole), the output-path rules
  (:func:`check_paths`) and the lock on ``--out`` (:class:`OutputLock`) are its own, checked
  before anything is scored, and the summary is accumulated in its
  :class:`RunningMetrics`, shard by shard.

The output has the local scorer's format: each input row plus ``reward`` and
``components``; at the end ``OUT.partial`` becomes ``OUT`` and the manifest is removed.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import json
import os
import stat
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from rewardkit.composition import RewardSet, group_key
from rewardkit.config import RewardConfig
from rewardkit.execution import Outcome
from rewardkit.running_metrics import RunningMetrics
from rewardkit.score_result import ScoreResult
from rewardkit.scoring_file import (
    OutputLock,
    ScoringFileError,
    check_paths,
    read_lines,
    render,
    row_problem,
)
from rewardkit.types import Sample, Score, Status

ProgressFn = Callable[[int, int], None]
#: latencies kept per component per shard for the summary's p50/p95
LATENCY_SAMPLE = 64
#: times Ray retries a shard whose actor died (a lost node) before the shard counts as
#: failed and is rescored piece by piece to find the row that kills its process
SHARD_RETRIES = 1
#: the report for a row on which the scoring process dies
KILLED = ("the scoring process died on this row (a reward that ends its process: "
          "os._exit, a segfault, an OOM kill); not scored")
MANIFEST_VERSION = 1


class ResumeError(Exception):
    """The output or its manifest do not allow this run (or this resume)."""


@dataclass(frozen=True)
class Shard:
    """Rows ``start`` to ``end`` (bytes of a JSONL file, rows of a parquet file)."""

    shard: int
    start: int
    end: int
    #: line number of the first line (JSONL) or row number of the first row (parquet)
    first: int
    rows: int


def input_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    raise ResumeError(f"{path}: unknown input format {suffix!r} (expected .jsonl or .parquet)")


# -- planning (driver) ---------------------------------------------------------------
def plan_shards(path: Path, fmt: str, batch_size: int, max_bytes: int) -> list[Shard]:
    """Cut the input into shards of about ``batch_size`` rows at group boundaries (no
    JSONL line longer than ``max_bytes`` is read whole)."""
    if fmt == "parquet":
        return _plan_parquet(path, batch_size)
    return _plan_jsonl(path, batch_size, max_bytes)


def _row_key(row: dict[str, Any]) -> Any:
    key = group_key(Sample.from_dict(row))
    return key if isinstance(key, str | int | float) else json.dumps(key, default=str)


def _plan_jsonl(path: Path, batch_size: int, max_bytes: int) -> list[Shard]:
    shards: list[Shard] = []
    start = 0
    first = 1
    rows = 0
    last_key: Any = object()
    with path.open("rb") as fh:
        for line_no, offset, row, why in read_lines(fh, max_bytes):
            if row is None and not why:
                continue  # blank
            # a malformed line (no key) never starts a shard: it stays with its
            # neighbours and is reported when the shard is read
            key = last_key if row is None else _row_key(row)
            if row is not None and rows >= batch_size and key != last_key:
                shards.append(Shard(len(shards), start, offset, first, rows))
                start, first, rows = offset, line_no, 0
            rows += 1
            last_key = key
        end = fh.tell()
    if rows or not shards:
        shards.append(Shard(len(shards), start, end, first, rows))
    return shards


def _plan_parquet(path: Path, batch_size: int) -> list[Shard]:
    import pyarrow.parquet as pq

    shards: list[Shard] = []
    start = row_no = 0
    last_key: Any = object()
    for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            key = _row_key(row)
            if row_no - start >= batch_size and key != last_key:
                shards.append(Shard(len(shards), start, row_no, start, row_no - start))
                start = row_no
            last_key = key
            row_no += 1
    if row_no > start or not shards:
        shards.append(Shard(len(shards), start, row_no, start, row_no - start))
    return shards


# -- scoring one shard (Ray Data actor) -----------------------------------------------
def read_shard(path: Path, fmt: str, shard: Shard, bad: list[tuple[int, str]],
               max_bytes: int) -> list[tuple[int, dict[str, Any]]]:
    """The rows of ``shard`` with their line (row) numbers; malformed JSONL lines (parquet
    rows) go to ``bad`` with their number. JSONL lines are read by the local engine's
    :func:`read_lines` (a line over ``max_bytes`` is reported, never read whole); parquet
    rows get the check a JSONL line gets (:func:`row_problem`), numbered from 1."""
    if fmt == "parquet":
        return _checked(_read_parquet_rows(path, shard.start, shard.end), shard, bad)
    rows: list[tuple[int, dict[str, Any]]] = []
    with path.open("rb") as fh:
        fh.seek(shard.start)
        for line_no, offset, row, why in read_lines(fh, max_bytes, shard.first):
            if shard.start + offset >= shard.end:
                break
            if row is not None:
                rows.append((line_no, row))
            elif why:
                bad.append((line_no, why))
    return rows


def _checked(records: list[dict[str, Any]], shard: Shard, bad: list[tuple[int, str]]
             ) -> list[tuple[int, dict[str, Any]]]:
    """Parquet rows of ``shard`` numbered from 1, each checked as a JSONL line is
    (:func:`row_problem`): those that cannot be scored go to ``bad``."""
    rows: list[tuple[int, dict[str, Any]]] = []
    for row_no, record in enumerate(records, shard.start + 1):
        why = row_problem(record)
        if why:
            bad.append((row_no, why))
        else:
            rows.append((row_no, record))
    return rows


def parquet_reads(path: Path, shards: list[Shard]) -> list[list[Shard]]:
    """``shards`` (in order) in read units: the shards that share a row group are in one
    unit, which reads each of its row groups once (:func:`read_unit`) however many shards
    cut it (pyarrow writes one big row group by default)."""
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).metadata
    ends, offset = [], 0
    for i in range(metadata.num_row_groups):
        offset += metadata.row_group(i).num_rows
        ends.append(offset)

    def group_of(row: int) -> int:
        return bisect.bisect_right(ends, row)

    units: list[list[Shard]] = []
    last_group = -1
    for shard in shards:
        if units and shard.rows and group_of(shard.start) <= last_group:
            units[-1].append(shard)
        else:
            units.append([shard])
        if shard.rows:
            last_group = max(last_group, group_of(shard.end - 1))
    return units


def read_unit(path: Path, unit: list[Shard]) -> Iterator[tuple[Shard, bytes]]:
    """Each shard of ``unit`` with its rows as an Arrow IPC stream, reading the row groups
    they span once, batch by batch: memory is one shard and one batch, not the group."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def payload(batches: list[pa.RecordBatch]) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, pf.schema_arrow) as writer:
            for piece in batches:
                writer.write_batch(piece)
        return bytes(sink.getvalue().to_pybytes())

    pf = pq.ParquetFile(path)
    groups: list[int] = []
    row = offset = 0
    for i in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(i).num_rows
        if offset + n > unit[0].start and offset < unit[-1].end:
            row = row if groups else offset  # the first row of the first group read
            groups.append(i)
        offset += n
    shards = iter(unit)
    shard = next(shards, None)
    pieces: list[pa.RecordBatch] = []
    batches = pf.iter_batches(batch_size=4096, row_groups=groups) if groups else iter(())
    for batch in itertools.chain(batches, [None]):
        n = 0 if batch is None else batch.num_rows
        while shard is not None:
            lo, hi = max(shard.start, row), min(shard.end, row + n)
            if batch is not None and lo < hi:
                pieces.append(batch.slice(lo - row, hi - lo))
            if shard.end > row + n and batch is not None:
                break  # the shard goes on in the next batch
            yield shard, payload(pieces)
            pieces = []
            shard = next(shards, None)
        row += n


def read_units(batch: dict[str, Any], path: str) -> Iterator[dict[str, list[Any]]]:
    """The Ray Data reading stage for parquet: one output row per shard of the unit, with
    its rows (see :func:`read_unit`)."""
    for unit_json in batch["unit"]:
        unit = [Shard(**s) for s in json.loads(unit_json)]
        for shard, rows in read_unit(Path(path), unit):
            yield {**{k: [v] for k, v in asdict(shard).items()}, "payload": [rows]}


def _read_parquet_rows(path: Path, start: int, end: int) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    rows: list[dict[str, Any]] = []
    offset = 0
    for i in range(pf.num_row_groups):
        n = pf.metadata.row_group(i).num_rows
        if offset + n > start and offset < end:
            table = pf.read_row_group(i)
            lo, hi = max(start - offset, 0), min(end - offset, n)
            rows.extend(table.slice(lo, hi - lo).to_pylist())
        offset += n
        if offset >= end:
            break
    return rows


def score_rows(rs: RewardSet, rows: list[dict[str, Any]], step: int
               ) -> tuple[bytes, ScoreResult]:
    """Scored output lines (the local scorer's format and :func:`render`: standard JSON,
    valid UTF-8) and the result."""
    result = rs.score([Sample.from_dict(r) for r in rows], step=step)
    lines = []
    for row, scored in zip(rows, result, strict=True):
        row = dict(row)
        row["reward"] = scored.total
        row["components"] = {
            name: {"value": s.value, "status": str(s.status), "reason": s.reason}
            for name, s in scored.scores.items()
        }
        lines.append(render(row))
    return b"".join(lines), result


class ShardScorer:
    """The Ray Data actor: one RewardSet, built once, scoring whole shards."""

    def __init__(self, config: RewardConfig, path: str, fmt: str, step: int) -> None:
        local = config.model_copy(update={"executor": "local"})
        self.rs = RewardSet(local)
        self.path = Path(path)
        self.fmt = fmt
        self.step = step
        self.max_bytes = config.limits.max_line_bytes

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"shard": [], "text": [], "rows": [], "bad": [],
                                     "latencies": []}
        for i in range(len(batch["shard"])):
            shard = Shard(**{k: int(batch[k][i]) for k in ("shard", "start", "end", "first",
                                                            "rows")})
            bad: list[tuple[int, str]] = []
            if "payload" in batch:  # parquet rows read by the reading stage (read_units)
                import pyarrow as pa

                records = pa.ipc.open_stream(batch["payload"][i]).read_all().to_pylist()
                numbered = _checked(records, shard, bad)
            else:
                numbered = read_shard(self.path, self.fmt, shard, bad, self.max_bytes)
            rows = [row for _, row in numbered]
            text, latencies = self.score(rows)
            out["shard"].append(shard.shard)
            out["text"].append(text)
            out["rows"].append(len(rows))
            out["bad"].append(json.dumps(bad))
            out["latencies"].append(json.dumps(latencies))
        return out

    def score(self, rows: list[dict[str, Any]]) -> tuple[bytes, dict[str, list[float]]]:
        """The scored lines of ``rows`` and a sample of each component's latencies (also
        called alone, on pieces of a shard that failed: :class:`_Rescue`)."""
        if not rows:
            return b"", {}
        text, result = score_rows(self.rs, rows, self.step)
        return text, {name: _sample(o.latencies) for name, o in result.outcomes.items()}


def _sample(vals: list[float]) -> list[float]:
    if len(vals) <= LATENCY_SAMPLE:
        return vals
    step = len(vals) / LATENCY_SAMPLE
    return [vals[int(i * step)] for i in range(LATENCY_SAMPLE)]


# -- the run (driver) -----------------------------------------------------------------
def _fingerprint(config: RewardConfig, src: Path, batch_size: int, step: int) -> dict[str, Any]:
    stat = src.stat()
    digest = hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:16]
    return {"version": MANIFEST_VERSION, "input": str(src.resolve()), "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns, "batch_size": batch_size, "step": step,
            "config": digest}


def _load_manifest(text: str, manifest: Path, partial: Path, expected: dict[str, Any]
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


def _open_own(path: Path, fresh: bool) -> IO[bytes]:
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


def score_with_ray(config: RewardConfig, src: Path, dst: Path, step: int = 0,
                   batch_size: int = 1024, resume: bool = False,
                   address: str | None = None, concurrency: int | None = None,
                   on_progress: ProgressFn | None = None) -> dict[str, Any]:
    """Score ``src`` (JSONL or parquet) into ``dst`` (JSONL) on Ray Data. The output-path
    rules (:func:`check_paths`) and the lock on ``dst`` are the local engine's, checked
    before anything is scored."""
    from rewardkit.execution.ray_cluster import import_ray

    ray = import_ray()
    fmt = input_format(src)
    check_paths(src, dst)
    for own in (dst.with_name(dst.name + ".partial"), dst.with_name(dst.name + ".progress")):
        if own.exists() and os.path.samefile(src, own):
            raise ScoringFileError(f"{src} is named like this run's own {own.name}; "
                                   "rename it or write elsewhere")
    with OutputLock(dst):
        return _score_locked(ray, config, src, dst, fmt, step, batch_size, resume, address,
                             concurrency, on_progress)


def _score_locked(ray: Any, config: RewardConfig, src: Path, dst: Path, fmt: str, step: int,
                  batch_size: int, resume: bool, address: str | None,
                  concurrency: int | None, on_progress: ProgressFn | None) -> dict[str, Any]:
    """The run, while this process holds the lock on ``dst``."""
    partial = dst.with_name(dst.name + ".partial")
    manifest = dst.with_name(dst.name + ".progress")
    expected = _fingerprint(config, src, batch_size, step)
    if os.path.lexists(manifest) and not resume:
        raise ResumeError(f"{manifest} shows an unfinished earlier run: add --resume to "
                          f"continue it, or remove {manifest.name} and {partial.name}")
    fresh = not os.path.lexists(manifest)
    with contextlib.ExitStack() as files:
        log = files.enter_context(_open_own(manifest, fresh))
        out = files.enter_context(_open_own(partial, fresh))
        return _score_into(ray, config, src, dst, fmt, step, batch_size, address,
                           concurrency, on_progress, expected, fresh, log, out)


def _score_into(ray: Any, config: RewardConfig, src: Path, dst: Path, fmt: str, step: int,
                batch_size: int, address: str | None, concurrency: int | None,
                on_progress: ProgressFn | None, expected: dict[str, Any], fresh: bool,
                log: IO[bytes], out: IO[bytes]) -> dict[str, Any]:
    partial = dst.with_name(dst.name + ".partial")
    manifest = dst.with_name(dst.name + ".progress")
    done: dict[int, dict[str, Any]] = {}
    length = 0
    if fresh:
        log.write((json.dumps(expected) + "\n").encode())
        log.flush()
        os.fsync(log.fileno())
    else:
        text = log.read().decode("utf-8", errors="replace")
        done, length = _load_manifest(text, manifest, partial, expected)
        log.seek(0, os.SEEK_END)
        size = os.fstat(out.fileno()).st_size
        if size < length:
            raise ResumeError(
                f"{partial} is {size} bytes but {manifest.name} records {length} committed: "
                f"one of them is damaged; remove both to score from the start")
    out.truncate(length)  # drop whatever a crash left past the last commit
    out.seek(length)
    shards = plan_shards(src, fmt, batch_size, config.limits.max_line_bytes)
    rows_total = sum(s.rows for s in shards)
    rows_done = sum(e["rows"] + len(e["bad"]) for e in done.values())
    pending = [s for s in shards if s.shard not in done]
    if on_progress:
        on_progress(rows_done, rows_total)
    def commit(shard: int, text: bytes, rows: int, bad: list[Any],
               latencies: dict[str, list[float]]) -> None:
        """Write one shard's lines, then record it in the manifest (each on disk)."""
        nonlocal length, rows_done
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
        length += len(text)
        entry = {"shard": shard, "rows": rows, "end_offset": length, "bad": bad,
                 "latencies": latencies}
        log.write((json.dumps(entry) + "\n").encode())
        log.flush()
        os.fsync(log.fileno())
        done[shard] = entry
        rows_done += rows + len(bad)
        if on_progress:
            on_progress(rows_done, rows_total)

    if pending:
        if not ray.is_initialized():
            from rewardkit.execution.ray_cluster import init_ray  # the auth mode decided, not Ray's guess

            init_ray(address)
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        # read when the dataset is made: a failed shard is rescued below (not the end of
        # the run), and every shard is a block of its own, so the scoring actors share
        # the shards one read of a parquet row group gives (else they are one block)
        saved = ctx.max_errored_blocks, ctx.target_max_block_size
        ctx.max_errored_blocks, ctx.target_max_block_size = -1, 1
        size = min(len(pending), concurrency or max(1, int(ray.cluster_resources().get("CPU", 1))))
        if fmt == "parquet":  # each row group read once, by a reading stage
            units = parquet_reads(src, pending)
            ds = ray.data.from_items([{"unit": json.dumps([asdict(s) for s in unit])}
                                      for unit in units], override_num_blocks=len(units))
            # no CPU asked: the scoring actors may hold them all; at most `size` at once
            ds = ds.map_batches(read_units, batch_size=1, num_cpus=0,
                                concurrency=min(len(units), size),
                                fn_kwargs={"path": str(src)})
        else:
            ds = ray.data.from_items([asdict(s) for s in pending],
                                     override_num_blocks=len(pending))
        # an actor that dies is restarted, and its shard retried SHARD_RETRIES times (Ray
        # Data's default retries it forever: a row that kills its process hung the run);
        # a shard that still fails is skipped by the pipeline and rescued below. The
        # retries are actor options, given as ray_remote_args: Ray 2.60 has no named
        # parameter for them (it warns that the kwargs go in 2.64)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
            ds = ds.map_batches(ShardScorer, batch_size=1, concurrency=size, num_cpus=1,
                                max_restarts=-1, max_task_retries=SHARD_RETRIES,
                                fn_constructor_kwargs={"config": config, "path": str(src),
                                                       "fmt": fmt, "step": step})
        ctx.max_errored_blocks, ctx.target_max_block_size = saved
        rescue = _Rescue(ray, config, src, fmt, step)
        waiting = iter(pending)  # the shards in input order: those skipped failed
        try:
            for row in ds.iter_rows():
                number = int(row["shard"])
                for shard in waiting:
                    if shard.shard == number:
                        break
                    commit(shard.shard, *rescue.shard(shard))
                commit(number, bytes(row["text"]), int(row["rows"]), json.loads(row["bad"]),
                       json.loads(row["latencies"]))
            for shard in waiting:
                commit(shard.shard, *rescue.shard(shard))
        except ray.exceptions.RayError as exc:  # not a row's fault: the actors cannot run
            first = str(exc).strip().splitlines()
            raise ResumeError(
                f"scoring on Ray failed: {type(exc).__name__}: {first[0] if first else ''}; "
                f"the {len(done)} shards committed are kept in {partial.name}: fix the "
                "cause and run again with --resume") from exc
        finally:
            rescue.close()
    missing = [s.shard for s in shards if s.shard not in done]
    if missing:
        raise ResumeError(f"shards {missing[:5]} were not scored; run again with --resume")
    bad = [tuple(b) for s in shards for b in done[s.shard]["bad"]]
    summary = summarize(config, partial, list(done.values()), step)  # in written order
    partial.replace(dst)
    manifest.unlink()
    result = summary.metrics()
    return {"out": str(dst), "step": step, "scored": summary.samples, "bad_lines": bad,
            "skipped_lines": len(bad), "shards": len(shards),
            "components": result["components"], "total": result["total"]}


class _Rescue:
    """Scores a shard that failed on the pipeline (its actor died on every try) in pieces,
    each in a scoring actor of its own, to find the rows on which the process dies: the
    shard's groups are halved until a piece scores or is one group; a group that fails
    is scored row by row, and its rows that do not kill the process are then scored
    together (the killing rows left out, as a malformed line is). A row that kills the
    process alone is reported with its line (row) number; everything else is scored."""

    def __init__(self, ray: Any, config: RewardConfig, src: Path, fmt: str,
                 step: int) -> None:
        self.ray = ray
        self.config = config
        self.src = src
        self.fmt = fmt
        self.step = step
        self.actor: Any = None
        self.actors_lost = 0

    def shard(self, shard: Shard) -> tuple[bytes, int, list[Any], dict[str, list[float]]]:
        """(scored lines, rows scored, bad rows, latencies) of ``shard``."""
        bad: list[tuple[int, str]] = []
        rows = read_shard(self.src, self.fmt, shard, bad, self.config.limits.max_line_bytes)
        groups: list[list[tuple[int, dict[str, Any]]]] = []
        for numbered in rows:
            if groups and _row_key(groups[-1][-1][1]) == _row_key(numbered[1]):
                groups[-1].append(numbered)
            else:
                groups.append([numbered])
        pieces = self._groups(groups, bad)
        latencies: dict[str, list[float]] = {}
        for _, lat in pieces:
            for name, values in lat.items():
                latencies.setdefault(name, []).extend(values)
        killed = sum(1 for _, why in bad if why == KILLED)
        return (b"".join(text for text, _ in pieces), len(rows) - killed,
                [list(b) for b in sorted(bad)],
                {name: _sample(v) for name, v in latencies.items()})

    def _groups(self, groups: list[list[tuple[int, dict[str, Any]]]],
                bad: list[tuple[int, str]]) -> list[tuple[bytes, dict[str, list[float]]]]:
        if not groups:
            return []
        scored = self._try([row for group in groups for _, row in group])
        if scored is not None:
            return [scored]
        if len(groups) > 1:
            half = len(groups) // 2
            return self._groups(groups[:half], bad) + self._groups(groups[half:], bad)
        if len(groups[0]) == 1:
            bad.append((groups[0][0][0], KILLED))
            return []
        survivors = []
        for line_no, row in groups[0]:
            if self._try([row]) is None:
                bad.append((line_no, KILLED))
            else:
                survivors.append((line_no, row))
        if not survivors:
            return []
        scored = self._try([row for _, row in survivors])
        if scored is None:  # only together do they kill it: the group is not scored
            bad.extend((line_no, KILLED) for line_no, _ in survivors)
            return []
        return [scored]

    def _try(self, rows: list[dict[str, Any]]) -> tuple[bytes, dict[str, list[float]]] | None:
        """``rows`` scored in the rescue actor, or None when its process died (a fresh
        actor is started for the next try)."""
        if self.actor is None:
            # no CPU asked: the pipeline's actors may hold them all while it waits
            remote = self.ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)
            self.actor = remote(ShardScorer).remote(self.config, str(self.src), self.fmt,
                                                    self.step)
        try:
            text, latencies = self.ray.get(self.actor.score.remote(rows))
        except self.ray.exceptions.RayActorError:
            self.actor = None
            self.actors_lost += 1
            return None
        return bytes(text), latencies

    def close(self) -> None:
        if self.actor is not None:
            self.ray.kill(self.actor)
            self.actor = None


def summarize(config: RewardConfig, scored: Path, entries: list[dict[str, Any]],
              step: int) -> RunningMetrics:
    """The summary of a scored file, rebuilt from it shard by shard (so a resumed run's
    summary covers every row, not only those of its last part) in the local engine's
    :class:`RunningMetrics`: memory is one shard's rows, whatever the file's length.
    ``entries`` are the shards in the order their lines were written."""
    names = list(config.rewards)
    weights = RewardSet(config.model_copy(update={"executor": "local"})).weights(step)
    metrics = RunningMetrics(step)
    rows = _scored_rows(scored)
    for e in entries:
        outcomes = {name: Outcome(0) for name in names}
        totals: list[float | None] = []
        for i in range(e["rows"]):
            row = next(rows)
            totals.append(row.get("reward"))
            comps = row.get("components", {})
            for name in names:
                c = comps.get(name, {})
                value = c.get("value")
                status = Status(c.get("status", "ok"))
                outcomes[name].values.append(value)
                if status is not Status.OK or c.get("reason"):
                    outcomes[name].scores[i] = Score(value, status, c.get("reason", ""))
        for name, lat in e.get("latencies", {}).items():
            if name in outcomes:
                outcomes[name].latencies.extend(lat)
        metrics.add(ScoreResult(step, [], totals, outcomes, weights, config.aggregate))
    return metrics


def _scored_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("r", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
