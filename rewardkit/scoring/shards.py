"""The shards of the Ray engine (``rewardkit score --engine ray``): how the input is cut
(:func:`plan_shards`: about ``batch_size`` rows, only where the group changes) and how a
shard's rows are read back (:func:`read_shard`; parquet by a reading stage that streams
each row group once, :func:`read_units`). JSONL lines are read by the local engine's
:func:`~rewardkit.scoring.rows.read_lines` (a line over ``limits.max_line_bytes`` is
reported, never read whole); parquet rows get the check a JSONL line gets
(:func:`~rewardkit.scoring.rows.row_problem`)."""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rewardkit.scoring.manifest import ResumeError
from rewardkit.scoring.rows import read_lines, row_problem
from rewardkit.types import Sample, group_key, group_key_text


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
    """``parquet`` or ``jsonl``, by the suffix of ``path``."""
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


def row_key(row: dict[str, Any]) -> Any:
    """The group (prompt) of ``row``, comparable and hashable: shards end only where it
    changes."""
    return group_key_text(group_key(Sample.from_dict(row)))


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
            key = last_key if row is None else row_key(row)
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
            key = row_key(row)
            if row_no - start >= batch_size and key != last_key:
                shards.append(Shard(len(shards), start, row_no, start, row_no - start))
                start = row_no
            last_key = key
            row_no += 1
    if row_no > start or not shards:
        shards.append(Shard(len(shards), start, row_no, start, row_no - start))
    return shards


# -- reading one shard (Ray Data stages) ---------------------------------------------
def read_shard(path: Path, fmt: str, shard: Shard, bad: list[tuple[int, str]],
               max_bytes: int) -> list[tuple[int, dict[str, Any]]]:
    """The rows of ``shard`` with their line (row) numbers; malformed JSONL lines (parquet
    rows) go to ``bad`` with their number. JSONL lines are read by the local engine's
    :func:`read_lines` (a line over ``max_bytes`` is reported, never read whole); parquet
    rows get the check a JSONL line gets (:func:`row_problem`), numbered from 1."""
    if fmt == "parquet":
        return checked_rows(_read_parquet_rows(path, shard.start, shard.end), shard, bad)
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


def checked_rows(records: list[dict[str, Any]], shard: Shard, bad: list[tuple[int, str]]
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
