"""``rewardkit calibrate CONFIG LABELLED.jsonl --label COLUMN``: precision, recall, false
positive rate, accuracy and F1 (each with a 95% Wilson interval), confusion counts, ROC
AUC and the F1-maximising threshold of every component and of the total, against a label
column (the engine: :mod:`rewardkit.measure.calibrate`). ``--json`` prints the report
object; ``--out`` writes the rows where a verdict and the label disagree."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from pathlib import Path
from typing import IO, Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rewardkit.cli import EXIT_OK, UsageError, err, out
from rewardkit.hookspecs import Subcommands


def add_calibrate(subparsers: Subcommands) -> None:
    p = subparsers.add_parser(
        "calibrate", help="measure each reward against labels: precision, recall, FPR, F1")
    p.add_argument("config")
    p.add_argument("labelled", help="JSONL samples with a label column ('-' reads standard "
                   "input)")
    p.add_argument("--label", required=True, help="the label column: true/false, 0/1, or a "
                   "gold score with --label-threshold")
    p.add_argument("--threshold", type=float, default=0.5,
                   help="a reward value at or above this is a positive verdict (default 0.5)")
    p.add_argument("--label-threshold", type=float, default=None,
                   help="the label column is a gold score, positive at or above this")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object "
                   "keyed by component name")
    p.add_argument("--out", help="JSONL: the rows where a verdict disagrees with the label, "
                   "with their scores, reasons and the components that disagree")
    p.add_argument("--step", type=int, default=0, help="score at this training step")
    p.add_argument("--batch-size", type=int, default=1024)
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from rewardkit.config import load_config
    from rewardkit.measure.calibrate import LabelError, calibrate_jsonl, refuse_total_component
    from rewardkit.reward_set import RewardSet

    for name in ("threshold", "label_threshold"):
        value = getattr(args, name)
        if value is not None and not math.isfinite(value):
            raise UsageError(f"--{name.replace('_', '-')} must be a finite number")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    rs = RewardSet(load_config(args.config))
    refuse_total_component(rs.names, args.config)
    src = Path(args.labelled)
    if args.labelled != "-" and not src.exists():
        raise UsageError(f"{src}: no such file")
    with contextlib.ExitStack() as stack:
        sink: IO[bytes] | None = None
        if args.out:
            if Path(args.out).is_dir():
                raise UsageError(f"--out {args.out} is a folder; give a file name")
            sink = stack.enter_context(Path(args.out).open("wb"))
        progress = stack.enter_context(Progress(
            TextColumn("calibrating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, disable=args.json or not err.is_terminal, transient=True))
        task = progress.add_task("calibrate", total=None)
        try:
            calibration, summary = calibrate_jsonl(
                rs, src, args.label, threshold=args.threshold,
                label_threshold=args.label_threshold, step=args.step,
                batch_size=args.batch_size, disagreements=sink,
                on_progress=lambda done, total: progress.update(task, completed=done,
                                                                total=total))
        except LabelError as exc:
            raise UsageError(f"{args.labelled}: {exc}") from None
    shown = "<stdin>" if args.labelled == "-" else args.labelled
    for line_no, reason in summary["bad_lines"]:
        err.print(f"{shown}:{line_no}: skipped: {reason}", markup=False)
    report = calibration.report()
    if args.json:
        print(json.dumps(report, indent=2, allow_nan=False))
        return EXIT_OK
    _print_table(report, f"{calibration.rows} labelled rows ({calibration.positives} "
                 f"positive), verdict = value >= {args.threshold:g}")
    sources = next(iter(report.values())).get("by_source", {})
    for source in sources:
        _print_table({name: entry["by_source"][source] for name, entry in report.items()},
                     f"data source {source}")
    if args.out:
        out.print(f"{calibration.disagreeing} row(s) where a verdict disagrees with the "
                  f"label -> {args.out}", markup=False)
    return EXIT_OK


def _ci(rate: dict[str, Any]) -> str:
    if rate["value"] is None:
        return "-"
    low, high = rate["ci95"]
    return f"{rate['value']:.2f} [{low:.2f},{high:.2f}]"


def _print_table(report: dict[str, Any], title: str) -> None:
    table = Table(title=title)
    columns = ("component", "graded", "tp", "fp", "tn", "fn", "precision", "recall", "FPR",
               "accuracy", "F1", "AUC", "F1-best thr", "failed", "skipped")
    for col in columns:
        table.add_column(col, justify="left" if col == "component" else "right")
    for name, m in report.items():
        best = m["best_f1_threshold"]
        table.add_row(name, str(m["graded"]), str(m["tp"]), str(m["fp"]), str(m["tn"]),
                      str(m["fn"]), _ci(m["precision"]), _ci(m["recall"]),
                      _ci(m["false_positive_rate"]), _ci(m["accuracy"]), _ci(m["f1"]),
                      "-" if m["roc_auc"] is None else f"{m['roc_auc']:.3f}",
                      "-" if best is None else f"{best['threshold']:g} ({best['f1']:.3f})",
                      str(m["failed"]), str(m["skipped"]))
    out.print(table)
    sys.stdout.flush()
