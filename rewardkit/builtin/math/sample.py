"""What math_answer reads from a sample, and the Score of a verdict.

The answer the extraction strategies find with the reason the output does not stand by
it, and one cached Score per distinct verdict. Shared by the reward's plain-number and
symbolic paths (:mod:`rewardkit.builtin.math`) and its exact fast path
(:mod:`~rewardkit.builtin.math.fast_path`), so that all three read a sample the same way; the
text they read is :func:`rewardkit.graded_text`'s and the prompt
:func:`rewardkit.prompt_text`'s, as every reward reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from rewardkit.builtin.math.commitment import (
    SUPERSEDED,
    context_refusal,
)
from rewardkit.builtin.math.extraction import (
    Found,
    extract,
)
from rewardkit.builtin.math.params import MathParams
from rewardkit.types import Score, Status


def find_answer(text: str, params: MathParams, prompt: str = "") -> tuple[Found | None, str]:
    """The answer the strategies find, and why the output does not stand by it (empty
    when it does). A number read from the text that a later number follows gives way to
    the next strategy."""
    first = params.occurrence == "first"
    order: Sequence[str] = params.extract
    while order:
        found = extract(text, order, params.answer_tag, first=first,
                        decimal_comma=params.decimal_comma)
        if found is None:
            return None, ""
        refusal = context_refusal(found, first, prompt)
        if refusal != SUPERSEDED:
            return found, refusal
        order = order[order.index(found.how) + 1 :]
    return None, ""


def verdict_score(same: bool, params: MathParams, how: str, answer: str) -> Score:
    return ok_score(float(params.score if same else params.wrong), how, answer)


@lru_cache(maxsize=16384)
def ok_score(value: float, how: str, answer: str) -> Score:
    """One Score per distinct verdict (Scores are immutable): a GRPO group mostly repeats
    a few answers, and this runs once per sample on the fast path."""
    return Score(value, Status.OK, "", {"via": how, "extracted": answer[:200]})
