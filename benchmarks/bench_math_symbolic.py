"""math_answer against math-verify on a GRPO-shaped batch of competition answers.

    python benchmarks/bench_math_symbolic.py [--prompts 64] [--group 16] [--repeats 5] [--json]

A GRPO step scores P prompts x G completions, and the G completions of a prompt share one
reference and give a few distinct final answers. The batch here: ``--prompts`` problems
whose references are competition answers of nine shapes (integer, fraction, radical,
expression, equation, interval, set, tuple, matrix; the same number of problems each),
``--group`` completions each. A group draws 2-4 distinct answers (the reference as
written, the same value written differently, wrong values, now and then a decimal
approximation) and its completions repeat them, as sampled completions do (some
references, such as ``2\\sin x`` or ``e^{2}``, lie outside math_answer's exact fast path
and go to math-verify); each completion is a few lines of reasoning ending in
``\\boxed{...}`` (or "The final answer is $\\boxed{...}$"). Every completion is
labelled: the reference or an equivalent form is right, anything else (the
approximations included) is wrong.

Timed in one run, on the same rows: math_answer with its defaults through a RewardSet
(its declared process mode: the default worker pool, IPC included), and math-verify's
``verify(parse("$gold$"), parse(completion))`` per row in this process (the reference
in math delimiters, as math-verify reads a LaTeX gold). Each repeat starts
math_answer on fresh workers with empty caches (started and warmed up on one unrelated
pair outside the timing), and the two graders alternate; medians are reported. Then, per
shape, both graders in this process on that shape's rows (math_answer's caches emptied
first). Verdicts are compared where math-verify is right. Target: math_answer at least
10x math-verify's wall time.

Needs ``pip install 'rewardkit[math]'``.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rewardkit import RewardSet, Sample, get_reward

#: per shape: (reference, equivalent forms, wrong answers, decimal approximations)
BANK: dict[str, list[tuple[str, list[str], list[str], list[str]]]] = {
    "integer": [
        ("204", ["204"], ["201", "208", "102"], []),
        ("2019", ["2019", "2{,}019"], ["2018", "2020"], []),
        ("-7", ["-7"], ["7", "-5"], []),
    ],
    "fraction": [
        ("\\frac{7}{12}", ["\\dfrac{7}{12}", "\\frac{14}{24}", "7/12"],
         ["\\frac{5}{12}", "\\frac{7}{13}"], ["0.583"]),
        ("\\frac{3}{4}", ["\\tfrac34", "\\frac{6}{8}", "0.75"], ["\\frac{4}{3}", "\\frac{1}{4}"],
         ["0.7"]),
        ("-\\frac{1}{8}", ["\\frac{-1}{8}", "-\\dfrac{1}{8}"], ["\\frac{1}{8}", "-\\frac{1}{4}"],
         []),
    ],
    "radical": [
        ("2\\sqrt{5}", ["\\sqrt{20}", "2 \\sqrt 5"], ["4\\sqrt{5}", "\\sqrt{10}"], ["4.47"]),
        ("\\frac{1+\\sqrt{5}}{2}", ["\\frac{\\sqrt{5}+1}{2}", "\\frac{1}{2}+\\frac{\\sqrt5}{2}"],
         ["\\frac{1-\\sqrt{5}}{2}", "1+\\sqrt{5}"], ["1.618"]),
        ("\\frac{\\sqrt{3}}{2}", ["\\frac{3}{2\\sqrt{3}}", "\\dfrac{\\sqrt3}{2}"],
         ["\\frac{\\sqrt{2}}{2}", "\\sqrt{3}"], []),
        ("3\\sqrt{2}-1", ["-1+\\sqrt{18}"], ["3\\sqrt{2}+1", "2\\sqrt{3}-1"], []),
    ],
    "expression": [
        ("2x^2+x-1", ["x+2x^2-1", "(2x-1)(x+1)", "2x^{2} + x - 1"],
         ["2x^2-x-1", "2x^2+x+1"], []),
        ("12\\pi", ["12 \\pi", "\\pi \\cdot 12"], ["6\\pi", "24\\pi"], ["37.7"]),
        ("\\frac{x+1}{2}", ["\\frac{1}{2}x+\\frac{1}{2}", "(x+1)/2"], ["x+\\frac{1}{2}",
         "\\frac{x-1}{2}"], []),
        ("8+\\pi", ["\\pi+8"], ["8\\pi", "8-\\pi"], []),
        # outside the exact language (functions, e, cube roots): math-verify grades them
        ("2\\sin x", ["2 \\sin(x)", "\\sin x + \\sin x"], ["\\sin 2x", "2\\cos x"], []),
        ("e^{2}", ["e^2"], ["2e", "e^{3}"], ["7.389"]),
        ("\\sqrt[3]{4}", ["2^{2/3}"], ["\\sqrt{4}", "\\sqrt[3]{2}"], ["1.587"]),
    ],
    "equation": [
        ("y = -5x - 3", ["y=-3-5x", "y = -(5x+3)"], ["y = 5x - 3", "y = -5x + 3"], []),
        ("x^2+y^2=25", ["y^2+x^2=25"], ["x^2+y^2=5", "x^2-y^2=25"], []),
        ("k = \\frac{3}{2}", ["k=\\dfrac32"], ["k = \\frac{2}{3}", "k=3"], []),
    ],
    "interval": [
        ("(-\\infty, 3]", ["\\left(-\\infty, 3\\right]", "(-\\infty,3]"],
         ["(-\\infty, 3)", "[3, \\infty)"], []),
        ("[2, 5)", ["[2,5)", "\\left[2, 5\\right)"], ["[2, 5]", "(2, 5)"], []),
        ("(0, \\frac{1}{2})", ["\\left(0,\\frac12\\right)"], ["(0, 2)", "[0, \\frac{1}{2}]"],
         []),
    ],
    "set": [
        ("\\{1, 2, 5\\}", ["\\{5, 2, 1\\}", "\\{1,2,5\\}"], ["\\{1, 2\\}", "\\{1, 2, 4\\}"],
         []),
        ("\\{-3, \\frac{1}{2}\\}", ["\\{\\frac12, -3\\}"], ["\\{3, \\frac{1}{2}\\}",
         "\\{-3\\}"], []),
    ],
    "tuple": [
        ("(3, -1)", ["\\left(3, -1\\right)", "(3,-1)"], ["(-1, 3)", "(3, 1)"], []),
        ("(\\frac{1}{2}, 4)", ["(\\dfrac{1}{2}, 4)", "\\left(\\frac12,4\\right)"],
         ["(2, 4)", "(4, \\frac{1}{2})"], []),
        ("(1, 2, 3)", ["(1,2,3)"], ["(1, 3, 2)", "(1, 2)"], []),
    ],
    "matrix": [
        ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
         ["\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix} 1 & 2\\\\ 3 & 2+2 "
          "\\end{pmatrix}"],
         ["\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}",
          "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}"], []),
        ("\\begin{pmatrix} 2 & -1 \\\\ 0 & \\frac{1}{2} \\end{pmatrix}",
         ["\\begin{pmatrix}2 & -1\\\\0 & \\dfrac12\\end{pmatrix}"],
         ["\\begin{pmatrix} 2 & 1 \\\\ 0 & \\frac{1}{2} \\end{pmatrix}"], []),
    ],
}
SHAPES = list(BANK)
#: pairs outside the bank that bring a fresh worker's math-verify up to speed
WARM_UP = [("\\cos(x)", "\\sin(x)"), ("\\log(y)", "\\log(y)"), ("e^{y}", "e^{3y}")]

_STEPS = [
    "First, we simplify the given condition and collect like terms.",
    "Substituting the value found above, we get $3a + 2b = 17$.",
    "By the AM-GM inequality, $\\frac{a+b}{2} \\ge \\sqrt{ab}$, with equality at $a = b$.",
    "We check the boundary cases separately: $n = 1$ and $n = 2$ both work.",
    "Multiplying both sides by $2$ gives $4k - 6 = 2m$, so $m = 2k - 3$.",
    "The discriminant is $b^2 - 4ac = 49 - 24 = 25$, which is a perfect square.",
    "Let me double-check this by plugging back into the original equation.",
    "So the sum telescopes and only the first and last terms remain.",
]


@dataclass(frozen=True)
class Row:
    shape: str
    gold: str
    completion: str
    correct: bool


def completion(rng: random.Random, answer: str) -> str:
    steps = rng.sample(_STEPS, rng.randint(2, 5))
    ending = rng.choice([f"Therefore the answer is $\\boxed{{{answer}}}$.",
                         f"The final answer is $\\boxed{{{answer}}}$",
                         f"\\[\n\\boxed{{{answer}}}\n\\]"])
    return "\n\n".join(steps) + "\n\n" + ending


def batch(prompts: int, group: int, seed: int) -> list[Row]:
    """``prompts`` x ``group`` completions, the shapes in turn, each group drawing a few
    distinct answers and repeating them."""
    rng = random.Random(seed)
    rows: list[Row] = []
    for p in range(prompts):
        shape = SHAPES[p % len(SHAPES)]
        gold, same, wrong, approx = rng.choice(BANK[shape])
        pool: list[tuple[str, bool]] = [(gold, True)] + [(s, True) for s in same] + \
            [(w, False) for w in wrong] + [(a, False) for a in approx]
        distinct = [pool[0], *rng.sample(pool[1:], min(len(pool) - 1, rng.randint(1, 3)))]
        weights = [rng.uniform(1, 4) for _ in distinct]
        for _ in range(group):
            answer, right = rng.choices(distinct, weights)[0]
            rows.append(Row(shape, gold, completion(rng, answer), right))
    return rows


def math_verify_grader() -> Callable[[str, str], bool]:
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)

    def grade(gold: str, pred: str) -> bool:
        try:
            return bool(verify(parse(f"${gold}$", parsing_timeout=None),
                               parse(pred, parsing_timeout=None), timeout_seconds=None))
        except Exception:
            return False

    return grade


def _empty_caches() -> None:
    """math_answer's in-process caches, emptied: each timing starts cold."""
    from rewardkit.builtin.math import fast_path as _math_fast
    from rewardkit.builtin.math import references as _math_references
    from rewardkit.builtin.math import sample as _math_sample

    for fn in (_math_fast.exact_value, _math_fast.exact_compare, _math_references.reference_kind,
               _math_sample.ok_score):
        fn.cache_clear()


def _fresh_reward_set() -> RewardSet:
    """A RewardSet with math_answer's defaults on fresh workers (empty caches), started
    and warmed up on pairs outside the batch that math-verify grades (its imports,
    regexes and sympy's simplify are ready in every worker, as in a training run past its
    first step)."""
    from rewardkit.execution.pool import shared_pool

    shared_pool().close()
    _empty_caches()
    rs = RewardSet.from_dict({"rewards": {"math": {"reward": "math_answer"}}})
    rs.score([Sample(completion=f"\\boxed{{{answer}}}", reference=gold)
              for gold, answer in WARM_UP for _ in range(16)])
    return rs


def timed(fn: Callable[[], list[bool]]) -> tuple[list[bool], float]:
    start = time.perf_counter()
    got = fn()
    return got, time.perf_counter() - start


def run(prompts: int, group: int, repeats: int, seed: int) -> dict[str, Any]:
    rows = batch(prompts, group, seed)
    samples = [Sample(completion=r.completion, reference=r.gold) for r in rows]
    mv = math_verify_grader()
    mv("1", "1")
    ours_s: list[float] = []
    mv_s: list[float] = []
    ours: list[bool] = []
    theirs: list[bool] = []
    for _ in range(repeats):
        rs = _fresh_reward_set()
        ours, secs = timed(lambda rs=rs: [v == 1.0 for v in rs.score(samples).values("math")])
        ours_s.append(secs)
        theirs, secs = timed(lambda: [mv(r.gold, r.completion) for r in rows])
        mv_s.append(secs)
    n = len(rows)
    mv_right = [i for i in range(n) if theirs[i] == rows[i].correct]
    differ = [i for i in mv_right if ours[i] != theirs[i]]
    reward = get_reward("math_answer")()
    shapes: dict[str, dict[str, Any]] = {}
    for shape in SHAPES:
        idx = [i for i in range(n) if rows[i].shape == shape]
        _empty_caches()
        _, ma_secs = timed(lambda idx=idx: [reward.score(samples[i]).value == 1.0 for i in idx])
        _, mv_secs = timed(lambda idx=idx: [mv(rows[i].gold, rows[i].completion) for i in idx])
        shapes[shape] = {
            "n": len(idx), "distinct": len({(rows[i].gold, rows[i].completion.rsplit(
                "boxed", 1)[-1]) for i in idx}),
            "math_answer_rows_per_s": len(idx) / ma_secs,
            "math_verify_rows_per_s": len(idx) / mv_secs, "ratio": mv_secs / ma_secs,
            "math_answer_right": sum(ours[i] == rows[i].correct for i in idx) / len(idx),
            "math_verify_right": sum(theirs[i] == rows[i].correct for i in idx) / len(idx)}
    ours_med, mv_med = statistics.median(ours_s), statistics.median(mv_s)
    return {
        "prompts": prompts, "group": group, "n": n, "repeats": repeats,
        "distinct_answers": len({(r.gold, r.completion.rsplit("boxed", 1)[-1]) for r in rows}),
        "math_answer_s": ours_s, "math_verify_s": mv_s,
        "math_answer_median_s": ours_med, "math_verify_median_s": mv_med,
        "ratio": mv_med / ours_med,
        "ratios": [m / o for o, m in zip(ours_s, mv_s, strict=True)],
        "math_answer_right": sum(ours[i] == rows[i].correct for i in range(n)) / n,
        "math_verify_right": len(mv_right) / n,
        "math_verify_right_rows": len(mv_right),
        "differs_from_math_verify_where_it_is_right": len(differ),
        "differing_examples": [{"gold": rows[i].gold, "tail": rows[i].completion[-100:],
                                "math_answer": ours[i]} for i in differ[:5]],
        "shapes": shapes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=64, help="P, prompts in the batch")
    parser.add_argument("--group", type=int, default=16, help="G, completions per prompt")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (median)")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    got = run(args.prompts, args.group, args.repeats, args.seed)
    if args.json:
        print(json.dumps(got, indent=2))
        return 0
    print(f"GRPO batch: {got['prompts']} prompts x {got['group']} completions = {got['n']} "
          f"rows, {got['distinct_answers']} distinct (reference, answer) pairs; "
          f"{got['repeats']} repeats, medians")
    print(f"    {'grader':<44}{'median s':>10}{'rows/s':>10}{'right':>8}")
    for name, key, right in (
            ("math_answer (RewardSet, defaults, cold)", "math_answer", "math_answer_right"),
            ("math-verify parse + verify", "math_verify", "math_verify_right")):
        secs = got[f"{key}_median_s"]
        print(f"    {name:<44}{secs:>10.3f}{got['n'] / secs:>10,.0f}{got[right]:>8.1%}")
    print(f"    math_answer vs math-verify wall time: {got['ratio']:.1f}x (median; per repeat "
          + ", ".join(f"{r:.1f}x" for r in got["ratios"]) + "); target >= 10x")
    print(f"    math_answer differs from math-verify where math-verify is right: "
          f"{got['differs_from_math_verify_where_it_is_right']} of "
          f"{got['math_verify_right_rows']}")
    for d in got["differing_examples"]:
        print(f"      gold {d['gold']!r} math_answer={d['math_answer']}: ...{d['tail']!r}")
    print("per shape, both in this process (math_answer's caches emptied first):")
    print(f"    {'shape':<12}{'rows':>6}{'distinct':>10}{'math_answer/s':>15}"
          f"{'math-verify/s':>15}{'ratio':>8}{'ma right':>10}{'mv right':>10}")
    for shape, r in got["shapes"].items():
        print(f"    {shape:<12}{r['n']:>6}{r['distinct']:>10}{r['math_answer_rows_per_s']:>15,.0f}"
              f"{r['math_verify_rows_per_s']:>15,.0f}{r['ratio']:>7.1f}x"
              f"{r['math_answer_right']:>10.1%}{r['math_verify_right']:>10.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
