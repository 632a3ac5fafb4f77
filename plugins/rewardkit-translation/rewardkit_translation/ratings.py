"""Reading a translation judge's rating list, and turning ratings into a business verdict.

The judge answers ``<think>...</think>, my ratings is [2, 5, 5, 5, 5, 5, 5]``: one
score from 0 to 5 per criterion. The business rule: a score at or below a threshold
(2 by default) means a person must review the translation.

>>> extract_ratings("<think>ok</think>, My ratings are [2,5, 5]").ratings
(2, 5, 5)
>>> needs_review((2, 5, 5), review_at_or_below=2)
(True, False, False)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rewardkit import graded_text


class RatingsStatus(StrEnum):
    """Why a rating list could or could not be read."""

    OK = "ok"
    MISSING = "missing"  # no "ratings ..." statement at all
    MALFORMED = "malformed"  # a statement, but no list of integer scores in range
    WRONG_LENGTH = "wrong_length"  # a list of the wrong number of scores


@dataclass(frozen=True)
class RatingsResult:
    """The outcome of :func:`extract_ratings`: the ratings when ``status`` is OK."""

    ratings: tuple[int, ...] | None
    status: RatingsStatus
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status is RatingsStatus.OK


# "my ratings is [..]", "Ratings are: [..]", "rating = [..]"; the list may be unclosed
_STATEMENT = re.compile(
    r"\bratings?\b\s*(?:is|are|:|=)\s*:?\s*(\[[^\[\]]*\]?)?", re.IGNORECASE
)
_INTEGER = re.compile(r"[+-]?\d+")


def extract_ratings(
    text: str, *, max_score: int = 5, expected: int | None = None
) -> RatingsResult:
    """The rating list the judge stated in ``text``.

    Only the text after the reasoning is searched (:func:`rewardkit.graded_text`: the
    reasoning may quote other lists, and one that never closes states no ratings), and
    the last ``ratings is [...]`` statement there wins. Spacing and case do not matter.
    Each score must be an integer in ``[0, max_score]``; with ``expected``, the list must
    have exactly that many.
    """
    tail = graded_text(text)
    if tail is None:
        return RatingsResult(None, RatingsStatus.MISSING, "the reasoning never closes")
    statement = None
    for match in _STATEMENT.finditer(tail):
        statement = match
    if statement is None:
        return RatingsResult(None, RatingsStatus.MISSING, "no 'my ratings is [...]' statement")
    bracketed = statement.group(1)
    if bracketed is None:
        return RatingsResult(None, RatingsStatus.MALFORMED, "ratings statement without a list")
    if not bracketed.endswith("]"):
        return RatingsResult(None, RatingsStatus.MALFORMED, "rating list is not closed")
    return _check_scores(bracketed[1:-1].split(","), max_score, expected)


def parse_rating_list(
    value: Any, *, max_score: int = 5, expected: int | None = None
) -> RatingsResult:
    """A reference rating list: a list of integers, its JSON text (``"[2, 5, 5]"``), or
    a judge answer (``"..., my ratings is [2, 5, 5]"``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return extract_ratings(value, max_score=max_score, expected=expected)
    if not isinstance(value, list | tuple):
        return RatingsResult(
            None, RatingsStatus.MALFORMED, f"expected a list of scores, got {type(value).__name__}"
        )
    items: list[str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float | str):
            return RatingsResult(None, RatingsStatus.MALFORMED, f"score {item!r} is not a number")
        if isinstance(item, float):
            if not item.is_integer():
                return RatingsResult(
                    None, RatingsStatus.MALFORMED, f"score {item!r} is not an integer"
                )
            item = int(item)
        items.append(str(item))
    return _check_scores(items, max_score, expected)


def needs_review(ratings: Sequence[int], review_at_or_below: int = 2) -> tuple[bool, ...]:
    """Per criterion: does its score call for human review (score <= threshold)."""
    return tuple(score <= review_at_or_below for score in ratings)


def _check_scores(items: list[str], max_score: int, expected: int | None) -> RatingsResult:
    stripped = [item.strip() for item in items]
    if stripped in ([], [""]):
        return RatingsResult(None, RatingsStatus.MALFORMED, "empty rating list")
    scores: list[int] = []
    for item in stripped:
        if not _INTEGER.fullmatch(item):
            return RatingsResult(
                None, RatingsStatus.MALFORMED, f"score {item[:20]!r} is not an integer"
            )
        # a 5000-digit "score" is out of range; don't ask int() to parse it
        score = int(item) if len(item) <= 6 else max_score + 1
        if not 0 <= score <= max_score:
            return RatingsResult(
                None, RatingsStatus.MALFORMED, f"score {score} is outside 0..{max_score}"
            )
        scores.append(score)
    if expected is not None and len(scores) != expected:
        return RatingsResult(
            tuple(scores),
            RatingsStatus.WRONG_LENGTH,
            f"{len(scores)} scores, expected {expected}",
        )
    return RatingsResult(tuple(scores), RatingsStatus.OK)
