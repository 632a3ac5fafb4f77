"""``rewardkit diff A.yaml B.yaml ROWS.jsonl`` (or ``rewardkit diff A.jsonl B.jsonl``, two
files written by ``rewardkit score``): the rows whose verdicts differ, each component's
mean and variance under A and B, and the effect on GRPO (per group, the advantages under
A and B; the rows whose advantage changes sign). Exit 0 when identical, 1 when they
differ, like ``diff``. The engine: :mod:`rewardkit.measure.diff`."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from typing import IO, Any

from rich.table import Table

from rewardkit.cli import EXIT_FAIL, EXIT_OK, UsageError, err, out
from rewardkit.hookspecs import Subcommands


def add_diff(subparsers: Subcommands) -> None:
    p = subparsers.add_parser(
        "diff", help="two reward configs (or two scored files) on the same rows: flipped "
        "verdicts and GRPO advantages; exit 1 when they differ")
    p.add_argument("a", help="config A, or a file written by rewardkit score")
    p.add_argument("b", help="config B, or a second scored file of the same rows")
    p.add_argument("rows", nargs="?", help="JSONL samples, scored under A and B (with two "
                   "configs)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--out", help="JSONL: every row whose verdicts differ, under A and B")
    p.add_argument("--step", type=int, default=0, help="score at this training step")
    p.add_argument("--batch-size", type=int, default=1024)
    p.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    from rewardkit.config import load_config
    from rewardkit.measure.calibrate import refuse_total_component
    from rewardkit.measure.diff import diff_configs, diff_scored
    from rewardkit.reward_set import RewardSet

    for path in (args.a, args.b, args.rows):
        if path is not None and path != "-" and not Path(path).is_file():
            raise UsageError(f"{path}: no such file")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    scored = args.rows is None
    if scored and any(Path(p).suffix in (".yaml", ".yml", ".toml") for p in (args.a, args.b)):
        raise UsageError("two configs need the rows to score: rewardkit diff A.yaml B.yaml "
                         "ROWS.jsonl (or give two files written by rewardkit score)")
    with contextlib.ExitStack() as stack:
        sink: IO[bytes] | None = None
        if args.out:
            if Path(args.out).is_dir():
                raise UsageError(f"--out {args.out} is a folder; give a file name")
            sink = stack.enter_context(Path(args.out).open("wb"))
        if scored:
            try:
                comparison = diff_scored(Path(args.a), Path(args.b), sink)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            bad: list[tuple[int, str]] = []
        else:
            a, b = RewardSet(load_config(args.a)), RewardSet(load_config(args.b))
            for path, rs in ((args.a, a), (args.b, b)):
                refuse_total_component(rs.names, path)
            comparison, summary = diff_configs(a, b, Path(args.rows), step=args.step,
                                               batch_size=args.batch_size, out=sink)
            bad = summary["bad_lines"]
    for line_no, reason in bad:
        err.print(f"{args.rows}:{line_no}: skipped: {reason}", markup=False)
    report = comparison.report()
    if args.json:
        print(json.dumps(report, indent=2, allow_nan=False))
    else:
        _print_report(report, args)
    return EXIT_OK if comparison.identical else EXIT_FAIL


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _print_report(report: dict[str, Any], args: argparse.Namespace) -> None:
    table = Table(title=f"A = {args.a}, B = {args.b}: {report['rows']} rows, "
                        f"{report['rows_differing']} with a different verdict")
    for col in ("component", "rows differing", "mean A", "mean B", "Δ mean", "var A",
                "var B", "Δ var"):
        table.add_column(col, justify="left" if col == "component" else "right")
    for name, c in report["components"].items():
        table.add_row(name, str(c["rows_differing"]), _num(c["a"]["mean"]),
                      _num(c["b"]["mean"]), _num(c["mean_delta"]), _num(c["a"]["variance"]),
                      _num(c["b"]["variance"]), _num(c["variance_delta"]))
    t = report["total"]
    table.add_row("total", str(t["rows_differing"]), _num(t["a"]["mean"]), _num(t["b"]["mean"]),
                  _num(t["mean_delta"]), _num(t["a"]["variance"]), _num(t["b"]["variance"]),
                  _num(t["variance_delta"]))
    out.print(table)
    if report["differing"]:
        rows = Table(title="rows whose verdicts differ" + (
            f" (first {len(report['differing'])}; all in --out)"
            if report["rows_differing"] > len(report["differing"]) else ""))
        for col in ("line", "component", "A", "B"):
            rows.add_column(col)
        for record in report["differing"]:
            for name in record["differ"]:
                side_a = record["a"]["components"].get(name) if name != "total" else None
                side_b = record["b"]["components"].get(name) if name != "total" else None
                rows.add_row(str(record["line"]), name, _verdict(side_a, record["a"], name),
                             _verdict(side_b, record["b"], name))
        out.print(rows)
    g = report["grpo"]
    out.print(f"GRPO: {g['groups']} groups, {g['groups_with_changed_advantages']} with "
              f"changed advantages, {g['rows_advantage_sign_flipped']} row(s) whose "
              "advantage changes sign" + (":" if g["flipped"] else ""), markup=False)
    for flip in g["flipped"]:
        out.print(f"  line {flip['line']}: advantage {_num(flip['advantage_a'])} under A, "
                  f"{_num(flip['advantage_b'])} under B", markup=False)
    out.print("identical" if report["identical"] else "the rewards differ (exit 1)",
              markup=False)


def _verdict(score: dict[str, Any] | None, side: dict[str, Any], name: str) -> str:
    if name == "total":
        return _num(side["reward"])
    if score is None:
        return "(no such component)"
    text = _num(score["value"]) if score["status"] == "ok" else score["status"]
    reason = score["reason"]
    return f"{text} {reason[:60]}" if reason else text
