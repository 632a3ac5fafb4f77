"""Reading a parquet file of one big row group (pyarrow's default) shard by shard, the way
``rewardkit score --engine ray`` hands it to its scoring actors.

Writes N short rows in one row group, cuts them into shards of ``--batch-size`` rows (the
engine's own planning) and reads every shard's rows two ways, in this process: each shard
reading the row groups it overlaps (the engine before: the whole group per shard), and the
engine's reading stage (``parquet_reads`` + ``read_unit``: each row group read once, cut
into shards as it streams); both ways end with the shard's rows as Python dicts, as the
scoring actor has them. Reports seconds and the bytes read (``rchar``) as a multiple of
the file. Results go to benchmarks/results/ray_parquet_reads.json (appended per run).

    python benchmarks/bench_ray_parquet_reads.py --rows 400000 --batch-size 2000
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "ray_parquet_reads.json"


def rchar() -> int:
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def main() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rewardkit.scoring.shards import _read_parquet_rows, parquet_reads, plan_shards, read_unit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--batch-size", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "one-group.parquet"
        pq.write_table(pa.table({
            "prompt": [f"q{i // 4}" for i in range(args.rows)],
            "completion": [f"<think>a</think><answer>{i % 7}</answer>" for i in range(args.rows)],
        }), src)
        size = src.stat().st_size
        shards = plan_shards(src, "parquet", args.batch_size, 1 << 20)
        result = {"rows": args.rows, "row_groups": pq.ParquetFile(src).metadata.num_row_groups,
                  "shards": len(shards), "file_bytes": size, "machine": platform.node()}
        for way in ("per_shard", "once"):
            before, start = rchar(), time.perf_counter()
            rows = 0
            if way == "per_shard":
                for shard in shards:
                    rows += len(_read_parquet_rows(src, shard.start, shard.end))
            else:
                for unit in parquet_reads(src, shards):
                    for _, payload in read_unit(src, unit):
                        rows += len(pa.ipc.open_stream(payload).read_all().to_pylist())
            assert rows == args.rows
            result[way] = {"seconds": round(time.perf_counter() - start, 2),
                           "file_reads": round((rchar() - before) / size, 1)}
    print(json.dumps(result))
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.write_text(json.dumps([*runs, result], indent=1) + "\n")


if __name__ == "__main__":
    main()
