"""Record the quickstart (``make demo``) as docs cite it: one command, ``make demo-record``.

Runs what ``make demo`` runs (``rewardkit train`` then ``rewardkit eval`` on
``examples/quickstart.yaml``), each as its own process, and writes

* ``docs/records/quickstart-cpu.txt``: both outputs as printed, under a header naming
  the date, the commit, the machine (cores, CPU model), the library versions and the
  load average before and after;
* ``docs/records/quickstart-cpu.json``: the figures the docs quote (correctness and
  format, base and trained; the reward curve's first and last steps; the time, the
  threads and the load);
* the block between ``<!-- quickstart-record -->`` markers of ``docs/quickstart.md``,
  rewritten from those figures, so the page never quotes another run than the record.

``--output-dir`` trains elsewhere than the config's ``runs/quickstart`` (a check that
should leave the user's run alone), ``--records`` writes the records elsewhere,
``--max-steps`` shortens the run, ``--no-docs`` leaves the page alone.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "quickstart.yaml"
RECORDS = ROOT / "docs" / "records"
PAGE = ROOT / "docs" / "quickstart.md"
MARK = "<!-- quickstart-record -->"


def _rewardkit() -> list[str]:
    return [sys.executable, "-m", "rewardkit.cli"]


def _run(argv: list[str]) -> str:
    """Run ``argv``, echo and return its output (stdout and stderr, as printed)."""
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"}, check=False)
    text = proc.stdout + proc.stderr
    print(text, end="", flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:])} exited {proc.returncode}")
    return text


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{name} {version(name)}" for name in ("torch", "transformers", "trl"))


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "examples", "trainers",
                            "rewardkit"], cwd=ROOT, capture_output=True, text=True,
                           check=False).stdout.strip()
    return f"{head or 'unknown'}{' (with uncommitted changes)' if dirty else ''}"


def figures(train_out: str, report: dict[str, Any], curves: Path) -> dict[str, Any]:
    """What the docs quote, from the train output, the eval report and the curves."""
    done = re.search(r"done in (\d+)s \((\d+)s training on (\d+) cores?, (\d+) threads?, "
                     r"load ([\d.]+)\), (\d+) steps", train_out)
    if done is None:
        raise SystemExit("rewardkit train printed no 'done in ...' line")
    with curves.open() as fh:
        rows = list(csv.DictReader(fh))
    component = report["accuracy_component"]

    def first_last(column: str) -> tuple[float, float]:
        values = [float(r[column]) for r in rows]
        return (round(sum(values[:10]) / len(values[:10]), 3),
                round(sum(values[-10:]) / len(values[-10:]), 3))

    models = report["models"]
    return {
        "seconds": int(done[1]), "train_seconds": int(done[2]), "cores": int(done[3]),
        "threads": int(done[4]), "load": float(done[5]), "steps": int(done[6]),
        "rows": report["rows"], "accuracy_component": component,
        "correct": {label: round(m["accuracy"], 4) for label, m in models.items()},
        "format": {label: round(m["full"]["format"], 4) for label, m in models.items()},
        "mean_reward": {label: round(m["mean_reward"], 3) for label, m in models.items()},
        "curve_correct": first_last(component),
        "curve_format": first_last("format"),
    }


def page_block(fig: dict[str, Any], when: str) -> str:
    """The figures as docs/quickstart.md says them."""
    def pct(v: float) -> str:
        return f"{100 * v:.1f}%"

    c0, c1 = fig["curve_correct"]
    f0, f1 = fig["curve_format"]
    return (
        f"{MARK}\n"
        f"Recorded {when} ([docs/records/quickstart-cpu.txt](records/quickstart-cpu.txt)): "
        f"{fig['steps']} steps in {fig['train_seconds']} s of training "
        f"({fig['seconds']} s in all) on {fig['cores']} cores, {fig['threads']} "
        f"thread{'s' * (fig['threads'] != 1)}, load {fig['load']:.1f}. In training, the "
        f"share of completions with the right digit went from {c0:.3f} (first ten steps) "
        f"to {c1:.3f} (last ten), the strict layout from {f0:.3f} to {f1:.3f}. "
        f"`rewardkit eval` on {fig['rows']} held-out prompts:\n\n"
        "| | base | trained |\n| --- | --- | --- |\n"
        f"| correct (right digit in the answer block) | {pct(fig['correct']['base'])} | "
        f"{pct(fig['correct']['trained'])} |\n"
        f"| format (strict layout) | {pct(fig['format']['base'])} | "
        f"{pct(fig['format']['trained'])} |\n"
        f"| mean reward (of 2.0) | {fig['mean_reward']['base']:.3f} | "
        f"{fig['mean_reward']['trained']:.3f} |\n"
        f"{MARK}")


def rewrite_page(block: str, page: Path = PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    parts = text.split(MARK)
    if len(parts) != 3:
        raise SystemExit(f"{page}: expected one block between two {MARK} lines")
    page.write_text(parts[0] + block + parts[2], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output-dir", help="train here instead of the config's output_dir")
    ap.add_argument("--records", default=str(RECORDS), help="folder of the records")
    ap.add_argument("--no-docs", action="store_true", help="leave docs/quickstart.md alone")
    ap.add_argument("--max-steps", type=int, help="override train.max_steps (a short check)")
    args = ap.parse_args(argv)
    started = dt.datetime.now(dt.UTC)
    load_before = os.getloadavg()
    extra = ["--output-dir", args.output_dir] if args.output_dir else []
    if args.max_steps:
        extra += ["--max-steps", str(args.max_steps)]
    train_out = _run([*_rewardkit(), "train", str(CONFIG.relative_to(ROOT)), *extra])
    out_dir = Path(args.output_dir) if args.output_dir else ROOT / "runs" / "quickstart"
    eval_argv = [*_rewardkit(), "eval", str(CONFIG.relative_to(ROOT))]
    if args.output_dir:
        eval_argv += ["--model", str(out_dir / "final"),
                      "--base-model", str(out_dir / "base-model")]
    eval_out = _run(eval_argv)
    # the same evaluation again as JSON (seeded: the same figures as the table above)
    report = json.loads(subprocess.run([*eval_argv, "--json"], cwd=ROOT, capture_output=True,
                                       text=True, check=True).stdout)
    load_after = os.getloadavg()
    fig = figures(train_out, report, out_dir / "reward_curves.csv")
    fig["load_before"] = [round(x, 2) for x in load_before]
    fig["load_after"] = [round(x, 2) for x in load_after]
    when = f"{started:%Y-%m-%d %H:%M} UTC on commit {_commit()}"
    records = Path(args.records)
    records.mkdir(parents=True, exist_ok=True)
    header = (
        f"# make demo-record: rewardkit train + eval examples/quickstart.yaml, {when}\n"
        f"# machine: {os.cpu_count()} CPU cores ({_cpu_model()}), {platform.python_version()}"
        f", {_versions()}\n"
        f"# load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}"
        f"; after: {', '.join(f'{x:.2f}' for x in load_after)}\n")
    (records / "quickstart-cpu.txt").write_text(
        header + "\n$ rewardkit train examples/quickstart.yaml\n" + train_out
        + "\n$ rewardkit eval examples/quickstart.yaml\n" + eval_out, encoding="utf-8")
    (records / "quickstart-cpu.json").write_text(json.dumps(
        {"recorded": when, **fig}, indent=2) + "\n", encoding="utf-8")
    if not args.no_docs:
        rewrite_page(page_block(fig, when))
    print(f"recorded: {records / 'quickstart-cpu.txt'}, {records / 'quickstart-cpu.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
