"""The reward side of one GRPO step: 65,536 long GSM8K completions, correctness + format.

    python benchmarks/bench_grpo_step.py [--n 65536] [--json]

The 8-shot GSM8K recipe (SEEDS B): a format reward (``final_answer_line``: the output has
``\\n#### The final answer is N``) and a correctness reward (``math_answer``), both with
their defaults, composed by a ``RewardSet`` with weights 0.5 and 1.0, scored over one step's
completions (``gsm8k_style.py``: ~1 KB model-style solutions, 60% right, some that never
reach the closing line). Timed side by side in one run against a hand-written regex loop
doing the same two checks (format regex; number after ``####``, ``,`` and ``$`` removed,
equal to the gold within 1e-6), and the per-sample totals must be identical.
The loop does less than the rewards: its format test does not check that the line ends
the output (``final_answer_line`` does), and its number is taken with no check that the
output stands by it, where ``math_answer`` first refuses hedged, negated, retracted,
questioned, listed, copied and competing answers. The totals agree because these rows
hold none of those; the ratio is the price of those checks (docs/performance.md).
Target: at most 1.5 s on 2 cores, and within 3x of the regex loop. Timed over ``--rounds``
steps, each on new completions (as in training: the number-reading caches are warm only
where answers repeat), medians reported.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gsm8k_style import solutions

from rewardkit import RewardSet, Sample

CONFIG = {"rewards": {
    "format": {"reward": "final_answer_line", "weight": 0.5},
    "correctness": {"reward": "math_answer", "weight": 1.0},
}}

_FORMAT = re.compile(r"\n#### The final answer is \d+")
_AFTER_HASHES = re.compile(r"####\D*?(-?[\d,]*\.?\d+)")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def regex_loop(texts: list[str], golds: list[str]) -> list[float]:
    """The same two checks written by hand, as a TRL reward function would: the format
    line, and the number after the last ``####`` (the last number of a completion cut off
    before it) equal to the gold."""
    totals = []
    for text, gold in zip(texts, golds, strict=True):
        total = 0.5 if _FORMAT.search(text) else 0.0
        found = _AFTER_HASHES.findall(text) or _NUMBER.findall(text)
        if found and abs(float(found[-1].replace(",", "")) - float(gold)) <= 1e-6:
            total += 1.0
        totals.append(total)
    return totals


def one_round(rs: RewardSet, n: int, seed: int) -> dict[str, Any]:
    """One step's completions (fresh ones each round, as in training), scored both ways."""
    sols = solutions(n, seed=seed, closings=("eight_shot",) * 9 + ("none",))
    texts = [s.text for s in sols]
    golds = [s.gold for s in sols]
    samples = [Sample(completion=t, reference=g) for t, g in zip(texts, golds, strict=True)]

    cpu, start = time.process_time(), time.perf_counter()
    result = rs.score(samples, step=0)
    t_rewardset, c_rewardset = time.perf_counter() - start, time.process_time() - cpu
    ours = list(result.totals)

    cpu, start = time.process_time(), time.perf_counter()
    theirs = regex_loop(texts, golds)
    t_loop, c_loop = time.perf_counter() - start, time.process_time() - cpu

    differ = [i for i in range(n) if ours[i] != theirs[i]]
    return {"avg_chars": sum(map(len, texts)) / n,
            "rewardset_s": t_rewardset, "regex_loop_s": t_loop,
            "rewardset_cpu_s": c_rewardset, "regex_loop_cpu_s": c_loop,
            "ratio": t_rewardset / t_loop, "cpu_ratio": c_rewardset / c_loop,
            "identical_totals": not differ,
            "differing": [{"total": ours[i], "regex": theirs[i], "gold": golds[i],
                           "tail": texts[i][-120:]} for i in differ[:5]],
            "mean_total": sum(ours) / n}


def run(n: int, rounds: int) -> dict[str, Any]:
    """``rounds`` steps, each on new completions; the medians of the rounds."""
    rs = RewardSet.from_dict(CONFIG)
    warm = solutions(512, seed=2)
    rs.score([Sample(completion=s.text, reference=s.gold) for s in warm])  # imports, workers
    done = [one_round(rs, n, seed=3 + r) for r in range(rounds)]
    middle = {key: statistics.median(d[key] for d in done)
              for key in ("avg_chars", "rewardset_s", "regex_loop_s", "rewardset_cpu_s",
                          "regex_loop_cpu_s", "ratio", "cpu_ratio", "mean_total")}
    return {"n": n, "rounds": rounds, **middle,
            "identical_totals": all(d["identical_totals"] for d in done),
            "differing": [x for d in done for x in d["differing"]][:5],
            "per_round": [{k: d[k] for k in ("rewardset_s", "regex_loop_s", "ratio")}
                          for d in done]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=65_536, help="completions in the step")
    parser.add_argument("--rounds", type=int, default=5,
                        help="steps timed, each on new completions (medians reported)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    got = run(args.n, args.rounds)
    if args.json:
        print(json.dumps(got, indent=2))
        return 0
    print(f"one GRPO step: {got['n']:,} completions, avg {got['avg_chars']:.0f} chars, "
          f"format + correctness; medians of {got['rounds']} steps, new completions each "
          "(machine shared: compare the ratio)")
    print(f"    {'':<48}{'wall':>8}  {'CPU (this process)':>20}")
    print(f"    {'RewardSet (final_answer_line + math_answer)':<48}{got['rewardset_s']:>7.2f}s"
          f"  {got['rewardset_cpu_s']:>19.2f}s   target <= 1.5 s wall: "
          f"{'met' if got['rewardset_s'] <= 1.5 else 'MISSED'}")
    print(f"    {'hand-written regex loop':<48}{got['regex_loop_s']:>7.2f}s"
          f"  {got['regex_loop_cpu_s']:>19.2f}s")
    print(f"    ratio wall {got['ratio']:.2f}x, CPU {got['cpu_ratio']:.2f}x (target <= 3x: "
          f"{'met' if got['ratio'] <= 3 else 'MISSED'}); identical totals: "
          f"{got['identical_totals']}; mean total {got['mean_total']:.3f}")
    rounds = ", ".join(f"{r['rewardset_s']:.2f}s/{r['regex_loop_s']:.2f}s"
                       for r in got["per_round"])
    print(f"    per round (RewardSet/regex loop): {rounds}")
    for d in got["differing"]:
        print(f"      {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
