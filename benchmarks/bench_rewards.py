"""Rewards used by the benchmarks: the SEEDS A five, written as plain regex functions,
and a CPU-bound reward for process-mode scaling."""

from __future__ import annotations

import re

from rewardkit import Sample, reward

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
