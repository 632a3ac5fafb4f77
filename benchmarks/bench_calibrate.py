"""`rewardkit calibrate` against `rewardkit score` on the same rows: time and peak memory.

Repeats examples/data/gsm8k-labelled.jsonl (24 labelled rows, 6 prompts x 4) to N rows,
each copy its own prompts (groups stay whole and adjacent), then runs in child processes
``rewardkit score examples/gsm8k-rlvr.yaml ROWS --out OUT --json`` and ``rewardkit
calibrate examples/gsm8k-rlvr.yaml ROWS --label correct --json`` (alternating, best of
``--repeats``) and reads each child's peak RSS (``wait4``). Targets (issue 35): calibrate
costs at most 10% more time than score; its memory is flat in N.
Results are appended to benchmarks/results/calibrate.json.

    python benchmarks/bench_calibrate.py 20000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "gsm8k-rlvr.yaml"
LABELLED = ROOT / "examples" / "data" / "gsm8k-labelled.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "calibrate.json"


def write_rows(path: Path, n: int) -> None:
    base = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    with path.open("w") as fh:
        for i in range(n):
            row = dict(base[i % len(base)])
            row["prompt"] = f"[{i // len(base)}] {row['prompt']}"
            fh.write(json.dumps(row) + "\n")


def run(cmd: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``cmd``, which must exit 0."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    assert proc.stderr is not None
    errors = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{errors}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rows", nargs="+", type=int)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "rewardkit.cli"]
    entries = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    with tempfile.TemporaryDirectory() as folder:
        src, out = Path(folder) / "rows.jsonl", Path(folder) / "scored.jsonl"
        for n in args.rows:
            write_rows(src, n)
            score, calibrate = [], []
            for _ in range(args.repeats):
                score.append(run([*cli, "score", str(CONFIG), str(src), "--out", str(out),
                                  "--json"]))
                calibrate.append(run([*cli, "calibrate", str(CONFIG), str(src),
                                      "--label", "correct", "--json"]))
            s, c = min(t for t, _ in score), min(t for t, _ in calibrate)
            entry = {"rows": n, "score_s": round(s, 2), "calibrate_s": round(c, 2),
                     "calibrate_over_score": round(c / s, 3),
                     "score_peak_rss_mb": round(max(m for _, m in score), 1),
                     "calibrate_peak_rss_mb": round(max(m for _, m in calibrate), 1),
                     "repeats": args.repeats, "load_1_5_15": list(os.getloadavg()),
                     "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared "
                                "with other work", "date": time.strftime("%Y-%m-%d")}
            print(json.dumps(entry), flush=True)
            entries.append(entry)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(entries, indent=2) + "\n")


if __name__ == "__main__":
    main()
