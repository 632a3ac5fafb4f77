"""Rewards used by the benchmarks: the SEEDS A five, written as plain regex functions,
a CPU-bound reward for process-mode scaling, and math_answer graded in workers only."""

from __future__ import annotations

import re
from typing import cast

from rewardkit import Sample, Score, reward
from rewardkit.builtin.math import MathParams
from rewardkit.builtin.math import math_answer as _math_answer

_ANSWER = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_SOFT = re.compile(r"<reasoning>.*?</reasoning>\s*<answer>.*?</answer>", re.DOTALL)
_STRICT = re.compile(r"^<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n$", re.DOTALL)


@reward
def bench_correct(sample: Sample) -> float:
    m = _ANSWER.search(sample.text)
    return 2.0 if m is not None and m.group(1) == sample.reference else 0.0


@reward
def bench_integer(sample: Sample) -> float:
    m = _ANSWER.search(sample.text)
    return 0.5 if m is not None and _NUMBER.fullmatch(m.group(1)) else 0.0


@reward
def bench_soft(sample: Sample) -> float:
    return 0.5 if _SOFT.search(sample.text) else 0.0


@reward
def bench_strict(sample: Sample) -> float:
    return 0.5 if _STRICT.match(sample.text) else 0.0


@reward
def bench_xml(sample: Sample) -> float:
    text = sample.text
    score = 0.0
    if text.count("<reasoning>\n") == 1:
        score += 0.125
    if text.count("\n</reasoning>\n") == 1:
        score += 0.125
    if text.count("\n<answer>\n") == 1:
        score += 0.125
    if text.count("\n</answer>") == 1:
        score += 0.125
        score -= (len(text.split("\n</answer>")[-1]) - 1) * 0.001
    return score


FIVE = {"correct": bench_correct, "integer": bench_integer, "soft": bench_soft,
        "strict": bench_strict, "xml": bench_xml}


@reward(mode="process")
def bench_cpu_bound(sample: Sample) -> float:
    """About 5 ms of pure-Python arithmetic per sample."""
    total = 0
    for i in range(60_000):
        total += (i * i) % 7
    return float(total % 3)


CPU_BOUND = bench_cpu_bound


@reward(params=MathParams, mode="process", timeout=10.0)
def bench_math_in_worker(sample: Sample, params: MathParams) -> Score:
    """``math_answer`` without its in-process quick hook: every row, plain numbers
    included, is graded in a worker (what numeric ``math_answer`` cost in process mode
    before the hook; the same code and verdicts)."""
    return cast(Score, _math_answer.fn(sample, params))


MATH_IN_WORKER = bench_math_in_worker
