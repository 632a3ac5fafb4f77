"""Built-in QA reward (registered as a default plugin).

``qa_match``
    the answer matches one of the acceptable answers, by exact match or token F1 after
    the SQuAD normalisation (lowercase, ASCII punctuation and the articles a/an/the
    removed, whitespace collapsed), the best over the acceptable answers: the numbers of
    the official SQuAD v1.1 evaluation script, answer by answer.

The answer is read from the last answer block, else a closing line (``Answer: ...``,
``The answer is ...``), else the last non-empty line. Cheap outputs the metric alone
pays are refused: alternatives (``Paris or Lyon``: F1 0.5 without committing; ``Paris |
Lyon``, ``Paris, alternatively Lyon``, ``Paris nor Lyon``, ``Paris, maybe Lyon``), an
answer that asks (``Paris (Lyon?)``), closing lines that give different answers, and, for
F1, an answer longer than the longest acceptable one by more than ``max_extra_tokens``
tokens (the passage pasted whole keeps recall 1 and a little precision); an acceptable
answer that itself has the word or the mark is not refused. Bounded, linear work on any
input: inline.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any, Literal

from pydantic import Field

from rewardkit.authoring import Params, Reward, reward
from rewardkit.builtin._tag_blocks import tag_blocks
from rewardkit.builtin.math.commitment import retracted_after
from rewardkit.builtin.math.extraction import closing_answer
from rewardkit.hookspecs import hookimpl
from rewardkit.text.graded import graded_text
from rewardkit.types import Sample, Score

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
#: alternatives offered instead of one answer: "Paris or Lyon", "Paris / Lyon", "Paris |
#: Lyon", "Paris, alternatively Lyon", "Paris nor Lyon", "Paris, maybe Lyon"; a bar with no
#: space beside it is part of a name (the normalisation drops it: "C|net" is "cnet")
_OR = re.compile(r"\s(?:or|and/or)\s|\s/\s|\s\||\|\s|(?<![A-Za-z])(?:nor|alternatively|"
                 r"otherwise|maybe|perhaps|possibly)(?![A-Za-z])", re.IGNORECASE)
#: plain strings one of which every match of _OR holds (a cheap test before the search)
_OR_HINTS = ("or", "/", "|", "alternatively", "otherwise", "maybe", "perhaps", "possibly")
#: a closing line: "Answer: X", "Final answer: X", "The (final) answer is X."
_CLOSING_LINE = re.compile(
    r"^[ \t*_#>-]*(?:(?:so|thus|therefore|hence),?[ \t]+)?(?:the[ \t]+)?(?:final[ \t]+)?"
    r"answer[ \t*_]*(?::|[ \t]is[ \t]*:?)[ \t*_]*(?P<answer>[^\n]{1,300})$",
    re.IGNORECASE | re.MULTILINE)
#: a closing line that points at the answer instead of giving one: "The answer is in the
#: second paragraph", "The answer is not obvious"
_POINTER = re.compile(r"(?:in|on|at|found|given|stated|mentioned|written|that|not|clear|"
                      r"simple|obvious|easy|below|above|as\s+follows|the\s+following)"
                      r"(?![A-Za-z])", re.IGNORECASE)
#: what withdraws a closing line before the next one: "Wait, that is wrong"
_WITHDRAWN = re.compile(r"(?<![A-Za-z])(?:wait|actually|wrong|incorrect|mistake|correction|"
                        r"scratch|instead)(?![A-Za-z])", re.IGNORECASE)


#: a lead-in before an answer: "The final answer is", "So the answer:", "Result =", or the
#: phrase alone ("Final answer Paris"); whole words ("Answers in Genesis" has none)
_LEAD_IN = re.compile(r"\s*(?:(?:so|thus|therefore|hence),?\s+)?(?:the\s+)?(?:final\s+)?"
                      r"(?:answer|result)(?![A-Za-z'’-])(?:\s*(?:is(?![A-Za-z'’-])\s*:?|:|"
                      r"=(?!=)))?", re.IGNORECASE)
#: a one-letter name set equal to the answer: "x = 4" (or the answer itself: "E = mc2")
_NAME_EQUALS = re.compile(r"\s*[A-Za-z]\s*=(?!=)")
#: the longest answer read both with and without its lead-in
_MAX_READ_TWICE = 300


def answer_readings(answer: str) -> list[str]:
    """The readings of an extracted answer: without its lead-ins first, as written last.

    A lead-in is a whole phrase at the start: "answer" or "result" (after "so", "the",
    "final"), with "is", ":" or "=" after it or not, or a one-letter name and "=". Any of
    them may be the answer itself (``The Final Answer``, ``Answer Me, My Love``, ``E =
    mc2``), so both readings are scored and the better counts; an answer over 300
    characters is read without its lead-in only.

    >>> answer_readings("The answer is Paris")
    ['Paris', 'The answer is Paris']
    >>> answer_readings("Answer: E = mc2")
    ['mc2', 'E = mc2', 'Answer: E = mc2']
    >>> answer_readings("Answers in Genesis")
    ['Answers in Genesis']
    """
    readings = [answer.strip()]  # as written, then each lead-in left out in turn
    for lead_in in (_LEAD_IN, _NAME_EQUALS):
        found = lead_in.match(readings[-1])
        if found and readings[-1][found.end() :].strip():
            readings.append(readings[-1][found.end() :].strip())
    if len(readings[0]) > _MAX_READ_TWICE:
        return readings[-1:]
    return list(dict.fromkeys(reversed(readings)))


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation: lowercase, drop ASCII punctuation, drop the articles
    a/an/the, collapse whitespace.

    >>> normalize_answer("The  Eiffel Tower!")
    'eiffel tower'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised texts are equal (SQuAD v1.1's exact_match_score)."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD v1.1's f1_score: the harmonic mean of token precision and recall of the
    normalised texts (0 when they share no token, so two empty texts score 0).

    >>> round(token_f1("Denver Broncos", "Broncos"), 4)
    0.6667
    """
    predicted, wanted = normalize_answer(prediction).split(), normalize_answer(gold).split()
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


class QAParams(Params):
    """Parameters of qa_match."""

    metric: Literal["exact_match", "f1"] = Field(
        "exact_match", description="exact_match: 1 when the normalised answer equals an "
        "acceptable one; f1: the best token F1 over the acceptable answers")
    answer_tag: str = Field("answer", description="name of the answer tag")
    reasoning_tag: str | None = Field(
        None, description="name of the reasoning tag of a reasoning model (e.g. 'think'): "
        "read only what follows the last closing </tag>, and pay `wrong` when the "
        "reasoning never closes; None reads the whole output, less a <think> block")
    unanswerable: bool = Field(
        False, description="SQuAD v2.0: an empty list of acceptable answers means the "
        "question has no answer; then the empty answer or one of `abstentions` pays "
        "`score` and any other answer `wrong` (false: such a sample is an error)")
    abstentions: list[str] = Field(
        ["unanswerable"], description="with unanswerable: answers that abstain, besides "
        "the empty answer (compared after the normalisation)")
    max_extra_tokens: int | None = Field(
        3, ge=0, description="f1 only: an answer with more tokens than the longest "
        "acceptable answer plus this pays `wrong` (padding keeps recall at 1); None: no "
        "cap, the official metric")
    score: float = Field(1.0, description="value of a full match; F1 is scaled by it")
    wrong: float = Field(0.0, description="value of no match, a hedge or no answer")


@reward(params=QAParams)
def qa_match(sample: Sample, params: QAParams) -> Score:
    """The answer matches an acceptable answer (SQuAD exact match or token F1).

    The reference is one answer, a list of acceptable answers, or a SQuAD ``answers``
    mapping (``{"text": [...]}``). The answer is the last answer block, else a closing
    line, else the last non-empty line. Answer blocks or closing lines that differ,
    alternatives (``Paris or Lyon``, ``Paris | Lyon``, ``Paris, alternatively Lyon``,
    ``Paris nor Lyon``) or a question mark (``Paris (Lyon?)``), unless an acceptable
    answer has them: ``wrong``.
    Details: ``extracted`` and ``matched`` (the acceptable answer scored best). Status
    error when there is no acceptable answer.
    Example: ``Answer: the Eiffel Tower.`` with reference ``["Eiffel Tower"]`` -> 1.0.
    """
    golds = acceptable_answers(sample.reference)
    no_answer = not golds and params.unanswerable and _declares_no_answer(sample.reference)
    if not golds and not no_answer:
        return Score.error("sample has no acceptable answer (a string, a list of strings "
                           "or a mapping with 'text')" + ("" if params.unanswerable else
                           "; unanswerable: true reads an empty list as 'no answer'"))
    text = graded_text(sample.text, params.reasoning_tag)
    if text is None:
        return Score.ok(params.wrong, "the reasoning never closes")
    blocks = [b.strip() for b in tag_blocks(text, params.answer_tag)]
    if len({normalize_answer(b) for b in blocks}) > 1:
        return Score.ok(params.wrong, "several different answer blocks")
    if not blocks and _closings_differ(text):
        return Score.ok(params.wrong, "several closing lines with different answers")
    stated = blocks[-1] if blocks else _unblocked_answer(text)
    readings = answer_readings(stated)
    answer = readings[0]
    if _withdrawn(text, stated, bool(blocks)) and not any(_withdrawn(g, g, True) for g in golds):
        return Score.ok(params.wrong, "the answer is retracted after it is given",
                        extracted=answer[:200])
    if params.unanswerable and _abstains(answer, params.abstentions):
        return Score.ok(params.score if no_answer else params.wrong, "abstains",
                        extracted=answer[:200])
    if no_answer:
        return Score.ok(params.wrong, "an answer to a question that has none",
                        extracted=answer[:200])
    if not normalize_answer(answer) and not any(_articles_only(g) for g in golds):
        return Score.ok(params.wrong, "no answer", extracted=answer[:200])
    said = answer if blocks else _line_of(text, stated)  # "It is Lyon or the answer is Paris"
    if _offers_alternatives(said) and not any(_offers_alternatives(g) for g in golds):
        return Score.ok(params.wrong, "alternatives offered instead of one answer",
                        extracted=answer[:200])
    if "?" in answer and not any("?" in g for g in golds):
        return Score.ok(params.wrong, "the answer asks instead of answering",
                        extracted=answer[:200])
    scored = [_match(reading, golds, params) for reading in readings]
    value, best, refusal = max(scored, key=lambda v: v[0])
    if refusal and value == 0:
        return Score.ok(params.wrong, refusal, extracted=answer[:200])
    return Score.ok(params.wrong + value * (params.score - params.wrong),
                    extracted=answer[:200], matched=best[:200])


def _match(answer: str, golds: list[str], params: QAParams) -> tuple[float, str, str]:
    """(value in 0..1, the acceptable answer that scored it, why nothing) of one reading."""
    if params.metric == "f1":
        longest = max(len(normalize_answer(g).split()) for g in golds)
        tokens = len(normalize_answer(answer).split())
        if params.max_extra_tokens is not None and tokens > longest + params.max_extra_tokens:
            return 0.0, "", f"{tokens} tokens, the longest acceptable answer {longest}: padding"
    metric = exact_match if params.metric == "exact_match" else token_f1
    values = [(_articles_match(answer, g) if _articles_only(g) else metric(answer, g), g)
              for g in golds]
    value, best = max(values, key=lambda v: v[0])
    return value, best, ""


def _line_of(text: str, stated: str) -> str:
    """The line of ``text`` where its last ``stated`` is (``stated`` when it is not found)."""
    pos = text.rfind(stated)
    if pos < 0:
        return stated
    end = text.find("\n", pos)
    return text[text.rfind("\n", 0, pos) + 1 : end if end >= 0 else len(text)]


def _withdrawn(text: str, stated: str, block: bool) -> bool:
    """Whether the output withdraws its stated answer ("Answer: Paris. Wait, that is
    wrong"): inside the answer block, or after the answer's last place in the text (the
    rule math_answer applies)."""
    if block:
        return retracted_after(stated, 0)
    end = text.rfind(stated)
    return end >= 0 and retracted_after(text, end + len(stated))


def _articles_only(gold: str) -> bool:
    """A gold that the normalisation empties (``The``): the official EM pays any answer
    that it empties too (``A``, ``.``) and v1.1's F1 none; here its words must match."""
    return bool(gold.strip()) and not normalize_answer(gold)


def _articles_match(answer: str, gold: str) -> float:
    """1.0 when the answer is the article-only gold's words (case and ASCII punctuation
    aside): ``the`` for ``The``, not ``a``."""
    def words(text: str) -> list[str]:
        return "".join(ch for ch in text.lower() if ch not in _PUNCTUATION).split()
    return float(bool(words(gold)) and words(answer) == words(gold))


def _declares_no_answer(reference: Any) -> bool:
    """Whether a reference says the question has no answer: an empty list, or a SQuAD
    v2.0 ``answers`` mapping with an empty ``text`` list (None and "" are missing)."""
    if isinstance(reference, Mapping):
        return any(isinstance(reference.get(key), Sequence) and
                   not isinstance(reference.get(key), str) and not reference.get(key)
                   for key in ("text", "answers", "aliases", "answer"))
    return isinstance(reference, Sequence) and not isinstance(reference, str) and \
        not reference


def _abstains(answer: str, abstentions: Sequence[str]) -> bool:
    """Whether an answer abstains: empty, or one of ``abstentions`` once normalised."""
    said = normalize_answer(answer)
    return not answer.strip() or said in {normalize_answer(a) for a in abstentions}


def acceptable_answers(reference: Any) -> list[str]:
    """The acceptable answers of a reference: a string, a list of them, or a SQuAD
    ``answers`` mapping (``{"text": [...], "answer_start": [...]}``)."""
    if isinstance(reference, Mapping):
        for key in ("text", "answers", "aliases", "answer"):
            if key in reference:
                return acceptable_answers(reference[key])
        return []
    if isinstance(reference, str):
        return [reference] if reference.strip() else []
    if isinstance(reference, bool) or reference is None:
        return []
    if isinstance(reference, int | float):
        return [str(reference)]
    if isinstance(reference, Sequence):
        return [a for item in reference for a in acceptable_answers(item)]
    return []


def _offers_alternatives(text: str) -> bool:
    """Whether ``text`` offers alternatives (:data:`_OR`)."""
    low = text.lower()
    return any(hint in low for hint in _OR_HINTS) and _OR.search(text) is not None


def _closings_differ(text: str) -> bool:
    """Whether an earlier closing line gives another answer than the last one
    (``Answer: Lyon`` ... ``Answer: Paris``): neither's normalised tokens hold the
    other's (``Answer: it is in Paris, France`` then ``Final answer: Paris`` agree), it
    gives an answer (``The answer is in the second paragraph`` points at one), and
    nothing before the next closing line withdraws it (``Wait, that is wrong``)."""
    if text.lower().count("answer") < 2:  # the common case: one closing line or none
        return False
    lines = list(_CLOSING_LINE.finditer(text))
    if len(lines) < 2:
        return False
    last = set(normalize_answer(lines[-1].group("answer")).split())
    for earlier, following in pairwise(lines):
        if _POINTER.match(earlier.group("answer")) or _WITHDRAWN.search(
                text, earlier.start("answer"), following.start()):
            continue
        tokens = set(normalize_answer(earlier.group("answer")).split())
        if tokens and last and not (tokens <= last or last <= tokens):
            return True
    return False


def _unblocked_answer(text: str) -> str:
    """A closing line's answer, else the last non-empty line."""
    closing = closing_answer(text)
    if closing:
        return closing
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(qa_match)
