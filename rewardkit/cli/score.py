"""``rewardkit score CONFIG SAMPLES``: the command over the two engines of
:mod:`rewardkit.scoring` (the local one, :mod:`~rewardkit.scoring.jsonl`, and Ray Data,
:mod:`~rewardkit.scoring.ray`): where the output goes, the progress bar or log lines, the
summary table or JSON and the exit code (``--strict``). Its options are declared with the
other built-in commands (:mod:`rewardkit.cli.commands`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rewardkit.cli import EXIT_FAIL, EXIT_OK, UsageError, err, out


def cmd_score(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from rewardkit.config import load_config
    from rewardkit.reward_set import RewardSet

    if args.out is None and not args.json:
        raise UsageError("give --out FILE for the scored samples ('-' for standard output), "
                         "or --json for the summary alone")
    rs = RewardSet(load_config(args.config))
    samples_path = Path(args.samples)
    if args.samples != "-" and not samples_path.exists():
        raise UsageError(f"{samples_path}: no such file")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    if args.engine == "ray":
        if args.out in (None, "-"):
            raise UsageError("--engine ray writes a file (resumable): give --out FILE")
        return _score_on_ray(args, rs.config, samples_path)
    if args.resume:
        raise UsageError("--resume needs --engine ray")
    to_stdout = args.out == "-"
    with tempfile.TemporaryDirectory(prefix="rewardkit-score-") as tmp:
        out_path = Path(tmp) / "scored.jsonl" if to_stdout or args.out is None \
            else Path(args.out)
        summary = _score_locally(args, rs, samples_path, out_path)
        if to_stdout:
            with out_path.open("rb") as fh:
                shutil.copyfileobj(fh, sys.stdout.buffer)
            sys.stdout.flush()
    summary["out"] = "-" if to_stdout else args.out
    shown = "<stdin>" if args.samples == "-" else args.samples
    for line_no, reason in summary["bad_lines"]:
        err.print(f"{shown}:{line_no}: skipped: {reason}", markup=False)
    if args.json:  # with the rows on standard output, the summary goes to standard error
        print(json.dumps(_jsonable(summary), indent=2),
              file=sys.stderr if to_stdout else sys.stdout)
    else:
        _print_summary(summary, err if to_stdout else out)
    return _strict_exit(args, summary)


def _strict_exit(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    """``--strict``: exit 1 when lines were skipped (saying so last), else 0."""
    skipped = len(summary["bad_lines"])
    if args.strict and skipped:
        err.print(f"error: --strict: {skipped} malformed line(s) skipped", markup=False)
        return EXIT_FAIL
    return EXIT_OK


def _score_locally(args: argparse.Namespace, rs: Any, samples_path: Path,
                   out_path: Path) -> dict[str, Any]:
    from rewardkit.execution.ray_cluster import RayUnavailableError
    from rewardkit.scoring.jsonl import score_jsonl

    started = time.perf_counter()
    with Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, disable=args.json or not err.is_terminal,
                  transient=True) as progress:
        task = progress.add_task("score", total=None)
        try:
            summary: dict[str, Any] = score_jsonl(
                rs, samples_path, out_path, step=args.step, batch_size=args.batch_size,
                on_progress=lambda done, total: progress.update(task, completed=done,
                                                                total=total))
        except RayUnavailableError as exc:  # executor: ray without Ray, or no cluster
            raise UsageError(str(exc)) from exc
    summary["seconds"] = round(time.perf_counter() - started, 3)
    return summary


def _score_on_ray(args: argparse.Namespace, config: Any, samples_path: Path) -> int:
    """``score --engine ray``: progress as a bar on a terminal, else plain lines."""
    from rewardkit.execution.ray_cluster import RayUnavailableError
    from rewardkit.scoring.ray import ResumeError, score_with_ray

    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    started = time.perf_counter()
    last_line = [0.0]

    def plain(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last_line[0] >= 2.0 or done == total:
            last_line[0] = now
            err.print(f"scored {done}/{total} rows ({now - started:.0f}s)", markup=False)

    try:
        with Progress(TextColumn("scoring on Ray"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err,
                      disable=args.json or not err.is_terminal, transient=True) as progress:
            task = progress.add_task("score", total=None)

            def show(done: int, total: int) -> None:
                if err.is_terminal:
                    progress.update(task, completed=done, total=total)
                elif not args.json:
                    plain(done, total)

            summary = score_with_ray(config, samples_path, Path(args.out), step=args.step,
                                     batch_size=args.batch_size, resume=args.resume,
                                     address=args.ray_address,
                                     concurrency=args.concurrency, on_progress=show)
    except (RayUnavailableError, ResumeError) as exc:
        raise UsageError(str(exc)) from exc
    summary["seconds"] = round(time.perf_counter() - started, 3)
    for line_no, reason in summary["bad_lines"]:
        err.print(f"{samples_path}:{line_no}: skipped: {reason}", markup=False)
    if args.json:
        print(json.dumps(_jsonable(summary), indent=2, allow_nan=False))
    else:
        _print_summary(summary)
    return _strict_exit(args, summary)


def _print_summary(summary: dict[str, Any], console: Console = out) -> None:
    target = "(not written)" if summary["out"] is None else summary["out"]
    table = Table(title=f"scored {summary['scored']} samples -> {target} "
                        f"(step {summary['step']}, {summary['seconds']}s)")
    for col in ("component", "weight", "mean", "std", "min", "max", "ok", "skipped",
                "error", "timeout", "mean ms", "p50 ms", "p95 ms"):
        table.add_column(col, justify="right" if col != "component" else "left")
    for name, m in summary["components"].items():
        c = m["count"]
        table.add_row(name, f"{m['weight']:g}", _num(m["mean"]), _num(m["std"]),
                      _num(m["min"]), _num(m["max"]), str(c["ok"]), str(c["skipped"]),
                      str(c["error"]), str(c["timeout"]), _num(m["latency_ms_mean"]),
                      *_percentiles(m))
    t = summary["total"]
    table.add_row("[bold]total[/bold]", "", _num(t["mean"]), _num(t["std"]), _num(t["min"]),
                  _num(t["max"]), "", "", f"null {t['null']}", "", "", "", "")
    console.print(table)
    _print_turns(summary, console)
    for name, m in summary["components"].items():
        if "fallback" in m:
            f = m["fallback"]
            console.print(f"{name}: fallback asked on {f['asked']} sample(s) "
                          f"({f['asked_rate']:.1%}), flipped {f['flips']}, failed "
                          f"{f['errors']}", markup=False)
    if any(not m["latency_per_sample"] for m in summary["components"].values()):
        console.print("[dim]p50/p95: '-' for inline rewards, which are timed per batch "
                      "(mean ms is per sample)[/dim]")
    skipped = len(summary["bad_lines"])
    colour = "yellow" if skipped else "green"
    console.print(f"[{colour}]{summary['scored']} scored, {skipped} malformed line(s) "
                  f"skipped[/{colour}]" + (" (listed above; --strict makes that exit 1)"
                                           if skipped else ""))


def _print_turns(summary: dict[str, Any], console: Console) -> None:
    """Per-turn rewards' mean per turn bucket, with the samples that reached it."""
    per_turn = {name: m["turns"] for name, m in summary["components"].items() if "turns" in m}
    if not per_turn:
        return
    buckets = list(next(iter(per_turn.values())))
    table = Table(title="per turn: mean (samples that reached the turn)")
    table.add_column("component")
    for key in buckets:
        table.add_column(f"turn {key.replace('plus', '+')}", justify="right")
    for name, turns in per_turn.items():
        table.add_row(name, *(f"{_num(turns[k]['mean'])} ({turns[k]['count']:.0f})"
                              for k in buckets))
    console.print(table)


def _percentiles(m: dict[str, Any]) -> tuple[str, str]:
    if not m["latency_per_sample"]:
        return "-", "-"
    return _num(m["latency_ms_p50"]), _num(m["latency_ms_p95"])


def _num(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    return obj


