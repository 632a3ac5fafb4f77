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

``--seeds 0-4`` (``make demo-seeds``) runs the same train and eval once per
``train.seed`` instead, one after the other, each in its own folder under
``--output-dir`` (default: a temporary one; ``runs/quickstart`` is left alone), and
writes ``docs/records/quickstart-seeds.txt`` and ``.json``: per seed the eval's
correctness, format and mean reward, the curve's last ten steps, the time and the load,
under a header naming the machine's CPU model: the range a run of the demo should land
in (``eval.expected`` of the config quotes it).
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
import tempfile
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


def parse_seeds(text: str) -> list[int]:
    """``0-4`` or ``0,3,7`` (or both: ``0-2,9``) as a list of seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        seeds += range(int(first), int(last or first) + 1)
    if not seeds:
        raise SystemExit(f"--seeds {text!r}: no seed")
    return seeds


def seed_config(seed: int, output_dir: Path, folder: Path,
                max_steps: int | None = None) -> Path:
    """The quickstart config with ``train.seed: seed`` and ``train.output_dir:
    output_dir`` (and ``max_steps``), written into ``folder``; everything else as is."""
    import yaml

    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    config["train"].update(seed=seed, output_dir=str(output_dir))
    if max_steps:
        config["train"]["max_steps"] = max_steps
    path = folder / f"quickstart-seed{seed}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def seeds_table(runs: list[dict[str, Any]]) -> str:
    """The per-seed figures as a table, with the lowest and highest of each column."""
    def pct(v: float) -> str:
        return f"{100 * v:5.1f}%"

    lines = ["seed  correct  format  mean reward  curve correct (last 10 steps)  "
             "train s  load"]
    for r in runs:
        lines.append(f"{r['seed']:>4}  {pct(r['correct']):>7}  {pct(r['format']):>6}  "
                     f"{r['mean_reward']:>11.3f}  {r['curve_correct'][1]:>29.3f}  "
                     f"{r['train_seconds']:>7}  {r['load']:.1f}")
    low = min(r["correct"] for r in runs)
    high = max(r["correct"] for r in runs)
    lines.append(f"correct (eval, {runs[0]['rows']} held-out prompts): lowest "
                 f"{100 * low:.1f}%, highest {100 * high:.1f}%; mean reward "
                 f"{min(r['mean_reward'] for r in runs):.3f}-"
                 f"{max(r['mean_reward'] for r in runs):.3f} of 2.0")
    return "\n".join(lines) + "\n"


def record_seeds(seeds: list[int], output_dir: Path, records: Path,
                 max_steps: int | None = None) -> list[dict[str, Any]]:
    """Train and evaluate the quickstart once per seed, one after the other; write
    ``quickstart-seeds.txt`` and ``.json`` into ``records``."""
    started = dt.datetime.now(dt.UTC)
    load_before = os.getloadavg()
    runs: list[dict[str, Any]] = []
    output_dir.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        out = output_dir / f"seed{seed}"
        config = seed_config(seed, out, output_dir, max_steps)
        print(f"--- seed {seed}", flush=True)
        train_out = _run([*_rewardkit(), "train", str(config)])
        eval_argv = [*_rewardkit(), "eval", str(config), "--json"]
        report = json.loads(subprocess.run(eval_argv, cwd=ROOT, capture_output=True,
                                           text=True, check=True).stdout)
        fig = figures(train_out, report, out / "reward_curves.csv")
        trained = {k: fig[k]["trained"] for k in ("correct", "format", "mean_reward")}
        runs.append({"seed": seed, **trained, "curve_correct": fig["curve_correct"],
                     "steps": fig["steps"], "train_seconds": fig["train_seconds"],
                     "seconds": fig["seconds"], "load": fig["load"], "rows": fig["rows"]})
        print(f"seed {seed}: correct {100 * trained['correct']:.1f}%, mean reward "
              f"{trained['mean_reward']:.3f}", flush=True)
    load_after = os.getloadavg()
    when = f"{started:%Y-%m-%d %H:%M} UTC on commit {_commit()}"
    header = (
        f"# make demo-seeds: rewardkit train + eval examples/quickstart.yaml once per "
        f"train.seed ({', '.join(map(str, seeds))}), one after the other, {when}\n"
        f"# machine: {os.cpu_count()} CPU cores ({_cpu_model()}), {platform.python_version()}"
        f", {_versions()}\n"
        f"# load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}"
        f"; after: {', '.join(f'{x:.2f}' for x in load_after)}\n"
        f"# {runs[0]['steps']} steps each; correct, format, mean reward: rewardkit eval of "
        f"the trained model; train s: trainer.train alone; load: the 1-minute load "
        f"average as training started\n")
    records.mkdir(parents=True, exist_ok=True)
    (records / "quickstart-seeds.txt").write_text(header + "\n" + seeds_table(runs),
                                                  encoding="utf-8")
    (records / "quickstart-seeds.json").write_text(json.dumps(
        {"recorded": when, "machine": f"{os.cpu_count()} CPU cores ({_cpu_model()})",
         "versions": _versions(), "load_before": [round(x, 2) for x in load_before],
         "load_after": [round(x, 2) for x in load_after], "runs": runs}, indent=2) + "\n",
        encoding="utf-8")
    print(seeds_table(runs), end="")
    print(f"recorded: {records / 'quickstart-seeds.txt'}, {records / 'quickstart-seeds.json'}")
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output-dir", help="train here instead of the config's output_dir")
    ap.add_argument("--records", default=str(RECORDS), help="folder of the records")
    ap.add_argument("--no-docs", action="store_true", help="leave docs/quickstart.md alone")
    ap.add_argument("--max-steps", type=int, help="override train.max_steps (a short check)")
    ap.add_argument("--seeds", help="e.g. 0-4: one run per train.seed, recorded in "
                    "quickstart-seeds.txt/.json (not the page's record)")
    args = ap.parse_args(argv)
    if args.seeds:
        if args.output_dir:
            record_seeds(parse_seeds(args.seeds), Path(args.output_dir), Path(args.records),
                         args.max_steps)
        else:
            with tempfile.TemporaryDirectory(prefix="quickstart-seeds-") as tmp:
                record_seeds(parse_seeds(args.seeds), Path(tmp), Path(args.records),
                             args.max_steps)
        return 0
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
