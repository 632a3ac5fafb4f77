"""Built-in math-correctness rewards (registered as a default plugin).

``exact_answer``
    the answer block equals the gold string (inline; the TRL GSM8K "correctness").
``math_answer``
    the final answer equals the gold answer as a number or as mathematics. Plain
    numbers (``1,234``, ``$5``, ``12 apples``, ``50%``, ``3/4``, ``\\frac{3}{4}``) are
    compared exactly in pure Python, which never imports sympy; anything else (LaTeX,
    expressions, sets, intervals) goes to math-verify + sympy, installed with
    ``pip install 'rewardkit[math]'`` and imported only when first needed.

Why ``math_answer`` is declared ``mode="process"``: sympy can hang or eat memory on
inputs a policy will produce (``10^{10^{10^{10}}}``, ``1000000!``, deep ``\\frac``
nests), and only a worker process can be stopped from outside without signals. The
pool costs about 20 µs per sample in IPC, far below one math-verify call (~0.5 ms), so
the fast path stays fast. A purely numeric setup (``symbolic: false``) does bounded work
on any input and may run inline: ``mode: inline`` on the config component.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from rewardkit.authoring import Params, Reward, reward
from rewardkit.builtin._answers import (
    extract,
    normalise,
    numbers_match,
    read_number,
    reference_text,
    tag_block,
)
from rewardkit.hookspecs import hookimpl
from rewardkit.types import Sample, Score


class ExactParams(Params):
    """Parameters of exact_answer."""

    answer_tag: str = Field("answer", description="name of the answer tag")
    score: float = Field(1.0, description="value when the answer equals the gold string")
    wrong: float = Field(0.0, description="value otherwise (also when there is no answer)")
    case_sensitive: bool = Field(True, description="compare letter case too")


@reward(params=ExactParams)
def exact_answer(sample: Sample, params: ExactParams) -> Score:
    """The content of the last answer block, stripped, equals the gold answer string.

    The reference is read as text (a GSM8K solution is reduced to what follows its
    ``####``). No normalisation at all: ``1,000`` is not ``1000``; use ``math_answer``
    for that. Status error when the sample has no reference.
    Example: ``<answer>\\n72\\n</answer>`` with reference ``72`` -> ``score``.
    """
    gold = reference_text(sample.reference)
    if gold is None:
        return Score.error("sample has no reference answer")
    found = tag_block(sample.text, params.answer_tag)
    if found is None:
        return Score.ok(params.wrong, "no answer block")
    answer = found.strip()
    if not params.case_sensitive:
        answer, gold = answer.casefold(), gold.casefold()
    return Score.ok(params.score if answer == gold else params.wrong, extracted=answer[:200])


Strategy = Literal["answer_tag", "boxed", "hashes", "bare", "math_span", "last_number"]
_ALL_STRATEGIES: tuple[Strategy, ...] = (
    "answer_tag", "boxed", "hashes", "bare", "math_span", "last_number"
)


class MathParams(Params):
    """Parameters of math_answer."""

    extract: list[Strategy] = Field(
        default_factory=lambda: list(_ALL_STRATEGIES),
        min_length=1,
        description="where to look for the final answer, in order; the first strategy that "
        "finds something decides: answer_tag (last <answer> block), boxed (last \\boxed{}), "
        "hashes (the last '####' line), bare (the whole output is only an answer, e.g. "
        "'\\frac{3}{4}' or 'x = 3'), math_span (last $...$ or \\(...\\)), last_number "
        "(last number in the text)",
    )
    answer_tag: str = Field("answer", description="name of the answer tag")
    occurrence: Literal["last", "first"] = Field(
        "last",
        description="which occurrence a strategy takes: last (chat models answer at the end) "
        "or first (few-shot base models go on to invent new questions after answering)",
    )
    abs_tol: float = Field(1e-6, ge=0, description="numbers match within this absolute error")
    rel_tol: float = Field(
        1e-9, ge=0, description="... or within this error relative to the gold value"
    )
    symbolic: bool = Field(
        True,
        description="compare answers that are not plain numbers with math-verify + sympy; "
        "false: plain numbers only (a non-numeric answer is wrong)",
    )
    max_symbolic_chars: int = Field(
        1000, gt=0, description="longer answers are not parsed symbolically (they are wrong)"
    )
    score: float = Field(1.0, description="value of a correct answer")
    wrong: float = Field(0.0, description="value of a wrong or missing answer")


@reward(params=MathParams, mode="process", timeout=10.0)
def math_answer(sample: Sample, params: MathParams) -> Score:
    """The final answer equals the gold answer, numerically or symbolically.

    Extraction follows ``extract``; numbers are read without sympy (thousand separators,
    currency, percent, unit words, ``a/b``, ``\\frac{a}{b}``, ``a \\times 10^{k}``) and
    compared within ``abs_tol`` / ``rel_tol``; ``50%`` matches both ``50`` and ``0.5``.
    Other answers go to math-verify (LaTeX, expressions, sets, intervals). Status error
    when the reference is missing or cannot be parsed: a broken dataset row is not a
    wrong answer. Example: ``... #### The final answer is 1,200`` with reference
    ``1200`` -> ``score``.
    """
    gold_text = reference_text(sample.reference)
    if gold_text is None:
        return Score.error("sample has no reference answer")
    gold_number = read_number(gold_text)
    gold_parsed: list[Any] = []
    if gold_number is None:
        if not params.symbolic:
            return Score.error(f"reference {gold_text[:80]!r} is not a plain number")
        mv = _math_verify()
        if mv is None:
            return Score.error("math-verify is not installed: pip install 'rewardkit[math]'")
        refusal = _too_costly(gold_text, 10_000)
        if refusal:
            return Score.error(f"reference cannot be graded: {refusal}")
        gold_parsed = _parse(mv, gold_text, fallback=False)
        if not gold_parsed:
            return Score.error(f"reference {gold_text[:80]!r} cannot be parsed")
    found = extract(sample.text, tuple(params.extract), params.answer_tag,
                    first=params.occurrence == "first")
    if found is None:
        return Score.ok(params.wrong, "no answer found")
    how, answer = found
    pred_number = read_number(answer)
    if gold_number is not None and pred_number is not None:
        same = numbers_match(gold_number, pred_number, params.abs_tol, params.rel_tol)
        return _verdict(same, params, how, answer)
    if not params.symbolic:
        return Score.ok(params.wrong, "answer is not a plain number", via=how,
                        extracted=answer[:200])
    if gold_number is not None:  # hand math-verify the value, not "72 clips"
        value = gold_number.value
        gold_text = str(value.numerator) if value.denominator == 1 else \
            f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    return _symbolic(gold_parsed or gold_text, answer, how, params)


def _verdict(same: bool, params: MathParams, how: str, answer: str) -> Score:
    return Score.ok(params.score if same else params.wrong, via=how, extracted=answer[:200])


# -- the symbolic path -------------------------------------------------------------------
def _symbolic(gold: list[Any] | str, answer: str, how: str, params: MathParams) -> Score:
    """Compare with math-verify; ``gold`` is already parsed, or a plain number as text."""
    mv = _math_verify()
    if mv is None:
        return Score.error("math-verify is not installed: pip install 'rewardkit[math]'")
    if isinstance(gold, str):
        gold = _parse(mv, gold, fallback=False)
        if not gold:  # pragma: no cover - plain numbers always parse
            return Score.error("reference cannot be parsed")
    refusal = _too_costly(answer, params.max_symbolic_chars)
    if refusal:
        return Score.ok(params.wrong, refusal, via=how)
    pred = _parse(mv, answer, fallback=True)
    if not pred:
        return Score.ok(params.wrong, "answer cannot be parsed", via=how, extracted=answer[:200])
    same = bool(mv.verify(gold, pred, timeout_seconds=None))
    return _verdict(same, params, how, answer)


def _parse(mv: Any, text: str, fallback: bool) -> list[Any]:
    """math-verify's parse, signals off (the engine's worker timeout is the guard): the
    text as LaTeX math first, then as free text."""
    mode = "first_match" if fallback else "no_fallback"
    cleaned = normalise(text)
    for candidate in (f"${cleaned}$", text):
        got = mv.parse(candidate, fallback_mode=mode, parsing_timeout=None)
        if got:
            return list(got)
    return []


_MAX_BRACE_DEPTH = 40
_MAX_POWERS = 8


def _too_costly(text: str, max_chars: int) -> str:
    """Why sympy should not see ``text`` (empty when it may). Cheap checks for the known
    ways to make sympy run for minutes: size, deep nesting, power towers, big factorials.
    The worker timeout remains the guard for everything else."""
    if len(text) > max_chars:
        return f"answer longer than {max_chars} characters"
    depth = deepest = 0
    for ch in text:
        if ch in "{([":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "})]":
            depth -= 1
    if deepest > _MAX_BRACE_DEPTH:
        return "answer nested too deeply"
    if text.count("^") + text.count("**") > _MAX_POWERS or _power_tower(text):
        return "answer has a power tower"
    if _big_factorial(text):
        return "answer has a large factorial"
    return ""


_POWER = re.compile(r"(?:\^|\*\*)\s*(\{|\()?")
_LEADING_DIGITS = re.compile(r"\s*\d*")
_FACTORIAL = re.compile(r"\d{4,}\s*\}?\s*!")


def _power_tower(text: str) -> bool:
    """A power whose exponent itself holds a power (``2^{2^{30}}``) or is huge."""
    for m in _POWER.finditer(text):
        rest = text[m.end() : m.end() + 200]
        if m.group(1):
            closing = "}" if m.group(1) == "{" else ")"
            exponent = rest.split(closing, 1)[0]
            if "^" in exponent or "**" in exponent:
                return True
        else:
            exponent = _LEADING_DIGITS.match(rest).group(0)  # type: ignore[union-attr]
        digits = "".join(ch for ch in exponent if ch.isdigit())
        if len(digits) > 5:
            return True
    return False


def _big_factorial(text: str) -> bool:
    return _FACTORIAL.search(text) is not None


_mv_module: Any = None


def _math_verify() -> Any:
    """math_verify, imported on first use (None when not installed); its once-per-process
    warning about disabled signal timeouts is silenced, since that is deliberate here."""
    global _mv_module
    if _mv_module is None:
        try:
            import math_verify
        except ImportError:
            return None
        for name in ("math_verify.parser", "math_verify.grader"):
            logging.getLogger(name).addFilter(_drop_timeout_warning)
        _mv_module = math_verify
    return _mv_module


def _drop_timeout_warning(record: logging.LogRecord) -> bool:
    message = record.getMessage()
    return not (message.startswith("Timeout is disabled") or message.startswith("Timeout during"))


@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(exact_answer)
    register(math_answer)
