"""Peak memory of `rewardkit score` against the length of the file.

Generates N short rows (4 completions per prompt, adjacent), scores them with two inline
rewards through the CLI in a child process and reads the child's peak RSS (``wait4``).
Target: flat memory whatever the file length. Results go to
benchmarks/results/score_memory.json (one entry per row count, appended per run).

    python benchmarks/bench_score_memory.py 1000000 10000000
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

CONFIG = "rewards:\n  fmt: {reward: soft_format}\n  words: {reward: word_count_range}\n"
RESULTS = Path(__file__).resolve().parent / "results" / "score_memory.json"


def write_rows(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"prompt": f"q{i // 4}",
                                 "completion": f"<think>a</think><answer>{i % 7}</answer>"})
                     + "\n")


def peak_rss_mb(cmd: list[str]) -> tuple[float, float, int]:
    """(peak RSS in MB, seconds, exit code) of ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    assert proc.stderr is not None
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, seconds, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("rows", nargs="+", type=int)
    args = parser.parse_args()
    entries = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    with tempfile.TemporaryDirectory() as folder:
        cfg = Path(folder) / "cfg.yaml"
        cfg.write_text(CONFIG)
        for n in args.rows:
            src = Path(folder) / "in.jsonl"
            write_rows(src, n)
            out = Path(folder) / "out.jsonl"
            rss, seconds, code = peak_rss_mb(
                [sys.executable, "-m", "rewardkit.cli", "score", str(cfg), str(src),
                 "--out", str(out), "--json"])
            entry = {"rows": n, "peak_rss_mb": round(rss, 1), "seconds": round(seconds, 1),
                     "exit_code": code, "machine": f"{platform.machine()}, "
                     f"{os.cpu_count()} cores, shared with other work",
                     "date": time.strftime("%Y-%m-%d")}
            print(json.dumps(entry))
            entries.append(entry)
            src.unlink()
            out.unlink(missing_ok=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(entries, indent=2) + "\n")


if __name__ == "__main__":
    main()
