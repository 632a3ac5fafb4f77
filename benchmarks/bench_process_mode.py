"""Process mode for cheap rewards on long texts: 2 workers vs inline, side by side.

    python benchmarks/bench_process_mode.py [--quick] [--n N] [--rounds R] [--json PATH]

The completions are long GSM8K-style model solutions (``gsm8k_style.py``, ~1 KB each).
Each reward is scored over the same batch by a ``RewardSet`` twice per round, inline
(``mode: inline`` on the component) and in process mode with ``workers: 2``, in
interleaved rounds (inline, process, inline, process ...) so that drift in the
machine's load hits both alike. The figure is the median over rounds of
inline time / process time; values and statuses must be identical in both modes.

Rewards measured (all cheap, about 10 to 40 microseconds per row here, and all really
run in the workers):

- ``math_in_worker``: ``math_answer``'s own grading of plain-number answers, without the
  in-process quick hook that decides them in the trainer's process today (benchmarks/
  bench_rewards.py); the reward the target was set on (numeric ``math_answer``).
- ``reasoning_steps``: the built-in regex reward with ``mode: process``.
- ``repetition_penalty``: the built-in n-gram repetition penalty with ``mode: process``.
- ``cosine_exact``: ``cosine_scaled`` graded by ``exact_answer``; with no mode in the
  config it now runs inline, as its checker does (issue 42 item 6: the ``default`` column
  says where each reward runs when the config names no mode).

Targets: with 2 workers at least 1.7x the inline rate (MET/MISS per reward; the headline
is ``math_in_worker``), and never slower than inline (>= 1.0x, issue 42 item 6). CPU
seconds are printed beside wall time: inline, the scoring process's; process mode, the
parent's plus its workers' (``/proc/PID/schedstat``), so the CPU ratio is what process
mode costs over inline for the same verdicts. On a machine whose two cores are shared
with other work, two workers cannot reach 2x: the load average is printed with the
figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rewards import MATH_IN_WORKER
from gsm8k_style import solutions

from rewardkit import RewardSet, Sample, registry
from rewardkit.execution.pool import shared_pool

TARGET = 1.7
#: issue 42 item 6: 2 workers are never slower than one inline process
NEVER_SLOWER = 1.0
WORKERS = 2
#: name -> component config (``mode`` is set per run)
REWARDS: dict[str, dict[str, Any]] = {
    "math_in_worker": {"reward": MATH_IN_WORKER.name},
    "reasoning_steps": {"reward": "reasoning_steps"},
    "repetition_penalty": {"reward": "repetition_penalty"},
    "cosine_exact": {"reward": "cosine_scaled",
                     "params": {"max_len": 1000, "correctness": {"reward": "exact_answer"}}},
}


def workers_cpu() -> float:
    """CPU seconds the shared pool's workers have run so far (0 before they start)."""
    total = 0.0
    for worker in shared_pool(WORKERS)._workers:
        try:
            with open(f"/proc/{worker.proc.pid}/schedstat") as handle:
                total += int(handle.read().split()[0]) / 1e9
        except OSError:  # no /proc: no CPU figure
            return float("nan")
    return total


def make_samples(n: int) -> list[Sample]:
    return [Sample(prompt=f"question {i // 16}", completion=s.text, reference=s.gold)
            for i, s in enumerate(solutions(n, seed=7))]


def measure(name: str, samples: list[Sample], rounds: int) -> dict[str, Any]:
    component = REWARDS[name]
    inline = RewardSet.from_dict({"rewards": {name: {**component, "mode": "inline"}}})
    process = RewardSet.from_dict({"workers": WORKERS,
                                   "rewards": {name: {**component, "mode": "process"}}})
    process.score(samples[:64])  # start the workers and load the reward there
    first_in, first_pr = inline.score(samples), process.score(samples)
    # values, statuses, reasons and details, sample by sample
    same = ([s.to_dict() for s in first_in.scores(name)]
            == [s.to_dict() for s in first_pr.scores(name)])
    default = str(RewardSet.from_dict({"rewards": {name: component}}).describe()[0]["mode"])
    t_in, t_pr, ratios, cpu_in, cpu_pr = [], [], [], [], []
    for _ in range(rounds):
        c0 = time.process_time()
        t0 = time.perf_counter()
        inline.score(samples)
        t1 = time.perf_counter()
        c1 = time.process_time()
        w1 = workers_cpu()
        process.score(samples)
        t2 = time.perf_counter()
        c2 = time.process_time()
        w2 = workers_cpu()
        t_in.append(t1 - t0)
        t_pr.append(t2 - t1)
        cpu_in.append(c1 - c0)
        cpu_pr.append(c2 - c1 + w2 - w1)
        ratios.append((t1 - t0) / (t2 - t1))
    n = len(samples)
    ratio = statistics.median(ratios)
    return {"reward": name, "rows": n, "rounds": rounds, "identical": same,
            "default_mode": default,
            "inline_rows_per_s": n / statistics.median(t_in),
            "process_rows_per_s": n / statistics.median(t_pr),
            "inline_wall_s": statistics.median(t_in),
            "process_wall_s": statistics.median(t_pr),
            "inline_cpu_s": statistics.median(cpu_in),
            "process_cpu_s": statistics.median(cpu_pr),
            "cpu_ratio": statistics.median(cpu_pr) / statistics.median(cpu_in),
            "speedup": ratio, "speedup_min": min(ratios), "speedup_max": max(ratios),
            "met": same and ratio >= TARGET,
            "never_slower": same and ratio >= NEVER_SLOWER}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    ap.add_argument("--n", type=int, help="rows per batch (default 16384, quick 4096)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 9, quick 3)")
    ap.add_argument("--only", choices=sorted(REWARDS), help="measure one reward")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = ap.parse_args()
    n = args.n or (4096 if args.quick else 16384)
    rounds = args.rounds or (3 if args.quick else 9)
    registry.register(MATH_IN_WORKER, "benchmarks")
    samples = make_samples(n)
    chars = sum(s.size for s in samples) / n
    load_before = os.getloadavg()
    results = [measure(name, samples, rounds)
               for name in ([args.only] if args.only else REWARDS)]
    load_after = os.getloadavg()
    print(f"process mode, {WORKERS} workers vs inline: {n:,} GSM8K-style completions "
          f"({chars:,.0f} chars on average), {rounds} interleaved rounds, medians")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"on {os.cpu_count()} cores")
    print("(the rows/s are medians over rounds; the ratio is the median of per-round "
          "ratios)")
    for r in results:
        print(f"  {r['reward']:<18} inline {r['inline_rows_per_s']:9,.0f} rows/s   "
              f"{WORKERS} workers {r['process_rows_per_s']:9,.0f} rows/s   "
              f"{r['speedup']:.2f}x (rounds {r['speedup_min']:.2f}-{r['speedup_max']:.2f}x)"
              f"  identical values and statuses: {'yes' if r['identical'] else 'NO'}"
              f"  {'MET' if r['met'] else 'MISS'} (target >= {TARGET}x)"
              f"  never slower than inline: {'MET' if r['never_slower'] else 'MISS'}")
        print(f"  {'':<18} wall s inline {r['inline_wall_s']:.3f}, {WORKERS} workers "
              f"{r['process_wall_s']:.3f}; CPU s inline {r['inline_cpu_s']:.3f}, "
              f"{WORKERS} workers + parent {r['process_cpu_s']:.3f} "
              f"({r['cpu_ratio']:.2f}x inline's CPU); with no mode in the config it runs "
              f"{r['default_mode']}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "workers": WORKERS, "target": TARGET, "never_slower": NEVER_SLOWER,
            "rows": n, "mean_chars": chars,
            "load_before": load_before[0], "load_after": load_after[0],
            "rewards": results}, indent=2))


if __name__ == "__main__":
    main()
