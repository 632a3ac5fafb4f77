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
    ``rewardkit.builtin.math.commitment``).

Why ``math_answer`` is declared ``mode="process"``: sympy can hang or eat memory on
inputs a policy will produce (``10^{10^{10^{10}}}``, ``1000000!``, deep ``\\frac``
nests), and only a worker process can be stopped from outside without signals. Its
symbolic grading is bounded in any mode all the same: each sample's parses and
comparisons share one deadline, ``symbolic_timeout``
(:mod:`~rewardkit.builtin.math.deadline`), past which the answer is wrong (not shown
equal) rather than a timeout, and each verdict is remembered per (reference, output). The
pool costs about 20 µs per sample in IPC, far below one math-verify call (~0.5 ms), so
the fast path stays fast. A purely numeric setup (``symbolic: false``) does bounded work
on any input and may run inline: ``mode: inline`` on the config component.

This module holds the two rewards, math_answer's plain-number verdict and its symbolic
path; the rest of math_answer is in the other modules of this package
(:mod:`rewardkit.builtin.math` lists them and what each offers the others).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

from pydantic import Field

from rewardkit.authoring import Params, Reward, reward

# choice as a module, not its names: choice.py reads this package's leaf modules, so
# importing rewardkit.builtin.choice first comes back here before choice's names exist
from rewardkit.builtin import choice
from rewardkit.builtin._tag_blocks import tag_block, tag_blocks
from rewardkit.builtin.math.commitment import (
    competing_answers,
    competing_statements,
    copied_from,
    hedged,
    negated_before,
    read_answer,
)
from rewardkit.builtin.math.cost_guards import too_costly
from rewardkit.builtin.math.deadline import SymbolicTimeout, bounded
from rewardkit.builtin.math.disproof import verify
from rewardkit.builtin.math.extraction import (
    STATEMENTS,
    Found,
    reference_text,
    strip_calculator_notes,
    strip_lead_in,
)
from rewardkit.builtin.math.fast_path import fast_verdict
from rewardkit.builtin.math.hedges import one_value, several_values
from rewardkit.builtin.math.numbers import PlainNumber, numbers_match, read_number
from rewardkit.builtin.math.params import MathParams
from rewardkit.builtin.math.references import (
    SymbolicReference,
    WordReference,
    closing_word_span,
    plain_reference,
    reference_kind,
    symbolic_reference,
    word_form,
)
from rewardkit.builtin.math.sample import find_answer, ok_score, verdict_score
from rewardkit.builtin.math.symbolic import (
    MAX_PARSED_REGION,
    as_one_formula,
    cas_form,
    exactly_different,
    is_bare_formula,
    load_math_verify,
    parse_answer,
    parse_output,
)
from rewardkit.hookspecs import hookimpl
from rewardkit.text.graded import graded_text
from rewardkit.text.prompt import prompt_text
from rewardkit.types import Sample, Score


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
        "reasoning never closes; None reads the whole output, less a <think> block",
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
    text = graded_text(sample.text, params.reasoning_tag)
    if text is None:
        return Score.ok(params.wrong, "the reasoning never closes")
    found = tag_block(text, params.answer_tag)
    if found is None:
        return Score.ok(params.wrong, "no answer block")
    answer = found.strip()
    fold = (lambda t: t) if params.case_sensitive else str.casefold
    answer, gold = fold(answer), fold(gold)
    if len({fold(block.strip()) for block in tag_blocks(text, params.answer_tag)}) > 1:
        return Score.ok(params.wrong, "several different answer blocks", extracted=answer[:200])
    return Score.ok(params.score if answer == gold else params.wrong, extracted=answer[:200])




def _quick_verdict(sample: Sample, params: MathParams) -> Score | None:
    """The verdicts reached without math-verify: plain numbers, word answers, missing or
    prose references, unclosed reasoning, nothing to grade. None: math-verify decides.
    Bounded, linear work on any input; never imports sympy. (It runs once per sample of
    every step: the common case, a plain-number gold, is tested first.)"""
    reference = sample.reference
    if type(reference) is str:  # read each distinct reference once
        gold = reference_kind(reference, params.decimal_comma, params.symbolic)
    else:
        gold = plain_reference(reference, params)
    if type(gold) is Score:
        return gold
    if type(gold) is SymbolicReference:
        if gold.comma_decimal is not None:  # paid as the decimal here, else as the list
            return _comma_decimal_verdict(sample, gold.comma_decimal, params)
        letter = choice.GOLD_LETTER.fullmatch(gold.text) if params.choice else None
        if letter:  # an option letter: graded as multiple_choice grades it
            text = graded_text(sample.text, params.reasoning_tag)
            if text is None:
                return Score.ok(params.wrong, "the reasoning never closes")
            return choice.choice_score(text, letter.group(1), choice.sample_options(sample),
                                       params.answer_tag, params.score, params.wrong)
        return None  # math-verify must first say whether the reference is an answer at all
    if type(gold) is PlainNumber and type(reference) is str:
        verdict = _hashes_line_verdict(sample, gold, reference, params)
        if verdict is not None:
            return verdict
    read = _answer_read(sample, params)
    if isinstance(read, Score):
        return read
    text, prompt, found = read
    if type(gold) is PlainNumber:
        if found is None:
            return Score.ok(params.wrong, "no answer found")
        return _plain_verdict(gold, found, params, prompt,
                              reference if type(reference) is str else "")
    assert type(gold) is WordReference
    words = found.answer if found else closing_word_span(text)
    if words is None:
        return Score.ok(params.wrong, "no answer found")
    how = found.how if found else "words"
    return verdict_score(word_form(words) == gold.words, params, how, words)


#: the extraction order and tag the hashes-line short cut is proved for (the defaults)
_DEFAULT_ORDER = ["answer_tag", "boxed", "hashes", "closing", "bare", "math_span", "last_number"]
#: a box command (``\boxed``, ``\fbox``, ``\colorbox``, ...: every box statement_marks
#: counts) or ``\textbf`` (one search that starts only at a backslash)
_BOX_OR_BOLD_COMMAND = re.compile(r"\\(?:[A-Za-z]*box|textbf)")
#: plain substrings searched by ``re`` where its literal search is faster than ``in`` on
#: a long text whose first character is common (``*`` in "11 * 23", line breaks): "**",
#: "####" and a line starting "a:" (the same finds, tests/builtin/test_math_scan_rewrites.py)
_TWO_STARS = re.compile(r"\*\*")
_HASHES = re.compile("####")
_A_LINE = re.compile("\na:")


def _hashes_line_verdict(sample: Sample, gold: PlainNumber, reference: str,
                         params: MathParams) -> Score | None:
    """The verdict of the full reading (:func:`_answer_read`, :func:`_plain_verdict`) for
    the common GRPO case, reached with a few scans, or None: the full reading decides.

    Taken only where the full reading provably finds the same: default extraction, an
    ASCII output (lower case keeps positions) whose last line is its one ``####`` line
    (``#### The final answer is 18``) stating a plain number, and nothing before it that
    another strategy or statement reads (no reasoning block, answer block, box command,
    bold, other ``####``, ``answer`` in any case or ``A:`` line), at most one closing
    phrase on the line (the line's two readings are one statement:
    :func:`~rewardkit.builtin.math.commitment.statement_marks`). Then ``extract`` finds
    that line (answer_tag and boxed find nothing); nothing follows it, so no question
    mark, retraction, correction, note or hedge after it; the answer is not negated
    before it (checked) nor a copied prompt sentence (checked); statement_marks counts
    one statement, so there is no competing one; and a plain number is its own reading
    (``read_answer``). The differential test (tests/builtin/test_math_hashes_line.py)
    compares both on the benchmark's rows and the golden cases.

    Each check is one C-level scan (a fused regex is slower: ``re`` tries every position
    where an alternative may start; a literal regex search is faster than ``in`` for
    three of them); the 8-shot line's lead-in is cut by its literal. Three scans first
    look for one character with ``in`` / ``find`` (a ``memchr``, many times faster than
    a search for several characters): ``>`` before ``think>``, ``#`` before the line
    before an earlier ``####`` (most outputs have no ``#`` but the line's) and a
    backslash before a box or bold command."""
    text = sample.text
    pos = text.rfind("####")
    if (pos < 0 or text.find("\n", pos) >= 0 or (pos and text[pos - 1] == "#")
            or not text.isascii() or params.reasoning_tag is not None
            or params.occurrence != "last" or params.decimal_comma
            or params.answer_tag != "answer" or params.extract != _DEFAULT_ORDER
            or (">" in text and "think>" in text) or _TWO_STARS.search(text)
            or (text.find("#", 0, pos) >= 0 and _HASHES.search(text, 0, pos))
            or ("\\" in text and _BOX_OR_BOLD_COMMAND.search(text))):
        return None
    low = text.lower()  # (ASCII: the same positions)
    if (low.find("answer", 0, pos) >= 0 or _A_LINE.search(low)  # (no line break after pos)
            or low.startswith("a:")):
        return None  # a closing phrase, an answer block or an "A:" line before the line
    line = text[pos + 4 :]
    if (low.count("answer is", pos) + low.count("answer:", pos) > 1
            or "</answer>" in line):
        return None
    if line.startswith(_EIGHT_SHOT_LEAD_IN) and line[21:22] not in _LEAD_IN_GOES_ON:
        answer = line[21:].strip()  # what strip_lead_in's regex cuts from this line
    else:
        answer = strip_lead_in(line).strip()
    if not answer:
        return None
    pred = read_number(answer)
    if pred is None or (pred.percent and not gold.percent):
        return None
    # negated_before's own plain test, on the lower case text already made (an ASCII
    # text holds none of its non-ASCII marks); and its regex, which must end on a word
    # (the negation, a filler word, boxed or fbox) followed only by spaces, $ ( { [ or a
    # backslash, is not tried on a window that ends otherwise ("mixed up.\n")
    window = low[max(0, pos - 80) : pos]
    if (("not" in window or "never" in window or "n't" in window or "\\ne" in window)
            and window.rstrip(_NEGATION_TAIL)[-1:].isalpha() and negated_before(text, pos)):
        return None
    prompt = "" if sample.prompt is None else prompt_text(sample.prompt)
    if (prompt and copied_from(answer, prompt)) or several_values(answer, "hashes", prompt):
        return None
    # (a right answer, the common case, is numbers_match's first test: pred is no percent
    # here unless the gold is one)
    same = (not gold.percent and gold.value == pred.value) or _same_number(
        gold, pred, answer, reference, params)
    return ok_score(float(params.score if same else params.wrong), "hashes", answer)


#: the 8-shot closing's lead-in; :data:`~rewardkit.builtin.math.extraction.ANSWER_LEAD_IN`
#: cuts exactly these 21 characters unless a space or colon follows them (then it cuts
#: those too), or nothing does
_EIGHT_SHOT_LEAD_IN = " The final answer is "
#: what may follow a negation to the end of negated_before's window in an ASCII text,
#: besides words: whitespace (``\\s``), ``$``, ``(``, ``{``, ``[`` and a backslash
_NEGATION_TAIL = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f$({[\\"
_LEAD_IN_GOES_ON = frozenset({"", ":", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d",
                              "\x1e", "\x1f"})


def _answer_read(sample: Sample, params: MathParams) -> Score | tuple[str, str, Found | None]:
    """(the graded text, the prompt as text, the answer the output commits to), or the
    wrong Score when the reasoning never closes or the output refuses the answer found."""
    text = graded_text(sample.text, params.reasoning_tag)
    if text is None:
        return Score.ok(params.wrong, "the reasoning never closes")
    prompt = prompt_text(sample.prompt)
    found, refusal = find_answer(text, params, prompt)
    if refusal and found:
        return Score.ok(params.wrong, refusal, via=found.how, extracted=found.answer[:200])
    return text, prompt, found


def _comma_decimal_verdict(sample: Sample, decimal: PlainNumber,
                           params: MathParams) -> Score | None:
    """A gold such as ``-2,1`` (a list, or a decimal comma): the score when the answer is
    its decimal reading or is refused outright, else None: math-verify then compares the
    answer with the list (``1, -2`` for the roots -2 and 1)."""
    read = _answer_read(sample, params)
    if isinstance(read, Score):
        return read
    _, prompt, found = read
    if found is None:
        return None
    verdict = _plain_verdict(decimal, found, params, prompt)
    if verdict is not None and verdict.value == float(params.score) != float(params.wrong):
        return verdict
    return None


#: a prompt that asks for a percentage: there "18%" may stand for the gold 18
_PERCENT_ASKED = re.compile(r"percent|per\s+cent|%|pct", re.IGNORECASE)


def _plain_verdict(gold: PlainNumber, found: Found, params: MathParams,
                   prompt: str = "", gold_text: str = "") -> Score | None:
    """A plain-number gold against the answer the output commits to: one value, or a
    reason it commits to none (then wrong), or None when the answer is mathematics for
    math-verify. Another final statement with another value is a hedge: wrong. A percent
    answer is read as :func:`_percent_readings` says. A gold
    written as a decimal (``gold_text``) is that value rounded: an exact answer, or one
    with more decimal places, that rounds to it is right (``\\frac{1587}{52}`` for 30.52)."""
    several = several_values(found.answer, found.how, prompt)
    if several:
        return Score.ok(params.wrong, several, via=found.how, extracted=found.answer[:200])
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
    if not (pred.percent and not gold.percent):  # the common case: one reading
        same = _same_number(gold, pred, found.answer, gold_text, params)
        return ok_score(float(params.score if same else params.wrong), found.how, found.answer)
    readings = _percent_readings(pred, gold, prompt)
    if not readings:
        return Score.ok(params.wrong, "a percentage is not the quantity asked for",
                        via=found.how, extracted=found.answer[:200])
    same = any(_same_number(gold, p, found.answer, gold_text, params) for p in readings)
    return ok_score(float(params.score if same else params.wrong), found.how, found.answer)


def _same_number(gold: PlainNumber, pred: PlainNumber, answer: str, gold_text: str,
                 params: MathParams) -> bool:
    """``pred`` is the gold within the tolerances, or (a gold written as a decimal, no
    relative tolerance) ``answer`` rounds to it (:func:`_rounds_to`)."""
    if numbers_match(gold, pred, params.abs_tol, params.rel_tol):
        return True
    return bool(gold_text) and params.rel_tol is None and _rounds_to(gold_text, gold, pred,
                                                                        answer)


def _percent_readings(pred: PlainNumber, gold: PlainNumber, prompt: str) -> list[PlainNumber]:
    """The values a percent answer may stand for against a gold that is not a percent: the
    number written (``25%`` for 25) where the prompt asks for a percentage or is not
    known, and its fraction (``25%`` for 0.25) where the gold is a proportion (at most 1
    in size). ``1800%`` is not a count of 18: one answer that pays for 18 and for 1800 is
    a hedge; ``18%`` for a count of 18 where the prompt asks for no percentage is 0.18."""
    readings = []
    if not prompt or _PERCENT_ASKED.search(prompt):
        readings.append(PlainNumber(pred.value))
    if -1 <= gold.value <= 1:  # (abs() of Fraction | int types as _RealLike)
        readings.append(PlainNumber(Fraction(pred.value) / 100))
    return readings


#: a gold written as a decimal of two places or more, a rounded value (``30.52``,
#: ``$12.55``, ``6.67\%``; ``0.3`` and ``2.5`` are as often exact)
_DECIMAL_GOLD = re.compile(r"\s*\$?\s*(?:\\\$)?\$?[-+]?\d{1,15}\.(\d{2,6})\s*(?:\\?%)?\s*\$?\s*")
_DECIMAL_PLACES = re.compile(r"\d\.(\d+)")


def _rounds_to(gold_text: str, gold: PlainNumber, pred: PlainNumber, answer: str) -> bool:
    """Whether ``pred`` rounds to a gold written with k decimal places: ``pred`` is exact
    (``\\frac{1587}{52}``) or has more places than k, and lies within half a unit of the
    gold's last place. A less precise answer (``30.5`` for 30.52) is not rounded up to it."""
    m = _DECIMAL_GOLD.fullmatch(gold_text) if "." in gold_text else None  # most are whole
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
    key = _graded_key(sample, params)
    known = _GRADED.get(key) if key is not None else None
    if known is not None:  # this (reference, output) was graded: a group pays once
        return known
    refused = _costly_plain_answer(sample, params)
    if refused is not None:  # before the imports, which a cold worker makes within the timeout
        return refused
    if params.symbolic:
        _warm_math_verify()  # imports and first-use set-up are never cut short
    try:
        score = bounded(params.symbolic_timeout, _symbolic_verdict, sample, params)
    except SymbolicTimeout:
        score = Score.ok(params.wrong, f"symbolic grading ran past symbolic_timeout "
                         f"({params.symbolic_timeout:g} s): not shown equal",
                         timed_out=params.symbolic_timeout)
    if key is not None:
        _GRADED[key] = score
        if len(_GRADED) > _MAX_GRADED:
            with contextlib.suppress(KeyError):  # (another thread evicted it)
                _GRADED.popitem(last=False)
    return score


_warmed = False


def _warm_math_verify() -> None:
    """Import math-verify and sympy and run one comparison, once per process, before the
    first sample's deadline starts: an import interrupted halfway would leave a broken
    module behind, and no sample's symbolic_timeout is spent loading them (a worker's
    first symbolic sample pays for them within its hard timeout, as it always did)."""
    global _warmed
    mv = load_math_verify()
    if mv is None or _warmed:
        return
    _warmed = True
    with contextlib.suppress(Exception):  # a warm-up: graded calls report their own errors
        mv.verify(parse_answer(mv, "x+1", False), parse_answer(mv, "1+x", False),
                  timeout_seconds=None)


#: the verdicts math_answer reached past its quick checks, by :func:`_graded_key`, in this
#: process, oldest first (evicted first): the completions of a group that repeat an output
#: (a slow pair, timed out or not, included) are graded once
_GRADED: OrderedDict[bytes, Score] = OrderedDict()
_MAX_GRADED = 16384


def _graded_key(sample: Sample, params: MathParams) -> bytes | None:
    """What math_answer's verdict past the quick checks depends on: the reference, the
    output, the prompt (the commitment rules read it) and the parameters, as a digest (the
    cache holds 16 bytes per sample, not its text). None for a reference that is not JSON
    (such a verdict is not remembered)."""
    reference = sample.reference
    if type(reference) is not str:
        try:
            reference = json.dumps(reference, sort_keys=True)
        except (TypeError, ValueError):
            return None
    prompt = sample.prompt if type(sample.prompt) is str else repr(sample.prompt)
    digest = hashlib.blake2b(digest_size=16)
    for part in (reference, sample.text, prompt, _params_key(params)):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.digest()


def _params_key(params: MathParams) -> str:
    """The parameters as a string, computed once per parameters object."""
    held = _PARAMS_KEYS.get(id(params))
    if held is None or held[0] is not params:
        if len(_PARAMS_KEYS) > 64:
            _PARAMS_KEYS.clear()
        held = _PARAMS_KEYS[id(params)] = (params, params.model_dump_json())
    return held[1]


_PARAMS_KEYS: dict[int, tuple[MathParams, str]] = {}


def _costly_plain_answer(sample: Sample, params: MathParams) -> Score | None:
    """Wrong at once when the gold is a plain number and the answer's grading cost has no
    bound: refused before sympy sees it, and before math-verify and sympy are imported
    (a worker's first import takes seconds on a loaded machine, inside the sample's hard
    timeout, and would hand the answer back as a timeout, masked, instead of wrong)."""
    if not isinstance(plain_reference(sample.reference, params), PlainNumber):
        return None
    early, _ = find_answer(graded_text(sample.text, params.reasoning_tag) or "", params)
    refusal = too_costly(early.answer, params.max_symbolic_chars) if early else ""
    return Score.ok(params.wrong, refusal, via=early.how) if refusal and early else None


def _symbolic_verdict(sample: Sample, params: MathParams) -> Score:
    """math_answer past its quick checks: the exact fast path, else math-verify; run
    under :func:`~rewardkit.builtin.math.deadline.bounded`."""
    fast = fast_verdict(sample, params)  # exact answers, each distinct one graded once
    if fast is not None:
        return fast
    gold = plain_reference(sample.reference, params)  # (costly answers to a number: refused)
    mv = load_math_verify()
    if mv is None:
        return Score.error("math-verify is not installed: pip install 'rewardkit[math]'")
    if isinstance(gold, PlainNumber):  # hand math-verify the value, not "72 clips"
        value = gold.value
        gold_parsed = parse_answer(mv, str(value.numerator) if value.denominator == 1 else
                             f"\\frac{{{value.numerator}}}{{{value.denominator}}}", False)
    else:
        parsed = _gold_once(sample.reference) if type(sample.reference) is str \
            else symbolic_reference(mv, sample.reference)
        if isinstance(parsed, Score):
            return parsed
        gold_parsed = list(parsed)
    text = graded_text(sample.text, params.reasoning_tag)
    if text is None:
        return Score.ok(params.wrong, "the reasoning never closes")
    found, refusal = find_answer(text, params, prompt_text(sample.prompt))
    if refusal and found:
        return Score.ok(params.wrong, refusal, via=found.how, extracted=found.answer[:200])
    single = one_value(reference_text(sample.reference) or "")
    if found and hedged(found.answer) and single:
        return Score.ok(params.wrong, "the answer hedges between values", via=found.how,
                        extracted=found.answer[:200])
    several = several_values(found.answer, found.how, prompt_text(sample.prompt)) \
        if found and single else ""
    if several and found:
        return Score.ok(params.wrong, several, via=found.how, extracted=found.answer[:200])
    if found and not isinstance(gold, PlainNumber) and _several_answers(mv, found, params,
                                                                         single):
        return Score.ok(params.wrong, "several different final answers", via=found.how,
                        extracted=found.answer[:200])
    return _symbolic(gold_parsed, text, found, params, only_answer=isinstance(gold, PlainNumber))


@lru_cache(maxsize=4096)
def _gold_once(reference: str) -> tuple[Any, ...] | Score:
    """math-verify's parse of a symbolic reference, once per distinct reference in this
    process (a parse cut short by the deadline is not kept)."""
    parsed = symbolic_reference(load_math_verify(), reference)
    return parsed if isinstance(parsed, Score) else tuple(parsed)


#: the most other final statements math-verify compares with the answer
_MAX_COMPARED = 8


def _several_answers(mv: Any, found: Found, params: MathParams, one_value: bool) -> bool:
    """Whether the output stands by another final statement that math-verify finds
    different from ``found``. For a gold that is a set or a list, boxes may together form
    the answer (``x = \\boxed{2}`` and ``x = \\boxed{5}``), so only answer blocks count."""
    if found.how not in STATEMENTS or too_costly(found.answer, params.max_symbolic_chars):
        return False  # (a costly answer is refused by _symbolic, unparsed)
    others = [answer for how, answer in competing_statements(
        found, params.extract, params.answer_tag, first=params.occurrence == "first")
        if (one_value or how == "answer_tag") and "".join(answer.split()) != "".join(
            found.answer.split())]
    if not others:
        return False
    mine = parse_answer(mv, found.answer, fallback=True)
    for other in others[:_MAX_COMPARED]:
        if too_costly(other, params.max_symbolic_chars):
            return True
        theirs = parse_answer(mv, other, fallback=True)
        if mine and theirs and not verify(mv, mine, theirs):
            return True
    return False




# -- the symbolic path -------------------------------------------------------------------
def _symbolic(gold: list[Any], text: str, found: Found | None, params: MathParams,
              only_answer: bool = False) -> Score:
    """Compare with math-verify, letting its own extraction find the answer: in the answer
    block when there is one, else in the whole output (the last ``MAX_PARSED_REGION``
    characters). ``only_answer`` (a plain-number gold): only in the answer found, since
    math-verify reads a number anywhere in a text, stated as the answer or not."""
    mv = load_math_verify()
    if mv is None:
        return Score.error("math-verify is not installed: pip install 'rewardkit[math]'")
    how = found.how if found else "math-verify"
    one_formula = ("answer_tag", "hashes", "bare") if not only_answer else (
        "answer_tag", "hashes", "bare", "boxed", "closing", "math_span", "last_number")
    formula = cas_form(found.answer) if found is not None else ""
    if found is not None and found.how == "closing" and is_bare_formula(formula):
        formula = f"${formula}$"  # "The answer is 2x^2+x-1": the formula, not its 2
    if found is not None and found.how == "bare":  # the whole output is the answer
        region = as_one_formula(cas_form(found.text[found.start : found.end].strip()))
    elif found is not None and found.how in one_formula:
        region = as_one_formula(formula)  # the answer block: one formula
    elif found is not None and formula != found.answer:
        # rewritten where it stands: math-verify still reads the other boxes beside it
        # (``\boxed{0}`` or ``\boxed{(a, 1) \text{ for all } a}`` is not ``(a, 1)``)
        span = found.text[found.start : found.end]
        span = span.replace(found.answer, formula, 1) if found.answer in span else formula
        region = strip_calculator_notes(
            found.text[: found.start] + span + found.text[found.end :])[-MAX_PARSED_REGION:]
    else:
        region = strip_calculator_notes(text)[-MAX_PARSED_REGION:]
    refusal = too_costly(found.answer, params.max_symbolic_chars) if found else ""
    refusal = refusal or too_costly(region, MAX_PARSED_REGION, max_powers=None)
    if refusal:
        return Score.ok(params.wrong, refusal, via=how)
    pred = parse_output(mv, region)
    if not pred and found is not None and found.answer != region:
        pred = parse_answer(mv, found.answer, fallback=True)
    if not pred:
        return Score.ok(params.wrong, "no answer found" if found is None else
                        "answer cannot be parsed", via=how)
    same = verify(mv, gold, pred)  # math-verify's verdict (disproof.py)
    if same and exactly_different(gold, pred, region):
        same = False
    return Score.ok(params.score if same else params.wrong, via=how,
                    extracted=str(pred[-1])[:200])






@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(exact_answer)
    register(math_answer)
