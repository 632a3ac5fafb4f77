"""Core speed, side by side in one run.

1. Composition overhead: five regex rewards (the SEEDS A set) over 65,536 completions
   (1024 prompts x 64, one DeepSeek-size GRPO step), RewardSet.score vs calling the same
   five functions directly in a loop and summing, in interleaved rounds (direct, then
   composed, then direct ...). Figure: the median over rounds of composed / direct.
   Target: at most +5%.
2. Process-mode scaling: a CPU-bound reward in the worker pool with 2 workers vs 1.
   Target: at least 1.7x throughput on 2 cores.

    python benchmarks/bench_core.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_rewards import CPU_BOUND, FIVE

from rewardkit import RewardSet, Sample, registry

WEIGHTS = {"correct": 1.0, "integer": 1.0, "soft": 1.0, "strict": 1.0, "xml": 1.0}


def make_samples(prompts: int, per_prompt: int, seed: int = 0) -> list[Sample]:
    rng = random.Random(seed)
    samples = []
    for p in range(prompts):
        gold = str(rng.randint(1, 500))
        for _ in range(per_prompt):
            answer = gold if rng.random() < 0.4 else str(rng.randint(1, 500))
            reasoning = " ".join(rng.choice(["add", "the", "apples", "then", "we", "get",
                                             "so", "total", "is", str(rng.randint(1, 99))])
                                 for _ in range(rng.randint(20, 60)))
            style = rng.random()
            if style < 0.5:
                text = f"<reasoning>\n{reasoning}\n</reasoning>\n<answer>\n{answer}\n</answer>\n"
            elif style < 0.8:
                text = f"<reasoning>{reasoning}</reasoning> <answer>{answer}</answer> extra"
            else:
                text = f"{reasoning} so the answer is {answer}"
            samples.append(Sample(prompt=f"question {p}", completion=text, reference=gold))
    return samples


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_composition(n_prompts: int, repeats: int) -> tuple[float, float, float]:
    samples = make_samples(n_prompts, 64)
    for cls in FIVE.values():
        registry.register(cls, "benchmarks")
    rs = RewardSet.from_dict({"rewards": {name: {"reward": cls.name, "weight": WEIGHTS[name]}
                                          for name, cls in FIVE.items()}})
    fns = [(WEIGHTS[name], cls.fn) for name, cls in FIVE.items()]

    def direct() -> list[float]:
        columns = [[w * fn(s) for s in samples] for w, fn in fns]
        return [sum(vals) for vals in zip(*columns, strict=True)]

    def composed() -> list[float | None]:
        return rs.score(samples).totals

    assert direct() == composed(), "composed totals differ from the direct loop"
    # interleave the two so drift in machine load hits both alike
    d_times, c_times, ratios = [], [], []
    for _ in range(repeats):
        d = best_of(1, direct)
        c = best_of(1, composed)
        d_times.append(d)
        c_times.append(c)
        ratios.append(c / d)
    return statistics.median(d_times), statistics.median(c_times), statistics.median(ratios)


def bench_process_scaling(n: int) -> tuple[float, float]:
    registry.register(CPU_BOUND, "benchmarks")
    samples = [Sample(prompt=str(i), completion=str(i)) for i in range(n)]
    rates = []
    for workers in (1, 2):
        rs = RewardSet.from_dict({"workers": workers,
                                  "rewards": {"cpu": {"reward": CPU_BOUND.name}}})
        rs.score(samples[: 4 * workers])  # start the workers
        t0 = time.perf_counter()
        res = rs.score(samples)
        elapsed = time.perf_counter() - t0
        assert all(v is not None for v in res.values("cpu"))
        rates.append(n / elapsed)
    return rates[0], rates[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = ap.parse_args()
    prompts = 128 if args.quick else 1024
    repeats = 5 if args.quick else 15
    direct, composed, ratio = bench_composition(prompts, repeats)
    overhead = ratio - 1
    n = prompts * 64
    up1, up2 = bench_process_scaling(200 if args.quick else 600)
    print(f"\ncomposition: 5 regex rewards x {n:,} completions ({repeats} interleaved rounds, "
          "medians)")
    print(f"  direct loop      {direct * 1000:8.1f} ms  ({n * 5 / direct / 1e6:.2f} M calls/s)")
    print(f"  RewardSet.score  {composed * 1000:8.1f} ms  overhead {overhead * 100:+.1f}%"
          f"  (median of per-round ratios; target <= +5%)")
    print("process mode: CPU-bound reward")
    print(f"  1 worker   {up1:8.1f} samples/s")
    print(f"  2 workers  {up2:8.1f} samples/s  speed-up {up2 / up1:.2f}x  (target >= 1.7x)")
    ok = overhead <= 0.05 and up2 / up1 >= 1.7
    print("PASS" if ok else "MISS")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "composition": {"completions": n, "rounds": repeats, "direct_s": direct,
                            "composed_s": composed, "overhead_pct": overhead * 100},
            "process": {"one_worker_per_s": up1, "two_workers_per_s": up2,
                        "speedup": up2 / up1},
        }, indent=2))


if __name__ == "__main__":
    main()
