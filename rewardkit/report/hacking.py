"""Suspected reward hacking: samples a reward pays for the wrong reasons.

Three signs, each a flag on a sample:

- ``format_paid_answer_wrong``: a format component paid most of its credit (at least
  :data:`FORMAT_PAID_SHARE` of the most it paid any sample of the run) while every answer
  component that scored it gave 0 or less. Partial format credit does not
  count: a dense layout reward pays a share to nearly every honest attempt, and a sign
  that fires on those hides the samples that learnt the format alone;
- ``long_high_reward``: the completion is much longer than usual (an outlier: past the
  upper quartile by three interquartile ranges, and over twice the median length) and
  its total is in the top quarter;
- ``repetitive_high_reward``: at least half of the completion's word 3-grams (character
  3-grams for text without spaces) are repeats, and its total is in the top quarter.

Which components check format and which check the answer is read from the component
and reward names (``format``, ``xml``, ``tag``, ``number`` ... vs ``accuracy``,
``correct``, ``answer`` ...); a report can be told explicitly instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.report.analysis import total_of, value_of
from rewardkit.reward_set import percentile
from rewardkit.types import completion_text as scored_text

#: checked first: "answer_is_number" checks the answer's form, not whether it is right
FORMAT_WORDS = re.compile(r"format|xml|tag|struct|schema|syntax|number|integer|numeric",
                          re.IGNORECASE)
ANSWER_WORDS = re.compile(r"accura|correct|answer|exact|match|math|pass|test|judge|verif",
                          re.IGNORECASE)
REPEAT_SHARE = 0.5
#: the share of the format credit a sample must earn for "format paid"
FORMAT_PAID_SHARE = 0.75
MIN_TOKENS = 20
FLAG_TEXT = {
    "format_paid_answer_wrong": "format paid, answer wrong",
    "long_high_reward": "very long, high reward",
    "repetitive_high_reward": "repetitive, high reward",
}


@dataclass(frozen=True)
class ComponentRoles:
    """Which components check the format and which the answer."""

    format: tuple[str, ...]
    answer: tuple[str, ...]

    @classmethod
    def guess(cls, names: Sequence[str],
              rewards: Mapping[str, str] | None = None) -> ComponentRoles:
        """Roles from the component names (and the registered reward of each)."""
        rewards = rewards or {}
        fmt, ans = [], []
        for name in names:
            label = f"{name} {rewards.get(name, '')}"
            if FORMAT_WORDS.search(label):
                fmt.append(name)
            elif ANSWER_WORDS.search(label):
                ans.append(name)
        return cls(tuple(fmt), tuple(ans))


def completion_text(row: Mapping[str, Any]) -> str:
    """The text scoring saw for a row: :func:`rewardkit.types.completion_text` of its
    ``completion`` (the assistant turns' text parts), never the prompt or a repr of
    content parts, so a flag shows what the rewards paid for."""
    return scored_text(row.get("completion"))


def repetition(text: str) -> float:
    """Share of 3-grams that repeat an earlier one (0 = none, toward 1 = all)."""
    tokens: Sequence[str] = text.split()
    if len(tokens) < MIN_TOKENS and len(text) >= 3 * MIN_TOKENS:
        tokens = [c for c in text if not c.isspace()]  # text without word spaces (CJK)
    if len(tokens) < MIN_TOKENS:
        return 0.0
    grams = [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]
    return 1.0 - len(set(grams)) / len(grams)


def long_cut(lengths: Sequence[int]) -> float:
    """Past this length a completion is very long: the upper quartile plus three
    interquartile ranges, and at least twice the median."""
    q1, q3 = percentile(lengths, 25), percentile(lengths, 75)
    return max(q3 + 3 * (q3 - q1), 2 * percentile(lengths, 50))


def format_paid(row: Mapping[str, Any], full: Mapping[str, float]) -> bool:
    """A format component paid ``row`` at least :data:`FORMAT_PAID_SHARE` of its ``full``
    credit (the most it paid any sample of the run; a component that never paid anything
    does not count)."""
    for name, top in full.items():
        value = value_of(row, name)
        if top > 0 and value is not None and value >= FORMAT_PAID_SHARE * top:
            return True
    return False


def full_credit(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, float]:
    """The most each component paid any of the rows (0.0 when it never paid)."""
    return {n: max((v for v in (value_of(r, n) for r in rows) if v is not None), default=0.0)
            for n in names}


def flag_samples(rows: Sequence[Mapping[str, Any]], roles: ComponentRoles) -> list[list[str]]:
    """The flags of each row (empty list = nothing suspect)."""
    lengths = [len(completion_text(r)) for r in rows]
    totals = [t for t in map(total_of, rows) if t is not None]
    high = percentile(totals, 75) if totals else math.inf
    lowest = min(totals) if totals else math.inf
    cut = long_cut(lengths) if lengths else 0.0
    full = full_credit(rows, roles.format)
    flags: list[list[str]] = []
    for row, length in zip(rows, lengths, strict=True):
        found: list[str] = []
        total = total_of(row)
        judged = [v for v in (value_of(row, n) for n in roles.answer) if v is not None]
        if judged and all(v <= 0 for v in judged) and format_paid(row, full):
            found.append("format_paid_answer_wrong")
        rewarded = total is not None and total >= high and total > lowest
        if rewarded and len(rows) >= 8 and length > cut:
            found.append("long_high_reward")
        if rewarded and repetition(completion_text(row)) >= REPEAT_SHARE:
            found.append("repetitive_high_reward")
        flags.append(found)
    return flags
