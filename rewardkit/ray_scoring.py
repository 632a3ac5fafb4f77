"""Offline scoring of large JSONL or parquet files on Ray Data (``rewardkit score --engine ray``).

How it keeps its promises:

* **groups whole**: the driver reads the input once (streaming) and cuts it into shards of
  about ``batch_size`` rows, only where the group (prompt) changes, as the local scorer
  does; a shard is scored by one ``RewardSet.score`` call, so group rewards and per-group
  normalisation see every completion of a prompt (lines of one prompt must be adjacent);
* **streaming, bounded memory**: shards are the blocks of a Ray Data pipeline whose
  scoring actors read their own rows from the input (a path every node can read) and
  return the scored lines; Ray Data's backpressure bounds what is in flight, and the
  driver writes each shard as it comes, in input order;
* **resumable, no lost and no duplicated rows**: the output grows in ``OUT.partial``;
  after a shard's lines are on disk (fsync) the driver appends one line to the manifest
  ``OUT.progress`` with the shard and the output length it ends at (fsync again). After a
  crash, ``--resume`` cuts ``OUT.partial`` back to the last committed length, skips the
  committed shards and scores the rest. The shards are a function of the input and
  ``batch_size``, and the manifest's first line records both (with the input's size and
  modification time), so a resume against changed input is refused;
* **progress**: ``on_progress(rows_done, rows_total)`` after every shard;
* **the local engine's promises**: lines are read and written with its code
  (:func:`parse_line`, :func:`row_problem`, :func:`render`), the output-path rules
  (:func:`check_paths`) and the lock on ``--out`` (:class:`OutputLock`) are its own, checked
  before anything is scored, and the summary is accumulated in its
  :class:`RunningMetrics`, shard by shard.

The output has the local scorer's format: each input row plus ``reward`` and
``components``; at the end ``OUT.partial`` becomes ``OUT`` and the manifest is removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
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
    parse_line,
    render,
    row_problem,
)
from rewardkit.types import Sample, Score, Status

ProgressFn = Callable[[int, int], None]
#: latencies kept per component per shard for the summary's p50/p95
LATENCY_SAMPLE = 64
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
def plan_shards(path: Path, fmt: str, batch_size: int) -> list[Shard]:
    """Cut the input into shards of about ``batch_size`` rows at group boundaries."""
    if fmt == "parquet":
        return _plan_parquet(path, batch_size)
    return _plan_jsonl(path, batch_size)


def _key_of_line(line: bytes, line_no: int) -> Any:
    row, _ = parse_line(line, line_no)
    return None if row is None else _row_key(row)


def _row_key(row: dict[str, Any]) -> Any:
    key = group_key(Sample.from_dict(row))
    return key if isinstance(key, str | int | float) else json.dumps(key, default=str)


def _plan_jsonl(path: Path, batch_size: int) -> list[Shard]:
    shards: list[Shard] = []
    start = offset = 0
    first = line_no = 1
    rows = 0
    last_key: Any = object()
    with path.open("rb") as fh:
        for line in fh:
            if line.strip():
                # a malformed line (no key) never starts a shard: it stays with its
                # neighbours and is reported when the shard is read
                key = _key_of_line(line, line_no)
                if key is None:
                    key = last_key
                elif rows >= batch_size and key != last_key:
                    shards.append(Shard(len(shards), start, offset, first, rows))
                    start, first, rows = offset, line_no, 0
                rows += 1
                last_key = key
            offset += len(line)
            line_no += 1
    if rows or not shards:
        shards.append(Shard(len(shards), start, offset, first, rows))
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
def read_shard(path: Path, fmt: str, shard: Shard,
               bad: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """The rows of ``shard``; malformed JSONL lines (parquet rows) go to ``bad`` with their
    line (row) number (what is malformed is the local engine's :func:`parse_line`)."""
    rows: list[dict[str, Any]] = []
    if fmt == "parquet":  # checked as a JSONL line is (:func:`row_problem`), numbered from 1
        for row_no, record in enumerate(_read_parquet_rows(path, shard.start, shard.end),
                                        shard.start + 1):
            why = row_problem(record)
            if why:
                bad.append((row_no, why))
            else:
                rows.append(record)
        return rows
    with path.open("rb") as fh:
        fh.seek(shard.start)
        data = fh.read(shard.end - shard.start)
    for line_no, line in enumerate(data.split(b"\n"), shard.first):
        row, why = parse_line(line, line_no)
        if row is not None:
            rows.append(row)
        elif why:
            bad.append((line_no, why))
    return rows


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

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"shard": [], "text": [], "rows": [], "bad": [],
                                     "latencies": []}
        for i in range(len(batch["shard"])):
            shard = Shard(**{k: int(batch[k][i]) for k in ("shard", "start", "end", "first",
                                                            "rows")})
            bad: list[tuple[int, str]] = []
            rows = read_shard(self.path, self.fmt, shard, bad)
            text, result = score_rows(self.rs, rows, self.step) if rows else (b"", None)
            latencies = {} if result is None else {
                name: _sample(o.latencies) for name, o in result.outcomes.items()}
            out["shard"].append(shard.shard)
            out["text"].append(text)
            out["rows"].append(len(rows))
            out["bad"].append(json.dumps(bad))
            out["latencies"].append(json.dumps(latencies))
        return out


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
    from rewardkit.ray_executor import _import_ray

    ray = _import_ray()
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
    shards = plan_shards(src, fmt, batch_size)
    rows_total = sum(s.rows for s in shards)
    rows_done = sum(e["rows"] + len(e["bad"]) for e in done.values())
    pending = [s for s in shards if s.shard not in done]
    if on_progress:
        on_progress(rows_done, rows_total)
    if pending:
        if not ray.is_initialized():
            from rewardkit.ray_auth import init_ray  # the auth mode decided, not Ray's guess

            init_ray(address)
        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        size = min(len(pending), concurrency or max(1, int(ray.cluster_resources().get("CPU", 1))))
        ds = ray.data.from_items([asdict(s) for s in pending],
                                 override_num_blocks=len(pending))
        ds = ds.map_batches(ShardScorer, batch_size=1, concurrency=size, num_cpus=1,
                            fn_constructor_kwargs={"config": config, "path": str(src),
                                                   "fmt": fmt, "step": step})
        for row in ds.iter_rows():
            data = bytes(row["text"])
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
            length += len(data)
            entry = {"shard": int(row["shard"]), "rows": int(row["rows"]),
                     "end_offset": length, "bad": json.loads(row["bad"]),
                     "latencies": json.loads(row["latencies"])}
            log.write((json.dumps(entry) + "\n").encode())
            log.flush()
            os.fsync(log.fileno())
            done[entry["shard"]] = entry
            rows_done += entry["rows"] + len(entry["bad"])
            if on_progress:
                on_progress(rows_done, rows_total)
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
