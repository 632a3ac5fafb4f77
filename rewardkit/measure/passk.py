"""pass@k and maj@k over groups of samples of one prompt, per component.

pass@k is the unbiased estimator of the chance that at least one of ``k`` samples drawn
from a prompt's ``n`` is correct, given ``c`` correct among the ``n``:
``1 - C(n - c, k) / C(n, k)`` (:func:`pass_at_k`), averaged over prompts. maj@k is the
chance that the most frequent answer among ``k`` samples is a correct one
(:func:`maj_at_k`: exact when ``k == n``, else the mean over seeded random draws of ``k``;
a tie counts the share of the tied answers that are correct). Each comes with a 95%
interval over prompts (mean +/- 1.96 standard errors, clipped to [0, 1]).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from rewardkit.measure.stats import Z95
from rewardkit.types import Sample, group_key

#: random draws of k samples per prompt for maj@k when k < n
MAJ_DRAWS = 200


def pass_at_k(n: int, c: int, k: int) -> float:
    """``1 - C(n - c, k) / C(n, k)``, computed as a product (no huge binomials).

    >>> round(pass_at_k(10, 1, 1), 6), pass_at_k(10, 0, 5), pass_at_k(4, 1, 4)
    (0.1, 0.0, 1.0)
    """
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _vote(answers: Sequence[Hashable | None], correct: Sequence[bool]) -> float:
    votes = Counter(a for a in answers if a is not None)
    if not votes:
        return 0.0
    top = max(votes.values())
    tied = [a for a, count in votes.items() if count == top]
    right = {a for a, ok in zip(answers, correct, strict=True) if ok and a is not None}
    return sum(a in right for a in tied) / len(tied)


def maj_at_k(answers: Sequence[Hashable | None], correct: Sequence[bool], k: int,
             seed: int = 0) -> float:
    """The chance that the majority answer of ``k`` of these samples is correct (an
    answer is correct when a sample giving it is; None = no answer, no vote).

    >>> maj_at_k(["4", "4", "5"], [True, True, False], 3)
    1.0
    """
    n = len(answers)
    if not 0 < k <= n:
        raise ValueError(f"maj@k needs 0 < k <= n (n={n}, k={k})")
    if k == n:
        return _vote(answers, correct)
    rng = random.Random(seed)
    total = 0.0
    for _ in range(MAJ_DRAWS):
        picked = rng.sample(range(n), k)
        total += _vote([answers[i] for i in picked], [correct[i] for i in picked])
    return total / MAJ_DRAWS


def _mean_ci(values: list[float]) -> dict[str, Any]:
    m = len(values)
    mean = math.fsum(values) / m
    if m < 2:
        return {"value": mean, "ci95": None, "prompts": m}
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (m - 1))
    half = Z95 * sd / math.sqrt(m)
    return {"value": mean, "ci95": [max(0.0, mean - half), min(1.0, mean + half)],
            "prompts": m}


def default_ks(sizes: Sequence[int]) -> list[int]:
    """1, 2, 4, ... up to the smallest group, and that size itself."""
    smallest = min(sizes, default=0)
    ks = [k for k in (2 ** i for i in range(20)) if k <= smallest]
    if smallest and smallest not in ks:
        ks.append(smallest)
    return ks


def pass_and_maj(groups: Sequence[tuple[Sequence[Hashable | None], Sequence[bool]]],
                 ks: Sequence[int] | None = None) -> dict[str, dict[str, Any]]:
    """For each k: ``pass@k`` and ``maj@k`` (value, ci95, prompts) over the groups of at
    least k samples; ``groups`` holds (answers, correct) per prompt."""
    sizes = [len(answers) for answers, _ in groups]
    table: dict[str, dict[str, Any]] = {}
    for k in ks if ks is not None else default_ks(sizes):
        chosen = [(a, c) for a, c in groups if len(a) >= k]
        if not chosen:
            continue
        table[str(k)] = {
            "pass@k": _mean_ci([pass_at_k(len(c), sum(c), k) for _, c in chosen]),
            "maj@k": _mean_ci([maj_at_k(a, c, k, seed=i) for i, (a, c) in enumerate(chosen)])}
    return table


def answer_of(row: dict[str, Any]) -> Hashable | None:
    """The answer a scored row votes for in maj@k: its ``answer`` column when it has one
    (``rewardkit eval`` fills it with the accuracy component's extracted answer), else its
    completion's text (the last message's, for chat), whitespace collapsed."""
    if "answer" in row:
        answer = row["answer"]
        return None if answer is None else str(answer).strip()
    completion = row.get("completion")
    if isinstance(completion, list):
        last = completion[-1] if completion else {}
        completion = last.get("content") if isinstance(last, dict) else last
    return " ".join(str(completion or "").split()) or None


def by_component(rows: Sequence[dict[str, Any]], ks: Sequence[int] | None = None
                 ) -> dict[str, dict[str, dict[str, Any]]]:
    """pass@k and maj@k of every component of scored rows (``rewardkit score``'s output),
    over the prompts with more than one sample (:func:`rewardkit.types.group_key`). A
    sample is correct for a component when the component paid it in full: its value
    reaches the highest value the component paid in the file (and that is above 0).
    Empty when no prompt has two samples."""
    groups: dict[Hashable, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(group_key(Sample.from_dict(row)), []).append(i)
    multi = [members for members in groups.values() if len(members) > 1]
    if not multi:
        return {}
    names: list[str] = []
    for row in rows:
        for name in row.get("components") or {}:
            if name not in names:
                names.append(name)
    answers = [answer_of(dict(row)) for row in rows]
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for name in names:
        values = [_value(row, name) for row in rows]
        top = max((v for v in values if v is not None), default=None)
        if top is None or top <= 0:
            continue
        correct = [v is not None and v >= top - 1e-9 for v in values]
        table[name] = pass_and_maj([([answers[i] for i in m], [correct[i] for i in m])
                                    for m in multi], ks)
    return table


def _value(row: dict[str, Any], name: str) -> float | None:
    c = (row.get("components") or {}).get(name)
    if not isinstance(c, dict) or c.get("status", "ok") != "ok":
        return None
    v = c.get("value")
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None
