"""qa_match against the official SQuAD evaluation scripts' numbers, row by row, on answer
spans given in an answer block: golds that look like a lead-in (``E = mc2``, ``Answers in
Genesis``, ``The Final Answer``), golds of articles only, and ordinary spans.

The official functions are written here from their documented logic: normalise
(lowercase, ASCII punctuation removed, the articles a/an/the removed, whitespace
collapsed); exact match compares the normalised texts; F1 is the harmonic mean of the
token precision and recall, 0 without a shared token (v2.0: an empty side scores whether
both are empty); the best over the acceptable answers counts.
"""

from __future__ import annotations

import re
import string
from collections import Counter

import pytest

from rewardkit import Sample, get_reward


def _normalise(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def official_em(prediction: str, golds: list[str]) -> float:
    return max(float(_normalise(prediction) == _normalise(g)) for g in golds)


def official_f1(prediction: str, golds: list[str], v2: bool = False) -> float:
    def f1(gold: str) -> float:
        predicted, wanted = _normalise(prediction).split(), _normalise(gold).split()
        if v2 and (not predicted or not wanted):
            return float(predicted == wanted)
        same = sum((Counter(predicted) & Counter(wanted)).values())
        if same == 0:
            return 0.0
        p, r = same / len(predicted), same / len(wanted)
        return 2 * p * r / (p + r)
    return max(f1(g) for g in golds)


#: (prediction, acceptable answers)
ROWS = [
    ("E = mc2", ["E = mc2"]), ("F = ma", ["F = ma"]), ("y = x + 1", ["y = x + 1"]),
    ("Answers in Genesis", ["Answers in Genesis"]), ("The Final Answer", ["The Final Answer"]),
    ("Answer Me, My Love", ["Answer Me, My Love"]), ("Result", ["Result"]),
    ("The Answer", ["The Answer", "Answer"]), ("Results-based", ["Results-based"]),
    ("X = Y", ["X = Y"]), ("Denver Broncos", ["Denver Broncos", "Broncos"]),
    ("Broncos", ["Denver Broncos"]), ("Saint Bernadette Soubirous", ["Saint Bernadette Soubirous"]),
    ("the Eiffel Tower", ["Eiffel Tower"]), ("U.S.", ["US"]), ("1889", ["1889"]),
    ("in 1889", ["1889"]), ("Paris", ["Paris, France", "Paris"]),
    ("The Answer Is Blowin' in the Wind", ["The Answer Is Blowin' in the Wind"]),
    ("Result = Win", ["Result = Win"]),
    ("the", ["the"]), ("The", ["The", "A"]),
]


@pytest.fixture(scope="module")
def rewards() -> dict[str, object]:
    return {metric: get_reward("qa_match")({"metric": metric, "max_extra_tokens": None})
            for metric in ("exact_match", "f1")}


@pytest.mark.parametrize(("prediction", "golds"), ROWS)
def test_exact_match_is_the_official_scripts(rewards, prediction, golds) -> None:
    sample = Sample(completion=f"<answer>{prediction}</answer>", reference=golds)
    assert rewards["exact_match"].score(sample).value == official_em(prediction, golds)


@pytest.mark.parametrize(("prediction", "golds"), ROWS)
def test_f1_is_the_official_scripts(rewards, prediction, golds) -> None:
    """v1.1's F1, except a gold of articles only answered with it: v2.0's (1)."""
    sample = Sample(completion=f"<answer>{prediction}</answer>", reference=golds)
    value = rewards["f1"].score(sample).value
    articles_only = not any(_normalise(g) for g in golds)
    assert value == pytest.approx(official_f1(prediction, golds, v2=articles_only))
