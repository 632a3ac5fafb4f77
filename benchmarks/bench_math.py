"""math_answer against math-verify: agreement, and speed on GSM8K-style numeric answers.

    python benchmarks/bench_math.py [--n 2000] [--json]

(a) Agreement: every (gold, prediction) pair of ``benchmarks/data/math_pairs.jsonl``
    (integers, decimals, fractions, LaTeX, sets, intervals, percent, units, currency,
    boxed, prose, ...) is graded by ``math_answer`` with its defaults and by math-verify
    (``verify(parse("$gold$"), parse(prediction))``). Each pair carries ``truth``, the
    hand-checked verdict, so every disagreement says who is right; the bar is to agree
    wherever math-verify is right (>= 99%) and to be right where it is not.
(b) Speed: ``--n`` GSM8K-style completions ending in ``#### N`` (right and wrong,
    some with thousand separators) graded both ways in the same run; the verdicts must
    be identical. Timed: math_answer's function in-process (the fast path, no sympy),
    math_answer through a RewardSet in its declared process mode (IPC included), and
    math-verify parse + verify. math-verify's import is warmed up before timing.

Needs ``pip install 'rewardkit[math]'``.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

from rewardkit import RewardSet, Sample, get_reward

PAIRS = Path(__file__).resolve().parent / "data" / "math_pairs.jsonl"


def _math_verify() -> tuple[Any, Any]:
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    return parse, verify


def math_verify_verdict(gold: str, pred: str) -> bool:
    parse, verify = _math_verify()
    gold_parsed = parse(f"${gold}$", parsing_timeout=None)
    return bool(verify(gold_parsed, parse(pred, parsing_timeout=None), timeout_seconds=None))


def agreement() -> dict[str, Any]:
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    reward = get_reward("math_answer")()
    disagreements = []
    ours_right = theirs_right = 0
    for row in rows:
        score = reward.score(Sample(completion=row["pred"], reference=row["gold"]))
        ours = score.value == 1.0
        theirs = math_verify_verdict(row["gold"], row["pred"])
        ours_right += ours == row["truth"]
        theirs_right += theirs == row["truth"]
        if ours != theirs:
            disagreements.append({**row, "math_answer": ours, "math_verify": theirs,
                                  "right": "math_answer" if ours == row["truth"]
                                  else "math_verify"})
    n = len(rows)
    mv_right = [d for d in disagreements if d["right"] == "math_verify"]
    return {"pairs": n, "agree": n - len(disagreements),
            "agreement": (n - len(disagreements)) / n,
            "agreement_where_math_verify_right": 1 - len(mv_right) / theirs_right,
            "math_answer_accuracy": ours_right / n, "math_verify_accuracy": theirs_right / n,
            "disagreements": disagreements}


def gsm8k_like(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """(gold, completion) pairs shaped like GSM8K solutions: a few lines of arithmetic and
    a ``####`` line, 60% right, some with thousand separators or a unit word."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(2, 400), rng.randint(2, 60)
        gold = a * b
        answer = gold if rng.random() < 0.6 else gold + rng.choice([-10, -1, 1, 2])
        shown = f"{answer:,}" if answer >= 1000 and rng.random() < 0.5 else str(answer)
        if rng.random() < 0.2:
            shown += " dollars"
        text = (f"Each box holds {b} items and there are {a} boxes.\n"
                f"So there are {a} * {b} = {answer} items.\n#### {shown}")
        out.append((str(gold), text))
    return out


def speed(n: int) -> dict[str, Any]:
    pairs = gsm8k_like(n)
    math_verify_verdict("1", "1")  # import and warm up math-verify outside the timing
    reward = get_reward("math_answer")()
    samples = [Sample(completion=text, reference=gold) for gold, text in pairs]

    start = time.perf_counter()
    ours = [reward.score(s).value == 1.0 for s in samples]
    t_ours = time.perf_counter() - start

    rs = RewardSet.from_dict({"rewards": {"math": {"reward": "math_answer"}}})
    rs.score(samples[:64])  # start the worker processes
    start = time.perf_counter()
    pooled = [v == 1.0 for v in rs.score(samples).values("math")]
    t_pooled = time.perf_counter() - start

    start = time.perf_counter()
    theirs = [math_verify_verdict(gold, text) for gold, text in pairs]
    t_theirs = time.perf_counter() - start

    mismatches = [i for i in range(n) if not ours[i] == pooled[i] == theirs[i]]
    return {"n": n, "identical_verdicts": not mismatches, "mismatches": mismatches[:10],
            "correct": sum(theirs),
            "math_answer_us": t_ours / n * 1e6, "math_answer_process_us": t_pooled / n * 1e6,
            "math_verify_us": t_theirs / n * 1e6,
            "speedup": t_theirs / t_ours, "speedup_process": t_theirs / t_pooled}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="GSM8K-style answers to time")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    agree = agreement()
    fast = speed(args.n)
    if args.json:
        print(json.dumps({"agreement": agree, "speed": fast}, indent=2))
    else:
        print(f"(a) agreement with math-verify on {agree['pairs']} pairs")
        print(f"    agree                 {agree['agree']:>5} / {agree['pairs']}"
              f"  ({agree['agreement']:.1%})")
        print(f"    agree where math-verify is right     "
              f"{agree['agreement_where_math_verify_right']:.1%}")
        print(f"    right vs hand labels  math_answer {agree['math_answer_accuracy']:.1%}"
              f"   math-verify {agree['math_verify_accuracy']:.1%}")
        for d in agree["disagreements"]:
            print(f"    - [{d['style']}] gold {d['gold']!r} pred {d['pred']!r}: "
                  f"math_answer={d['math_answer']} math-verify={d['math_verify']} "
                  f"truth={d['truth']} -> {d['right']} is right")
        print(f"\n(b) speed on {fast['n']} GSM8K-style answers "
              f"({fast['correct']} correct), verdicts identical: {fast['identical_verdicts']}")
        print(f"    {'grader':<36}{'us/answer':>12}{'vs math-verify':>16}")
        print(f"    {'math-verify parse + verify':<36}{fast['math_verify_us']:>12.1f}{'1.0x':>16}")
        print(f"    {'math_answer (in-process)':<36}{fast['math_answer_us']:>12.1f}"
              f"{fast['speedup']:>15.1f}x")
        print(f"    {'math_answer (RewardSet, process)':<36}{fast['math_answer_process_us']:>12.1f}"
              f"{fast['speedup_process']:>15.1f}x")
    # the bar: agree with math-verify wherever it is right, be right where it is not, and
    # be 20x faster with the same verdicts on numeric answers
    ok = (agree["agreement_where_math_verify_right"] >= 0.99
          and agree["math_answer_accuracy"] >= agree["math_verify_accuracy"]
          and fast["identical_verdicts"] and fast["speedup"] >= 20)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
