"""math_answer's exact fast path for symbolic answers, before math-verify and sympy.

A GRPO batch is P prompts x G completions sharing one reference per group, and a group
gives a few distinct final answers. math-verify parses the reference and the answer of
every completion again (milliseconds each); this module reads both, once per distinct
text, into exact values of a small language and compares them exactly:

- numbers of Q(sqrt): integers, fractions, square roots and their sums and products
  (``\\frac{1+\\sqrt{5}}{2}``, ``3\\sqrt{2}``, ``2^{1009}``), with ``\\pi`` or ``e`` and
  one-letter variables as indeterminates (polynomials such as ``2x^2+x-1``, ``\\frac{x}{2}``);
  two such values are equal exactly when their canonical forms are (square roots of
  distinct squarefree integers are linearly independent over Q, and pi and e are
  transcendental), so no tolerance is involved anywhere;
- tuples and intervals ``(a, b)``, ``[a, b)``, ``(-\\infty, 3]``, sets ``\\{a, b\\}``,
  matrices (``pmatrix``, ``bmatrix``), and equations: equal when proportional, different
  when both are linear, or when a point solving one (found exactly in Q(sqrt)) does not
  solve the other; a decimal answer far from an exact gold (``4.47`` for ``2\\sqrt{5}``) is
  wrong, one close to it is math-verify's to round.

Anything outside that language (decimals, percents, functions, ``\\pm``, subscripts,
words, unions, bare lists, a tuple against a set, ...) goes to math-verify, but with the
one formula the output commits to (as an answer block is read), the reference parsed
once. Each (reference, answer) verdict is cached in the process, so a worker grades each
distinct answer of a batch once. Outputs where the commitment rules have something to
say (refusals, hedges, several final statements or boxes) take math_answer's symbolic
path unchanged.

This module holds the fast path's verdict and its caches; the exact language is in
:mod:`~rewardkit.builtin.math.exact_numbers` (numbers and the parser),
:mod:`~rewardkit.builtin.math.exact_structures` (tuples, intervals, sets, matrices) and
:mod:`~rewardkit.builtin.math.exact_equations` (equations). math_answer
(:mod:`rewardkit.builtin.math`) calls it; it imports what it shares with math_answer from
the modules both use, never math.py.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from rewardkit.builtin.math.commitment import competing_statements, hedged
from rewardkit.builtin.math.cost_guards import too_costly
from rewardkit.builtin.math.disproof import verify
from rewardkit.builtin.math.exact_numbers import NAMED_CONSTANTS
from rewardkit.builtin.math.exact_structures import exact_value, same
from rewardkit.builtin.math.extraction import STATEMENTS, reference_text
from rewardkit.builtin.math.hedges import one_value, several_values
from rewardkit.builtin.math.params import MathParams
from rewardkit.builtin.math.references import SymbolicReference, plain_reference, symbolic_reference
from rewardkit.builtin.math.sample import find_answer, verdict_score
from rewardkit.builtin.math.symbolic import (
    as_one_formula,
    cas_form,
    exactly_different,
    load_math_verify,
    parse_output,
)
from rewardkit.text.graded import graded_text
from rewardkit.text.prompt import prompt_text
from rewardkit.types import Sample, Score


@lru_cache(maxsize=65536)
def exact_compare(gold: str, answer: str) -> bool | None:
    """The exact verdict for one (reference, answer) pair, cached: a worker grades each
    distinct answer of a batch once."""
    g = exact_value(gold)
    if g is None or ("\\pi" in gold + answer and _EULER.search(gold + " " + answer)):
        return None  # pi and e together: math-verify decides
    p = exact_value(answer)
    if p is None:
        return _decimal_differs(g, answer)
    return same(g, p)


_EULER = re.compile(r"(?<![\\A-Za-z])e(?![A-Za-z])")
_DECIMAL = re.compile(r"\s*\$?\s*(-?\d{1,9}\.\d{1,12})\s*\$?\s*\.?\s*")
#: math-verify compares a decimal with an exact number after rounding both to 6 places:
#: farther apart than this, it cannot call them equal
_DECIMAL_MARGIN = 1e-5


def _decimal_differs(gold: Any, answer: str) -> bool | None:
    """False for a decimal answer far from an exact constant gold (``4.47`` for
    ``2\\sqrt{5}``: math-verify rounds both to 6 places, and these differ in the third);
    None when they are close, which math-verify's rounding decides."""
    m = _DECIMAL.fullmatch(answer)
    if m is None or gold[0] != "num":
        return None
    total = 0.0
    for (monomial, radicand), c in gold[1]:
        if any(v not in NAMED_CONSTANTS for v, _ in monomial):
            return None  # a variable against a number: math-verify decides
        if sum(abs(e) for _, e in monomial) > 8 or abs(c) > 10**9:
            return None
        value = float(c) * radicand ** 0.5
        for v, e in monomial:
            value *= NAMED_CONSTANTS[v] ** e
        total += value
    if abs(total) > 10**9:
        return None
    return False if abs(total - float(m.group(1))) > _DECIMAL_MARGIN else None


#: strategies whose answer is all that math-verify reads (the boxed one only when the
#: output holds a single box)
_WHOLE_ANSWER = ("answer_tag", "hashes", "bare", "boxed")


def fast_verdict(sample: Sample, params: MathParams) -> Score | None:
    """math_answer's verdict on a symbolic reference without math-verify, when both the
    reference and the answer the output commits to are in the exact language; None
    otherwise (and for every case the commitment rules must look at: refusals, hedges,
    competing final statements), which leaves the verdict to the math-verify path."""
    if not params.symbolic or load_math_verify() is None:
        return None  # without math-verify, symbolic answers are an error, not a verdict
    gold_text = reference_text(sample.reference)
    if gold_text is None:
        return None
    gold = plain_reference(sample.reference, params)
    if type(gold) is not SymbolicReference:
        return None
    text = graded_text(sample.text, params.reasoning_tag)
    if text is None:
        return None
    found, refusal = find_answer(text, params, prompt_text(sample.prompt))
    if found is None or refusal or found.how not in _WHOLE_ANSWER or not found.answer:
        return None
    if found.how == "boxed" and text.count("\\boxed") + text.count("\\fbox") != 1:
        return None
    if hedged(found.answer) or too_costly(found.answer, params.max_symbolic_chars):
        return None
    if one_value(gold_text) and several_values(found.answer, found.how, prompt_text(sample.prompt)):
        return None
    if found.how in STATEMENTS and competing_statements(
            found, params.extract, params.answer_tag, first=params.occurrence == "first"):
        return None
    formula = cas_form(found.answer)
    verdict = exact_compare(gold_text.strip(), formula)
    if verdict is None:
        verdict = math_verify_verdict(gold_text, formula)
    if verdict is None:
        return None
    return verdict_score(verdict, params, found.how, found.answer)


#: what math-verify's LaTeX normalisation drops or rewrites before it parses: ``\\left`` and
#: ``\\right`` before a delimiter, ``\\dfrac`` / ``\\tfrac`` (read as ``\\frac``), thin
#: and negative spaces, ``\\displaystyle``; and whitespace
_LAYOUT = re.compile(r"\\(?:left|right)(?![A-Za-z])|\\displaystyle(?![A-Za-z])|\\[,;:!]|\s+")
_FRAC = re.compile(r"\\[dt]frac(?![A-Za-z])")
#: math delimiters around a whole answer, and a full stop after them
_DELIMITED = re.compile(r"\s*(?:\$|\\\[|\\\()(.*?)(?:\$|\\\]|\\\))\s*\.?\s*", re.DOTALL)


def layout_form(text: str) -> str:
    r"""An answer with what math-verify reads past removed: its math delimiters (and a full
    stop after them), ``\left`` / ``\right``, ``\dfrac`` and ``\tfrac`` written as
    ``\frac``, thin spaces and whitespace. Two answers with the same layout form are
    parsed alike.

    >>> layout_form(r"$\dfrac{1}{2} \left( x+1 \right)$.")
    '\\frac{1}{2}(x+1)'
    """
    m = _DELIMITED.fullmatch(text)
    if m and "$" not in m.group(1):
        text = m.group(1)
    return _FRAC.sub(r"\\frac", _LAYOUT.sub("", text))


def written_alike(answer: str, gold_text: str) -> bool:
    """The answer is the reference as written, up to layout (:func:`layout_form`): equal
    without a comparison."""
    if "".join(answer.split()) == "".join(gold_text.split()):
        return True
    return layout_form(answer) == layout_form(gold_text)


@lru_cache(maxsize=4096)
def parse_gold_once(gold_text: str) -> tuple[Any, ...] | None:
    """math-verify's parse of a reference, once per distinct reference in this process."""
    parsed = symbolic_reference(load_math_verify(), gold_text)
    return None if isinstance(parsed, Score) else tuple(parsed)


@lru_cache(maxsize=65536)
def math_verify_verdict(gold_text: str, formula: str) -> bool | None:
    """math-verify's verdict on the one formula the output commits to, as math_answer's
    symbolic path reads an answer block (the formula in math delimiters; exact numbers
    compared exactly), cached: each distinct answer of a batch is parsed once; the
    reference's own text (spacing aside) is equal without a comparison. None when either
    side cannot be parsed (the symbolic path then reads the whole output)."""
    gold = parse_gold_once(gold_text)
    if gold is None:
        return None
    if written_alike(formula, gold_text):
        return True  # the reference as written, which math-verify parses: no sympy needed
    mv = load_math_verify()
    region = as_one_formula(formula)
    pred = parse_output(mv, region)
    if not pred:
        return None
    same = verify(mv, list(gold), pred)  # math-verify's verdict, wrong ones cheaper
    return same and not exactly_different(list(gold), pred, region)
