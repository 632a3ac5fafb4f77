"""Built-in math-correctness rewards (registered as a default plugin).

``exact_answer``
    the answer block equals the gold string (inline; the TRL GSM8K "correctness").
``math_answer``
    the final answer equals the gold answer as a number or as mathematics. Plain
    numbers (``1,234``, ``$5``, ``12 apples``, ``50%``, ``3/4``, ``\\frac{3}{4}``) are
    compared exactly in pure Python, which never imports sympy; anything else (LaTeX,
    expressions, sets, intervals) goes to math-verify + sympy, installed with
    ``pip install 'rewardkit[math]'`` and imported only when first needed. Only an
    answer the output commits to is paid: several different final answers, negated,
    questioned or retracted mentions, hedges and bounds are wrong (see
    ``rewardkit.builtin._answers``, "commitment").

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
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

from pydantic import Field

from rewardkit.authoring import Params, Reward, reward
from rewardkit.builtin._answers import (
    STATEMENTS,
    Found,
    boxed,
    extract,
    reference_text,
    strip_calculator_notes,
)
from rewardkit.builtin._commitment import (
    SUPERSEDED,
    competing_answers,
    competing_statements,
    context_refusal,
    hedged,
    read_answer,
)
from rewardkit.builtin._math_fast import fast_verdict
from rewardkit.builtin._plain_numbers import PlainNumber, normalise, numbers_match, read_number
from rewardkit.builtin._tag_blocks import after_reasoning, tag_block, tag_blocks
from rewardkit.builtin.choice import GOLD_LETTER, choice_score, sample_options
from rewardkit.hookspecs import hookimpl
from rewardkit.types import Sample, Score, Status, completion_text


class ExactParams(Params):
    """Parameters of exact_answer."""

    answer_tag: str = Field("answer", description="name of the answer tag")
    score: float = Field(1.0, description="value when the answer equals the gold string")
    wrong: float = Field(0.0, description="value otherwise (also when there is no answer)")
    case_sensitive: bool = Field(True, description="compare letter case too")
    reasoning_tag: str | None = Field(
        None,
        description="name of the reasoning tag of a reasoning model (e.g. 'think'): read the "
        "answer block only after the last closing </tag>, and pay `wrong` when the "
        "reasoning never closes; None reads the whole output",
    )


@reward(params=ExactParams)
def exact_answer(sample: Sample, params: ExactParams) -> Score:
    """The content of the last answer block, stripped, equals the gold answer string.

    The reference is read as text (a GSM8K solution is reduced to what follows its
    ``####``). No normalisation at all: ``1,000`` is not ``1000``; use ``math_answer``
    for that. Answer blocks that differ from each other are a hedge: ``wrong``. Status
    error when the sample has no reference.
    Example: ``<answer>\\n72\\n</answer>`` with reference ``72`` -> ``score``.
    """
    gold = reference_text(sample.reference)
    if gold is None:
        return Score.error("sample has no reference answer")
    text = sample.text
    if params.reasoning_tag:
        after = after_reasoning(text, params.reasoning_tag)
        if after is None:
            return Score.ok(params.wrong, "the reasoning never closes")
        text = after
    found = tag_block(text, params.answer_tag)
    if found is None:
        return Score.ok(params.wrong, "no answer block")
    answer = found.strip()
    fold = (lambda t: t) if params.case_sensitive else str.casefold
    answer, gold = fold(answer), fold(gold)
    if len({fold(block.strip()) for block in tag_blocks(text, params.answer_tag)}) > 1:
        return Score.ok(params.wrong, "several different answer blocks", extracted=answer[:200])
    return Score.ok(params.score if answer == gold else params.wrong, extracted=answer[:200])


Strategy = Literal[
    "answer_tag", "boxed", "hashes", "closing", "bare", "math_span", "last_number"
]
_ALL_STRATEGIES: tuple[Strategy, ...] = (
    "answer_tag", "boxed", "hashes", "closing", "bare", "math_span", "last_number"
)


class MathParams(Params):
    """Parameters of math_answer."""

    extract: list[Strategy] = Field(
        default_factory=lambda: list(_ALL_STRATEGIES),
        min_length=1,
        description="where to look for a plain-number answer, in order; the first strategy "
        "that finds something decides: answer_tag (last <answer> block), boxed (last "
        "\\boxed{}), hashes (the last '####' line), closing (a closing line 'A: 18' / "
        "'Final Answer: ...' or 'The answer is 18'), bare (the whole output is only an "
        "answer, e.g. '\\frac{3}{4}' or 'x = 3'), math_span (last $...$ or \\(...\\)), "
        "last_number (last number in the text)",
    )
    answer_tag: str = Field("answer", description="name of the answer tag")
    reasoning_tag: str | None = Field(
        None,
        description="name of the reasoning tag of a reasoning model (e.g. 'think'): grade "
        "only what follows the last closing </tag>, and pay `wrong` when the reasoning "
        "never closes; None grades the whole output, less a <think> block (what follows "
        "the last </think>; an output that opens <think> and never closes it pays `wrong`)",
    )
    occurrence: Literal["last", "first"] = Field(
        "last",
        description="which occurrence a strategy takes: last (chat models answer at the end) "
        "or first (few-shot base models go on to invent new questions after answering)",
    )
    abs_tol: float = Field(1e-6, ge=0, description="numbers match within this absolute error")
    rel_tol: float | None = Field(
        None, ge=0, description="... or within this error relative to the gold value; "
        "unset: 1e-9 for decimals and none for two whole numbers (exact within abs_tol: "
        "1000000000001 is not 10^12); a value you set applies to every pair, whole "
        "numbers included (a 1% tolerance pays 301 for 300)"
    )
    decimal_comma: bool = Field(
        False,
        description="numbers use a decimal comma ('1,22' is 1.22; '.' and spaces separate "
        "thousands), as in most of Europe",
    )
    symbolic: bool = Field(
        True,
        description="compare answers that are not plain numbers with math-verify + sympy; "
        "false: plain numbers only (a non-numeric answer is wrong)",
    )
    choice: bool = Field(
        True,
        description="a gold that is one option letter A-J (`B`, `(B)`) is graded as "
        "multiple_choice grades it: `B) 2x(x-7)` and, when the sample lists the options, "
        "the option's value are right, several options named is wrong",
    )
    max_symbolic_chars: int = Field(
        1000, gt=0, description="longer extracted answers are not parsed symbolically (they "
        "are wrong)",
    )
    score: float = Field(1.0, description="value of a correct answer")
    wrong: float = Field(0.0, description="value of a wrong or missing answer")


def _quick_verdict(sample: Sample, params: MathParams) -> Score | None:
    """The verdicts reached without math-verify: plain numbers, word answers, missing or
    prose references, unclosed reasoning, nothing to grade. None: math-verify decides.
    Bounded, linear work on any input; never imports sympy. (It runs once per sample of
    every step: the common case, a plain-number gold, is tested first.)"""
    reference = sample.reference
    if type(reference) is str:  # read each distinct reference once
        gold = _reference_kind(reference, params.decimal_comma, params.symbolic)
    else:
        gold = _plain_reference(reference, params)
    if type(gold) is Score:
        return gold
    if type(gold) is _Symbolic:
        letter = GOLD_LETTER.fullmatch(gold.text) if params.choice else None
        if letter:  # an option letter: graded as multiple_choice grades it
            text = _graded_text(sample.text, params)
            if text is None:
                return Score.ok(params.wrong, "the reasoning never closes")
            return choice_score(text, letter.group(1), sample_options(sample),
                                params.answer_tag, params.score, params.wrong)
        return None  # math-verify must first say whether the reference is an answer at all
    text = _graded_text(sample.text, params)
    if text is None:
        return Score.ok(params.wrong, "the reasoning never closes")
    prompt = _prompt_text(sample)
    found, refusal = _find(text, params, prompt)
    if refusal and found:
        return Score.ok(params.wrong, refusal, via=found.how, extracted=found.answer[:200])
    if type(gold) is PlainNumber:
        if found is None:
            return Score.ok(params.wrong, "no answer found")
        return _plain_verdict(gold, found, params, prompt,
                              reference if type(reference) is str else "")
    assert type(gold) is _WordAnswer
    words = found.answer if found else _last_words(text)
    if words is None:
        return Score.ok(params.wrong, "no answer found")
    return _verdict(_words(words) == gold.words, params, found.how if found else "words", words)


def _find(text: str, params: MathParams, prompt: str = "") -> tuple[Found | None, str]:
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


#: a prompt that asks for a percentage: there "18%" may stand for the gold 18
_PERCENT_ASKED = re.compile(r"percent|per\s+cent|%|pct", re.IGNORECASE)


def _plain_verdict(gold: PlainNumber, found: Found, params: MathParams,
                   prompt: str = "", gold_text: str = "") -> Score | None:
    """A plain-number gold against the answer the output commits to: one value, or a
    reason it commits to none (then wrong), or None when the answer is mathematics for
    math-verify. Another final statement with another value is a hedge: wrong. A percent
    answer matches the gold's number (``25%`` for 25) only where the prompt asks for a
    percentage or is not known; elsewhere the percent is part of its value. A gold
    written as a decimal (``gold_text``) is that value rounded: an exact answer, or one
    with more decimal places, that rounds to it is right (``\\frac{1587}{52}`` for 30.52)."""
    pred = read_answer(found.answer, params.decimal_comma, prose=params.symbolic)
    if isinstance(pred, str):
        return Score.ok(params.wrong, pred, via=found.how, extracted=found.answer[:200])
    if pred is None:
        if not params.symbolic:
            return Score.ok(params.wrong, "answer is not a plain number", via=found.how,
                            extracted=found.answer[:200])
        return None
    others = [] if found.how not in STATEMENTS else competing_answers(
        found, params.extract, params.answer_tag, params.decimal_comma,
        first=params.occurrence == "first")
    for other in others:
        if not numbers_match(pred, other, params.abs_tol, params.rel_tol):
            return Score.ok(params.wrong, "several different final answers", via=found.how,
                            extracted=found.answer[:200])
    if pred.percent and not gold.percent and prompt and not _PERCENT_ASKED.search(prompt):
        pred = PlainNumber(Fraction(pred.value) / 100)  # "18%" for a count is 0.18
    same = numbers_match(gold, pred, params.abs_tol, params.rel_tol)
    if not same and gold_text and params.rel_tol is None:
        same = _rounds_to(gold_text, gold, pred, found.answer)
    return _ok_score(float(params.score if same else params.wrong), found.how, found.answer)


#: a gold written as a decimal of two places or more, a rounded value (``30.52``,
#: ``$12.55``, ``6.67\%``; ``0.3`` and ``2.5`` are as often exact)
_DECIMAL_GOLD = re.compile(r"\s*\$?\s*(?:\\\$)?\$?[-+]?\d{1,15}\.(\d{2,6})\s*(?:\\?%)?\s*\$?\s*")
_DECIMAL_PLACES = re.compile(r"\d\.(\d+)")


def _rounds_to(gold_text: str, gold: PlainNumber, pred: PlainNumber, answer: str) -> bool:
    """Whether ``pred`` rounds to a gold written with k decimal places: ``pred`` is exact
    (``\\frac{1587}{52}``) or has more places than k, and lies within half a unit of the
    gold's last place. A less precise answer (``30.5`` for 30.52) is not rounded up to it."""
    m = _DECIMAL_GOLD.fullmatch(gold_text)
    if m is None:
        return False
    places = len(m.group(1))
    written = _DECIMAL_PLACES.findall(answer)
    if written and max(len(w) for w in written) <= places:
        return False
    half: Fraction = Fraction(1, 2 * 10**places)
    golds = [(Fraction(gold.value), half)]
    if gold.percent:  # 6.67% is 0.0667 too, to a hundredth of the place
        golds.append((Fraction(gold.value) / 100, half / 100))
    return any(abs(Fraction(p) - g) <= tol for g, tol in golds for p in pred.candidates())


def _prompt_text(sample: Sample) -> str:
    """The prompt as text (chat messages joined), for spotting answers copied from it."""
    prompt = sample.prompt
    if isinstance(prompt, list | tuple):  # every turn, not only the assistant's
        return "\n".join(completion_text(message) for message in prompt)
    return completion_text(prompt)


@reward(params=MathParams, mode="process", timeout=10.0, quick=_quick_verdict)
def math_answer(sample: Sample, params: MathParams) -> Score:
    """The final answer equals the gold answer, numerically or symbolically.

    Plain numbers take a fast path: the answer found by ``extract`` is read without sympy
    (thousand separators, currency, percent, unit words, ``a/b``, ``\\frac{a}{b}``,
    ``a \\times 10^{k}``) and compared within ``abs_tol`` / ``rel_tol``; ``50%`` matches
    both ``50`` and ``0.5``. That path runs in the trainer's process (no round trip to a
    worker). Everything else (LaTeX, expressions, several ``\\boxed``, sets, tuples,
    matrices, equations) is handed to math-verify in a worker, whose own extraction reads
    the answer block, or the whole output when there is none. A gold answer in words
    (``\\text{odd}``, ``Even``) is compared as words. Status error when the reference is
    missing or is neither a number, mathematics nor a word answer: a broken dataset row
    is not a wrong answer. Only an answer the output commits to is paid: a hedge
    (``$\\boxed{17}$ or $\\boxed{18}$``), a negation (``not 18``), a retraction (``18.
    Wait, that is wrong``), a bound (``18 or more``) is ``wrong``, with the rule as the
    reason. Example: ``... #### The final answer is 1,200`` with reference ``1200`` ->
    ``score``.
    """
    quick = _quick_verdict(sample, params)
    if quick is not None:
        return quick
    fast = fast_verdict(sample, params)  # exact answers, each distinct one graded once
    if fast is not None:
        return fast
    gold = _plain_reference(sample.reference, params)
    if isinstance(gold, PlainNumber):  # refuse what sympy must not see before importing it
        early, _ = _find(_graded_text(sample.text, params) or "", params)
        refusal = _too_costly(early.answer, params.max_symbolic_chars) if early else ""
        if refusal and early:
            return Score.ok(params.wrong, refusal, via=early.how)
    mv = _math_verify()
    if mv is None:
        return Score.error("math-verify is not installed: pip install 'rewardkit[math]'")
    if isinstance(gold, PlainNumber):  # hand math-verify the value, not "72 clips"
        value = gold.value
        gold_parsed = _parse(mv, str(value.numerator) if value.denominator == 1 else
                             f"\\frac{{{value.numerator}}}{{{value.denominator}}}", False)
    else:
        parsed = _symbolic_reference(mv, sample.reference)
        if isinstance(parsed, Score):
            return parsed
        gold_parsed = parsed
    text = _graded_text(sample.text, params)
    if text is None:
        return Score.ok(params.wrong, "the reasoning never closes")
    found, refusal = _find(text, params, _prompt_text(sample))
    if refusal and found:
        return Score.ok(params.wrong, refusal, via=found.how, extracted=found.answer[:200])
    one_value = _one_value(reference_text(sample.reference) or "")
    if found and hedged(found.answer) and one_value:
        return Score.ok(params.wrong, "the answer hedges between values", via=found.how,
                        extracted=found.answer[:200])
    if found and not isinstance(gold, PlainNumber) and _several_answers(mv, found, params,
                                                                         one_value):
        return Score.ok(params.wrong, "several different final answers", via=found.how,
                        extracted=found.answer[:200])
    return _symbolic(gold_parsed, text, found, params, only_answer=isinstance(gold, PlainNumber))


#: the most other final statements math-verify compares with the answer
_MAX_COMPARED = 8


def _several_answers(mv: Any, found: Found, params: MathParams, one_value: bool) -> bool:
    """Whether the output stands by another final statement that math-verify finds
    different from ``found``. For a gold that is a set or a list, boxes may together form
    the answer (``x = \\boxed{2}`` and ``x = \\boxed{5}``), so only answer blocks count."""
    if found.how not in STATEMENTS or _too_costly(found.answer, params.max_symbolic_chars):
        return False  # (a costly answer is refused by _symbolic, unparsed)
    others = [answer for how, answer in competing_statements(
        found, params.extract, params.answer_tag, first=params.occurrence == "first")
        if (one_value or how == "answer_tag") and "".join(answer.split()) != "".join(
            found.answer.split())]
    if not others:
        return False
    mine = _parse(mv, found.answer, fallback=True)
    for other in others[:_MAX_COMPARED]:
        if _too_costly(other, params.max_symbolic_chars):
            return True
        theirs = _parse(mv, other, fallback=True)
        if mine and theirs and not mv.verify(mine, theirs, timeout_seconds=None):
            return True
    return False


_SEVERAL_VALUES = re.compile(r"[,;=]|\\[{}]|\\(?:cup|cap|lor|vee|pm|mp)(?![A-Za-z])")


def _one_value(gold: str) -> bool:
    """A gold answer that is one value, not a set, list, equation or disjunction (there,
    ``x = 2 \\text{ or } x = 5`` is the answer, not a hedge)."""
    return not hedged(gold) and _SEVERAL_VALUES.search(gold) is None


def _graded_text(text: str, params: MathParams) -> str | None:
    """The part of the output that is graded: what follows the reasoning (None when it
    never closes). With no ``reasoning_tag``, a ``<think>`` block is reasoning all the
    same: an answer only inside it is not one."""
    if params.reasoning_tag:
        return after_reasoning(text, params.reasoning_tag)
    if "think>" not in text:  # one plain search in the common case
        return text
    if "</think>" in text:
        return after_reasoning(text, "think")
    return None if "<think>" in text else text


def _verdict(same: bool, params: MathParams, how: str, answer: str) -> Score:
    return _ok_score(float(params.score if same else params.wrong), how, answer)


@lru_cache(maxsize=16384)
def _ok_score(value: float, how: str, answer: str) -> Score:
    """One Score per distinct verdict (Scores are immutable): a GRPO group mostly repeats
    a few answers, and this runs once per sample on the fast path."""
    return Score(value, Status.OK, "", {"via": how, "extracted": answer[:200]})


class _WordAnswer:
    """A gold answer that is words, not mathematics (``\\text{odd}``, ``Even``)."""

    def __init__(self, words: str) -> None:
        self.words = words


class _Symbolic:
    """A gold answer for math-verify."""

    def __init__(self, text: str) -> None:
        self.text = text


_TEXT_ONLY = re.compile(r"\s*\\(?:text|textbf|mathrm|textnormal|mbox)\s*\{([^{}$\\]*)\}\s*")
_ONE_WORD = re.compile(r"\s*([A-Za-z]{2,})\s*")
#: two words in a row, each with a lower-case letter (``AE + AP = PD`` names quantities)
_PROSE = re.compile(r"(?<![\\A-Za-z])(?=[A-Z]*[a-z])[A-Za-z]{2,}\b[^\\$]{0,3}?\s+"
                    r"(?=[A-Z]*[a-z])[A-Za-z]{2,}")
_TEXT_BLOCK = re.compile(r"\\(?:text|textbf|mathrm|textnormal|mbox|operatorname)\s*\{[^{}]*\}")
_HAS_MATH = re.compile(r"[\d$]|\\[a-zA-Z(\[]")
_LAST_SPAN = re.compile(r"\$([^$\n]{1,200})\$\s*\.?\s*$")


def _words(text: str) -> str:
    """Text reduced for comparing word answers: delimiters, ``\\text{}``, case and
    punctuation dropped."""
    s = text.strip().strip("$").strip()
    inner = boxed(s) if s.startswith("\\boxed") else None
    s = inner if inner is not None else s
    s = _TEXT_BLOCK.sub(lambda m: " " + m.group(0).split("{", 1)[1][:-1] + " ", s)
    return " ".join(re.sub(r"[^\w\s]", " ", s).casefold().split())


def _last_words(text: str) -> str | None:
    """For a word answer that no strategy found: a closing ``$...$`` span (``$Even$``), or
    the whole output when it is short."""
    m = _LAST_SPAN.search(text)
    if m:
        return m.group(1)
    stripped = text.strip()
    return stripped if 0 < len(stripped) <= 100 else None


def _plain_reference(
    reference: Any, params: MathParams
) -> PlainNumber | _WordAnswer | _Symbolic | Score:
    """The gold answer as a plain number or a word answer, read without math-verify; a
    ``_Symbolic`` when math-verify must read it; a Score with status error when it is
    missing or prose."""
    if type(reference) is str:  # the common case: read each distinct reference once
        return _reference_kind(reference, params.decimal_comma, params.symbolic)
    text = reference_text(reference)
    if text is None:
        return Score.error("sample has no reference answer")
    return _reference_kind(text, params.decimal_comma, params.symbolic)


@lru_cache(maxsize=65536)
def _reference_kind(
    reference: str, decimal_comma: bool, symbolic: bool
) -> PlainNumber | _WordAnswer | _Symbolic | Score:
    """What a gold answer is, read once per distinct reference (a GRPO group shares one)."""
    text = reference_text(reference)
    if text is None:
        return Score.error("sample has no reference answer")
    gold_text = text
    number = read_number(gold_text, decimal_comma)
    if number is not None:
        return number
    inner = gold_text.strip().strip("$").strip()
    words = _TEXT_ONLY.fullmatch(inner) or _ONE_WORD.fullmatch(inner)
    if words and not re.search(r"\d", words.group(1)):
        return _WordAnswer(_words(words.group(1)))
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
    return _Symbolic(gold_text)


def _symbolic_reference(mv: Any, reference: Any) -> list[Any] | Score:
    """math-verify's parse of a gold answer that is not a plain number; status error when
    it cannot be parsed or is too costly to."""
    gold_text = reference_text(reference) or ""
    refusal = _too_costly(gold_text, 10_000, max_powers=None)
    if refusal:
        return Score.error(f"reference cannot be graded: {refusal}")
    if _PROSE.search(_TEXT_BLOCK.sub(" ", gold_text)):  # a worked solution: its own extraction
        parsed = _parse_output(mv, gold_text)
    else:
        # with its text as well as its value, as math-verify reads a gold ("12:00")
        parsed = _parse(mv, gold_text, fallback=_balanced(gold_text))
    if not parsed:
        return Score.error(f"reference {gold_text[:80]!r} cannot be parsed")
    return parsed


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


# -- the symbolic path -------------------------------------------------------------------
def _symbolic(gold: list[Any], text: str, found: Found | None, params: MathParams,
              only_answer: bool = False) -> Score:
    """Compare with math-verify, letting its own extraction find the answer: in the answer
    block when there is one, else in the whole output (the last ``_MAX_REGION``
    characters). ``only_answer`` (a plain-number gold): only in the answer found, since
    math-verify reads a number anywhere in a text, stated as the answer or not."""
    mv = _math_verify()
    if mv is None:
        return Score.error("math-verify is not installed: pip install 'rewardkit[math]'")
    how = found.how if found else "math-verify"
    one_formula = ("answer_tag", "hashes", "bare") if not only_answer else (
        "answer_tag", "hashes", "bare", "boxed", "closing", "math_span", "last_number")
    formula = _cas_form(found.answer) if found is not None else ""
    if found is not None and found.how == "closing" and _bare_formula(formula):
        formula = f"${formula}$"  # "The answer is 2x^2+x-1": the formula, not its 2
    if found is not None and found.how == "bare":  # the whole output is the answer
        region = _delimited(_cas_form(found.text[found.start : found.end].strip()))
    elif found is not None and found.how in one_formula:
        region = _delimited(formula)  # the answer block: one formula
    elif found is not None and formula != found.answer:
        # rewritten where it stands: math-verify still reads the other boxes beside it
        # (``\boxed{0}`` or ``\boxed{(a, 1) \text{ for all } a}`` is not ``(a, 1)``)
        span = found.text[found.start : found.end]
        span = span.replace(found.answer, formula, 1) if found.answer in span else formula
        region = strip_calculator_notes(
            found.text[: found.start] + span + found.text[found.end :])[-_MAX_REGION:]
    else:
        region = strip_calculator_notes(text)[-_MAX_REGION:]
    refusal = _too_costly(found.answer, params.max_symbolic_chars) if found else ""
    refusal = refusal or _too_costly(region, _MAX_REGION, max_powers=None)
    if refusal:
        return Score.ok(params.wrong, refusal, via=how)
    pred = _parse_output(mv, region)
    if not pred and found is not None and found.answer != region:
        pred = _parse(mv, found.answer, fallback=True)
    if not pred:
        return Score.ok(params.wrong, "no answer found" if found is None else
                        "answer cannot be parsed", via=how)
    same = bool(mv.verify(gold, pred, timeout_seconds=None))
    if same and _exactly_different(gold, pred, region):
        same = False
    return Score.ok(params.score if same else params.wrong, via=how,
                    extracted=str(pred[-1])[:200])


#: the longest tail of an output that math-verify reads
_MAX_REGION = 8000


def _parse_output(mv: Any, text: str) -> list[Any]:
    """math-verify's parse of a model output with its default extraction (LaTeX anywhere,
    boxed first, then expressions and numbers), signals off."""
    return list(mv.parse(text, parsing_timeout=None) or [])


def _parse(mv: Any, text: str, fallback: bool) -> list[Any]:
    """math-verify's parse of a bare answer, signals off (the engine's worker timeout is
    the guard): as written when it carries its own math delimiters, else as LaTeX math,
    then with decoration removed, then as free text."""
    mode = "first_match" if fallback else "no_fallback"
    text = _cas_form(text)
    stripped = text.strip()
    delimited = stripped.startswith(("$", "\\(", "\\[")) or "\\boxed" in stripped
    candidates = [stripped] if delimited else [f"${stripped}$"]
    candidates += [f"${normalise(text)}$", text]
    for candidate in candidates:
        got = mv.parse(candidate, fallback_mode=mode, parsing_timeout=None)
        if got:
            return list(got)
    return []


#: ``√2``, ``√{x+1}``, ``√(x+1)``: the root sign, which math-verify reads as nothing
_ROOT_SIGN = re.compile(r"√\s*(?:\{([^{}]*)\}|\(([^()]*)\)|(\d+(?:\.\d+)?|[A-Za-z]))")
#: a MATLAB-style matrix ``[1, 2; 3, 4]``: rows split by ``;``, entries by ``,``
_MATLAB_MATRIX = re.compile(r"\s*\$?\s*\[([^\[\]$]*;[^\[\]$]*)\]\s*\$?\s*\.?\s*")
#: a closing phrase after a formula (``(a, 1) for any positive integer a``) that names no
#: value of its own: no digit, no ``=``, no comma or ``;`` (``3 for odd n, 4 for even n``
#: keeps it all)
_TRAILING_PHRASE = re.compile(
    r"\s*(?:\\text\s*\{\s*)?(?<![\\A-Za-z])(?:for|where|when|with)\s[^=,;\d\\]*"
    r"(?:\}[^=,;\d\\{}]*)?$")
_ENGLISH_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox|textnormal)\s*\{[^{}]*\}")
#: a unit in words after a number (``40 \text{ chocolate candies}``): in a list of
#: quantities math-verify drops the units and reads the first value alone
_UNIT_AFTER_NUMBER = re.compile(
    r"(\d)\s*(?:\\[ ,;!]\s*)*\\(?:text|mbox|mathrm)\s*\{[^{}\d\\]*\}")


#: the longest answer _cas_form rewrites
_MAX_REWRITTEN = 1000


def _cas_form(answer: str) -> str:
    """An answer rewritten into the LaTeX math-verify reads, where it writes a value in a
    form math-verify misreads: the root sign ``√2`` (read as nothing, so ``4√2`` was 4),
    ``∞``, ``∪`` and ``∩`` (``(-∞, -3) ∪ (3, +∞)`` was not an interval),
    a MATLAB-style matrix (read as one flat tuple), a formula followed by a phrase that
    qualifies it (read as its last number), a list of quantities with units in words
    (read as its first value: the units are dropped). Anything else, and anything longer than an
    answer (the patterns would backtrack), is returned as it is."""
    if len(answer) > _MAX_REWRITTEN:
        return answer
    if "√" in answer:
        answer = _ROOT_SIGN.sub(
            lambda m: "\\sqrt{" + next(g for g in m.groups() if g is not None) + "}", answer)
    if "∞" in answer or "∪" in answer or "∩" in answer:  # read as nothing, like √
        answer = answer.replace("∞", "\\infty ").replace("∪", " \\cup ").replace("∩", " \\cap ")
    matrix = _MATLAB_MATRIX.fullmatch(answer)
    if matrix:
        rows = [[cell.strip() for cell in row.split(",")] for row in matrix.group(1).split(";")]
        if len({len(row) for row in rows}) == 1 and all(all(row) for row in rows):
            return ("\\begin{pmatrix}" + " \\\\ ".join(" & ".join(row) for row in rows)
                    + "\\end{pmatrix}")
    if "," in answer and "\\" in answer:  # a list of quantities: math-verify reads one
        units = _UNIT_AFTER_NUMBER.sub(r"\1", answer)
        if units != answer and not _LATEX_TEXT.search(units):
            answer = units
    phrase = _TRAILING_PHRASE.search(answer)
    if phrase and phrase.start() > 0:
        head = answer[: phrase.start()].strip()
        if head and not _ENGLISH_WORD.search(_LATEX_TEXT.sub(" ", head)):
            return head
    return answer


def _bare_formula(answer: str) -> bool:
    """An answer that is a formula written without math delimiters and without words
    (``2x^2+x-1``, ``y = -5x - 3``), which math-verify would read only a number of."""
    return bool(answer) and not any(d in answer for d in ("$", "\\(", "\\[", "\\boxed")) \
        and not _ENGLISH_WORD.search(_LATEX_TEXT.sub(" ", answer))


def _exactly_different(gold: list[Any], pred: list[Any], read: str) -> bool:
    """Whether two values math-verify calls equal are, written exactly, different
    numbers: math-verify compares numbers after rounding, which is right for decimals
    (``0.333``) and wrong for exact values that differ far past the sixth digit
    (``\\frac{2^{1009}}{2^{1009}+2018}`` is not ``\\frac{2^{1009}}{2^{1009}+1009}``,
    ``1+10^{-30}`` is not 1). Only exact numbers (no decimal, no variable) on both sides
    are checked: rationals exactly, other constants by evaluating their difference to
    as many digits as it takes to tell it from zero; a percent (in ``read``, the text
    math-verify read, or the gold) is left to math-verify, which reads 28% as 28 too."""
    import sympy

    if any(isinstance(v, str) and ("%" in v or "percent" in v) for v in (*gold, *pred, read)):
        return False  # math-verify reads 28% as 0.28 and as 28, on purpose
    g = next((v for v in gold if isinstance(v, sympy.Expr)), None)
    p = next((v for v in pred if isinstance(v, sympy.Expr)), None)
    if g is None or p is None or not (g.is_number and p.is_number):
        return False
    if g.atoms(sympy.Float) or p.atoms(sympy.Float):
        return False  # a decimal: the documented tolerance decides
    try:
        g, p = g.doit(), p.doit()  # math-verify leaves 2^{1009}+1009 unevaluated
        if isinstance(g, sympy.Rational) and isinstance(p, sympy.Rational):
            return bool(g != p)
        # a nonzero difference evaluates to full precision however small it is; a zero
        # one to no precision at all (``-0.e-423``)
        difference = (g - p).evalf(15, maxn=400)
        return bool(difference.is_Float and difference != 0 and difference._prec > 1)
    except Exception:  # sympy cannot evaluate it: math-verify's verdict stands
        return False


def _delimited(region: str) -> str:
    """An answer block without math delimiters (``\\{3, 1, 2\\}``) read as one formula."""
    if "$" in region or "\\(" in region or "\\[" in region or "\\boxed" in region:
        return region
    return f"${region.strip()}$"


_MAX_BRACE_DEPTH = 40
_MAX_POWERS = 8


def _too_costly(text: str, max_chars: int, max_powers: int | None = _MAX_POWERS) -> str:
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
    powers = text.count("^") + text.count("**")
    if (max_powers is not None and powers > max_powers) or _power_tower(text):
        return "answer has a power tower"
    if _big_factorial(text):
        return "answer has a large factorial"
    return ""


_POWER = re.compile(r"(?:\^|\*\*)\s*(\{|\()?")
_LEADING_DIGITS = re.compile(r"\s*\d*")
#: a factorial sympy must not evaluate: of 10000 or more (``2019!`` is a few thousand
#: digits, computed in microseconds), of a factorial (``(2019!)!``, ``5!!``) or of a power
_FACTORIAL = re.compile(r"(?<!\d)\d{5,}\s*\}?\s*!|!\s*[)}]*\s*!|\^[^!^]{0,40}?[)}]\s*!")


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
