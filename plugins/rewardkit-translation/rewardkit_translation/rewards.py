"""``translation_verdict``: does the judge's rating list lead to the label's business verdict.

The judge rates a translation on several criteria (0-5 each). What the business acts
on is not the exact scores but whether a person must review the translation: any
score at or below ``review_at_or_below`` means review. Rewarding that verdict, not the
scores, trains the judge on the decision that matters.

>>> from rewardkit import Sample
>>> verdict = translation_verdict({"mode": "all"})
>>> out = "<think>A unit is wrong.</think>, my ratings is [5, 5, 5, 5, 1, 5]"
>>> verdict.score(Sample(completion=out, reference=[5, 5, 5, 5, 2, 5])).value
1.0
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import Field

from rewardkit import Params, Sample, Score, graded_text, reward, visible_length
from rewardkit_translation.ratings import (
    extract_ratings,
    needs_review,
    parse_rating_list,
)

_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
#: a bracketed span: ``[...]``, ``(...)`` or ``{...}`` (full-width brackets are folded)
_BRACKETED = re.compile(r"[\[({]([^\[\](){}]{0,400})[\])}]")
#: what separates the scores of a list: commas, semicolons, 、 or spaces
_SCORE_GAP = re.compile(r"[,;、\s]+")
#: one score as a list may write it: ``5``, ``+5``, ``5.0``, ``"5"``
_SCORE = re.compile(r"([\"']?)[+-]?\d+(?:\.\d+)?\1")
#: two scores offered for one slot: ``4 or 5``, ``4/5``, ``4|5``
_ALTERNATIVE = re.compile(r"\d\s*(?:\bor\b|/|\|)\s*[+-]?\d", re.IGNORECASE)


def _hedged(text: str, length: int) -> int:
    """How many different lists of ``length`` scores the answer (the text after the
    reasoning, :func:`rewardkit.graded_text`) states; more than one is a hedge between
    verdicts. A list is any bracketed run of numbers, however written (``[5 5 5]``,
    ``(5, 5, 5)``, ``["5", "5", "5"]``, ``[5.0, 5, 5]``, full-width ``［5，5，5］``), so a
    second list quoted "as an example" or offered under a condition counts whatever its
    notation; two lists with the same values are one."""
    tail = unicodedata.normalize("NFKC", graded_text(text) or "")
    lists: set[tuple[object, ...]] = set()
    for found in _BRACKETED.finditer(tail):
        items = [item for item in _SCORE_GAP.split(found.group(1)) if item]
        if len(items) == length and all(_SCORE.fullmatch(item) for item in items):
            lists.add(tuple(float(item.strip("\"'")) for item in items))
        elif _ALTERNATIVE.search(found.group(1)) and sum(
                1 for item in items if _SCORE.fullmatch(item)) >= length:
            lists.add(("alternatives", found.start()))  # a list with "4 or 5" in a slot
    return len(lists)


class VerdictParams(Params):
    mode: Literal["all", "per_criterion"] = Field(
        "all",
        description="all: 1 when the predicted overall verdict (any criterion needs "
        "review) equals the label's; per_criterion: the fraction of criteria whose "
        "review/OK verdict matches the label's",
    )
    review_at_or_below: int = Field(
        2, ge=0, description="a score at or below this needs human review (business rule)"
    )
    max_score: int = Field(5, ge=1, description="highest score; a larger one is malformed")
    criteria: int | None = Field(
        None,
        ge=1,
        description="number of scores each list must have; null = as many as the reference",
    )
    require_think: bool = Field(
        False,
        description="when true, an output without a non-empty <think> block before the "
        "ratings counts as unreadable (non-empty: visible characters; zero-width and "
        "other invisible characters do not count)",
    )
    unreadable_value: float = Field(
        0.0,
        description="value (status ok) when the output's ratings are missing, malformed or "
        "of the wrong length; the reason says which",
    )


@reward(params=VerdictParams)
def translation_verdict(sample: Sample, params: VerdictParams) -> Score:
    """Reward a translation judge for reaching the label's review verdict.

    The reference is the label rating list (a list, its JSON text, or a judge answer);
    when it cannot be read the grading fails (status error), it is not a 0. An output
    whose ratings cannot be read scores ``unreadable_value`` with the reason
    (``ratings missing`` / ``ratings malformed`` / ``ratings wrong_length``), and so does
    one that states several different rating lists after its reasoning, in any notation
    (``ratings hedged``: a hedge between verdicts is no verdict: a second list, one
    quoted "as an example", one offered under a condition).
    """
    gold = parse_rating_list(
        sample.reference, max_score=params.max_score, expected=params.criteria
    )
    if not gold.ok or gold.ratings is None:
        return Score.error(f"reference rating list unreadable: {gold.detail}")
    expected = len(gold.ratings)

    text = sample.text
    if params.require_think:
        think = _THINK_BLOCK.search(text)
        if think is None or visible_length(think.group(1)) == 0:
            return Score.ok(params.unreadable_value, "no reasoning block", status="no_think")
    predicted = extract_ratings(text, max_score=params.max_score, expected=expected)
    if not predicted.ok or predicted.ratings is None:
        return Score.ok(
            params.unreadable_value,
            f"ratings {predicted.status}: {predicted.detail}",
            status=str(predicted.status),
        )

    stated = _hedged(text, expected)
    if stated > 1:
        return Score.ok(params.unreadable_value,
                        f"ratings hedged: {stated} different rating lists in the answer",
                        status="hedged")

    gold_review = needs_review(gold.ratings, params.review_at_or_below)
    pred_review = needs_review(predicted.ratings, params.review_at_or_below)
    if params.mode == "all":
        same = any(gold_review) == any(pred_review)
        label = "needs review" if any(gold_review) else "ok"
        reason = f"verdict matches ({label})" if same else f"verdict differs (label: {label})"
        return Score.ok(1.0 if same else 0.0, reason, ratings=list(predicted.ratings))
    matches = sum(g == p for g, p in zip(gold_review, pred_review, strict=True))
    return Score.ok(
        matches / expected,
        f"{matches}/{expected} criteria verdicts match",
        ratings=list(predicted.ratings),
    )
