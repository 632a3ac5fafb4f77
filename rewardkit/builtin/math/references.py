"""What math_answer's gold answer is: a plain number, words, or mathematics.

A reference is read once per distinct text (a GRPO group shares one): a plain number
or a word answer (``\\text{odd}``) without math-verify, a :class:`SymbolicReference` one for
math-verify, or a Score with status error when it is missing or prose (a broken
dataset row is not a wrong answer); :func:`symbolic_reference` is math-verify's parse
of a symbolic one. Apart from the reward because its exact fast path reads references
the same way.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from rewardkit.builtin.math.cost_guards import too_costly
from rewardkit.builtin.math.extraction import (
    boxed,
    reference_text,
)
from rewardkit.builtin.math.numbers import _COMMA_DECIMAL, PlainNumber, read_number
from rewardkit.builtin.math.params import MathParams
from rewardkit.builtin.math.symbolic import parse_answer, parse_output
from rewardkit.types import Score


class WordReference:
    """A gold answer that is words, not mathematics (``\\text{odd}``, ``Even``)."""

    def __init__(self, words: str) -> None:
        self.words = words


class SymbolicReference:
    """A gold answer for math-verify. ``comma_decimal``: a gold that is two numbers joined
    by one comma in the decimal-comma shape (``-2,1``, ``1,22``) is a list or a decimal,
    and the gold cannot say which: this is its decimal reading, paid beside the list's."""

    def __init__(self, text: str, comma_decimal: PlainNumber | None = None) -> None:
        self.text = text
        self.comma_decimal = comma_decimal


_TEXT_ONLY = re.compile(r"\s*\\(?:text|textbf|mathrm|textnormal|mbox)\s*\{([^{}$\\]*)\}\s*")
_ONE_WORD = re.compile(r"\s*([A-Za-z]{2,})\s*")
#: two words in a row, each with a lower-case letter (``AE + AP = PD`` names quantities)
_PROSE = re.compile(r"(?<![\\A-Za-z])(?=[A-Z]*[a-z])[A-Za-z]{2,}\b[^\\$]{0,3}?\s+"
                    r"(?=[A-Z]*[a-z])[A-Za-z]{2,}")
_TEXT_BLOCK = re.compile(r"\\(?:text|textbf|mathrm|textnormal|mbox|operatorname)\s*\{[^{}]*\}")
_HAS_MATH = re.compile(r"[\d$]|\\[a-zA-Z(\[]")
_LAST_SPAN = re.compile(r"\$([^$\n]{1,200})\$\s*\.?\s*$")


def word_form(text: str) -> str:
    """Text reduced for comparing word answers: delimiters, ``\\text{}``, case and
    punctuation dropped."""
    s = text.strip().strip("$").strip()
    inner = boxed(s) if s.startswith("\\boxed") else None
    s = inner if inner is not None else s
    s = _TEXT_BLOCK.sub(lambda m: " " + m.group(0).split("{", 1)[1][:-1] + " ", s)
    return " ".join(re.sub(r"[^\w\s]", " ", s).casefold().split())


def closing_word_span(text: str) -> str | None:
    """For a word answer that no strategy found: a closing ``$...$`` span (``$Even$``), or
    the whole output when it is short."""
    m = _LAST_SPAN.search(text)
    if m:
        return m.group(1)
    stripped = text.strip()
    return stripped if 0 < len(stripped) <= 100 else None


def plain_reference(
    reference: Any, params: MathParams
) -> PlainNumber | WordReference | SymbolicReference | Score:
    """The gold answer as a plain number or a word answer, read without math-verify; a
    ``SymbolicReference`` when math-verify must read it; a Score with status error when it is
    missing or prose."""
    if type(reference) is str:  # the common case: read each distinct reference once
        return reference_kind(reference, params.decimal_comma, params.symbolic)
    text = reference_text(reference)
    if text is None:
        return Score.error("sample has no reference answer")
    return reference_kind(text, params.decimal_comma, params.symbolic)


@lru_cache(maxsize=65536)
def reference_kind(
    reference: str, decimal_comma: bool, symbolic: bool
) -> PlainNumber | WordReference | SymbolicReference | Score:
    """What a gold answer is, read once per distinct reference (a GRPO group shares one)."""
    text = reference_text(reference)
    if text is None:
        return Score.error("sample has no reference answer")
    gold_text = text
    number = read_number(gold_text, decimal_comma)
    if number is not None:
        if symbolic and not decimal_comma and _COMMA_DECIMAL.fullmatch(
                gold_text.strip().strip("$").strip()):
            return SymbolicReference(gold_text, comma_decimal=number)  # "-2,1": the roots, or -2.1
        return number
    inner = gold_text.strip().strip("$").strip()
    words = _TEXT_ONLY.fullmatch(inner) or _ONE_WORD.fullmatch(inner)
    if words and not re.search(r"\d", words.group(1)):
        return WordReference(word_form(words.group(1)))
    if _PROSE.search(_TEXT_BLOCK.sub(" ", inner)):
        if not _HAS_MATH.search(gold_text):
            return Score.error(f"reference {gold_text[:80]!r} is prose, not a number, "
                               "mathematics or a word answer in \\text{}")
        # a worked solution (MATH style): its boxed answer is the gold
        if gold_text.count("\\boxed") + gold_text.count("\\fbox") == 1:
            number = read_number(boxed(gold_text) or "", decimal_comma)
            if number is not None:
                return number
    if not symbolic:
        return Score.error(f"reference {gold_text[:80]!r} is not a plain number")
    return SymbolicReference(gold_text)


def symbolic_reference(mv: Any, reference: Any) -> list[Any] | Score:
    """math-verify's parse of a gold answer that is not a plain number; status error when
    it cannot be parsed or is too costly to. Parsed once per distinct text in a process:
    the reward's symbolic path and its fast path ask for the same gold (a parse cut short
    by the deadline raises and is not kept)."""
    parsed = _parsed_reference(mv, reference_text(reference) or "")
    return parsed if isinstance(parsed, Score) else list(parsed)


@lru_cache(maxsize=4096)
def _parsed_reference(mv: Any, gold_text: str) -> tuple[Any, ...] | Score:
    refusal = too_costly(gold_text, 10_000, max_powers=None)
    if refusal:
        return Score.error(f"reference cannot be graded: {refusal}")
    if _PROSE.search(_TEXT_BLOCK.sub(" ", gold_text)):  # a worked solution: its own extraction
        parsed = parse_output(mv, gold_text)
    else:
        # with its text as well as its value, as math-verify reads a gold ("12:00")
        parsed = parse_answer(mv, gold_text, fallback=_balanced(gold_text))
    if not parsed:
        return Score.error(f"reference {gold_text[:80]!r} cannot be parsed")
    return tuple(parsed)


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0
