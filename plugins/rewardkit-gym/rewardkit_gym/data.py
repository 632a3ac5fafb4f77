"""``rewardkit gym-data``: rows of any reasoning-gym dataset, seeded and sized, as JSONL
(or parquet) that ``rewardkit score`` and the ``rewardkit train`` data loaders read.

Each row: ``prompt`` (the question), ``reference`` (the entry's answer), ``gym_dataset``
(the dataset name) and ``gym_entry`` (the entry's metadata as JSON text: one string
column, so rows of different datasets share one Arrow schema for TRL, EasyR1 and verl),
plus ``task: gym`` for routing with ``when:``. The same seed, size and config give the
same rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rewardkit import EXIT_OK, Subcommands, UsageError


def add_command(subparsers: Subcommands) -> None:
    """Add ``gym-data`` to the ``rewardkit`` command line."""
    p = subparsers.add_parser(
        "gym-data", help="write rows of a reasoning-gym dataset (JSONL or parquet)")
    p.add_argument("dataset", help="reasoning-gym dataset name (e.g. spell_backward)")
    p.add_argument("--size", type=int, default=100, help="number of rows (default 100)")
    p.add_argument("--seed", type=int, default=42, help="generator seed (default 42)")
    p.add_argument("--out", required=True, help="output file: .jsonl or .parquet")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="a dataset config field (YAML value), repeatable: "
                        "--config min_word_len=3 --config max_word_len=5")
    p.set_defaults(func=gym_data)


def gym_data(args: argparse.Namespace) -> int:
    """Handler of ``rewardkit gym-data``."""
    out = Path(args.out)
    if out.suffix not in (".jsonl", ".parquet"):
        raise UsageError(f"--out {out}: use a .jsonl or .parquet file")
    if args.size < 1:
        raise UsageError("--size must be at least 1")
    rows = generate(args.dataset, args.size, args.seed, _config(args.config))
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UsageError("parquet output needs pyarrow (pip install pyarrow)") from None
        pq.write_table(pa.Table.from_pylist(rows), out)
    else:
        with out.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} {args.dataset} rows to {out}")
    unpaid = unpaid_references(rows)
    if unpaid:
        print(f"warning: the {args.dataset} scorer does not pay its own answer on "
              f"{unpaid} of {len(rows)} rows once their metadata is JSON (it compares "
              "types JSON does not keep, or the row has no answer)", file=sys.stderr)
    return EXIT_OK


def generate(dataset: str, size: int, seed: int, config: dict[str, Any]
             ) -> list[dict[str, Any]]:
    """``size`` rows of ``dataset`` from ``seed``, in rewardkit's row shape."""
    import reasoning_gym
    from reasoning_gym.factory import DATASETS

    if dataset not in DATASETS:
        raise UsageError(f"unknown reasoning-gym dataset {dataset!r} (e.g. "
                         f"{', '.join(sorted(DATASETS)[:5])}, ...)")
    try:
        data = reasoning_gym.create_dataset(dataset, size=size, seed=seed, **config)
        entries = [data[i] for i in range(size)]
    except (TypeError, ValueError, AssertionError) as exc:
        raise UsageError(f"{dataset}: bad config {config}: {exc}") from None
    return [{"prompt": e["question"], "reference": e["answer"], "gym_dataset": dataset,
             "gym_entry": json.dumps(e["metadata"], default=str), "task": "gym"}
            for e in entries]


def unpaid_references(rows: list[dict[str, Any]]) -> int:
    """How many rows' own answers their dataset's scorer does not pay full marks, read
    back as ``gym_answer`` reads them (the metadata from JSON, with the tuples some
    scorers compare restored)."""
    from rewardkit_gym.reward import entry_metadata, scorer_for

    unpaid = 0
    for row in rows:
        scorer = scorer_for(row["gym_dataset"])
        entry = {"question": row["prompt"], "answer": row["reference"],
                 "metadata": entry_metadata(row["gym_dataset"], json.loads(row["gym_entry"]))}
        try:
            paid = row["reference"] is not None and scorer(row["reference"], entry) >= 1.0
        except Exception:  # a scorer that raises on its own answer does not pay it
            paid = False
        unpaid += not paid
    return unpaid


def _config(pairs: list[str]) -> dict[str, Any]:
    import yaml

    config: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--config {pair!r}: expected KEY=VALUE")
        config[key] = yaml.safe_load(value)
    return config
