"""The node-wide execution budget under contention, measured with real processes.

    python benchmarks/bench_budget.py [--processes 8] [--slots 4] [--uses 10] [--json]

Slots: ``--processes`` processes each run ``--uses`` executions of ``--hold-ms`` under
one ``ExecutionBudget`` of ``--slots`` slots; reports the most executions seen at once
(from every process's start/end stamps), the queueing time per execution (mean, p50,
p95, max) and how far the wall time is from the ideal (uses x hold / slots).

Rate: the same processes take ``--tokens`` request tokens each from a budget of
``--rate`` per second (burst 1); reports the rate observed over the run and the most
tokens taken in any one-second window.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rewardkit_sandbox.budget import ExecutionBudget


def worker(
    folder: str, slots: int, rate: float, uses: int, hold_s: float, log: str, go: float
) -> None:
    """One contending process: ``uses`` executions (rate 0) or token takes (rate > 0),
    from the monotonic instant ``go`` on (every process starts together)."""
    budget = ExecutionBudget("bench", slots=slots, rate_per_s=rate or None, directory=folder)
    lines = []
    time.sleep(max(0.0, go - time.monotonic()))
    for _ in range(uses):
        if rate:
            waited = budget.take_token()
            lines.append({"at": time.monotonic(), "queued": waited})
            continue
        with budget.acquire() as ticket:
            start = time.monotonic()
            time.sleep(hold_s)
            lines.append({"start": start, "end": time.monotonic(), "queued": ticket.queued_s})
    with open(log, "a") as out:
        out.write("".join(json.dumps(line) + "\n" for line in lines))


def contend(processes: int, slots: int, rate: float, uses: int, hold_s: float) -> list[Any]:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "log.jsonl"
        go = time.monotonic() + 1.0 + 0.25 * processes  # after every interpreter is up
        args = [folder, str(slots), str(rate), str(uses), str(hold_s), str(log), str(go)]
        started = [
            subprocess.Popen([sys.executable, __file__, "--worker", *args])
            for _ in range(processes)
        ]
        if any(p.wait() != 0 for p in started):
            raise SystemExit("a worker failed")
        return [json.loads(line) for line in log.read_text().splitlines()]


def most_at_once(spans: list[dict[str, float]]) -> int:
    edges = sorted([(s["start"], 1) for s in spans] + [(s["end"], -1) for s in spans])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--uses", type=int, default=10)
    parser.add_argument("--hold-ms", type=float, default=50.0)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--tokens", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        folder, slots, rate, uses, hold_s, log, go = args.worker
        worker(folder, int(slots), float(rate), int(uses), float(hold_s), log, float(go))
        return
    hold_s = args.hold_ms / 1000
    spans = contend(args.processes, args.slots, 0.0, args.uses, hold_s)
    queued = sorted(s["queued"] for s in spans)
    wall = max(s["end"] for s in spans) - min(s["start"] for s in spans)
    ideal = len(spans) * hold_s / args.slots
    stamps = sorted(s["at"] for s in contend(args.processes, 1, args.rate, args.tokens, 0.0))
    window = max(sum(1 for t in stamps[i:] if t - start < 1.0) for i, start in enumerate(stamps))
    result = {
        "processes": args.processes,
        "slots": args.slots,
        "executions": len(spans),
        "hold_ms": args.hold_ms,
        "most_at_once": most_at_once(spans),
        "queued_ms": {
            "mean": round(statistics.fmean(queued) * 1000, 1),
            "p50": round(queued[len(queued) // 2] * 1000, 1),
            "p95": round(queued[int(len(queued) * 0.95)] * 1000, 1),
            "max": round(queued[-1] * 1000, 1),
        },
        "wall_s": round(wall, 3),
        "ideal_wall_s": round(ideal, 3),
        "rate_limit_per_s": args.rate,
        "tokens": len(stamps),
        "rate_observed_per_s": round((len(stamps) - 1) / (stamps[-1] - stamps[0]), 2),
        "most_tokens_in_1s": window,
    }
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>20}: {value}")


if __name__ == "__main__":
    main()
