"""Whether a completion stands by the answer found in it (the *commitment* rules).

An answer is paid only when the output commits to it: not negated, questioned,
retracted, hedged, bounded, one of a list, copied from the prompt, or contradicted by
another final statement (:func:`context_refusal`, :func:`read_answer`,
:func:`competing_statements`, :func:`competing_answers`). A policy learns whatever a
grader pays; these are the cheap ways to look right without committing to an answer.
Apart from :mod:`rewardkit.builtin.math.extraction` (where the answer is) because they judge an
answer already found. Linear in the text, like the extraction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import pairwise

from rewardkit.builtin._tag_blocks import MAX_STATEMENTS, tag_block_spans
from rewardkit.builtin.math.extraction import (
    CLOSING_KEYS,
    LATIN_WORD,
    NUMBER_TOKEN,
    NUMBER_TOKEN_DECIMAL_COMMA,
    SCALE_WORD_AFTER,
    STATEMENTS,
    TEXT_COMMAND_ARG,
    Found,
    box_at,
    boxed,
    closing_phrases,
    strip_lead_in,
)
from rewardkit.builtin.math.numbers import TEXT_COMMAND, PlainNumber, read_number

#: a negation right before an answer: "not 18", "isn't \boxed{18}", "\neq 18"
NEGATION_BEFORE = re.compile(
    r"(?:(?<![A-Za-z])not|(?<![A-Za-z])never|n['’]t|≠|\\neq?)\s*(?:(?:be|equal|equals|to|"
    r"exactly|just|simply|the|a|an|definitely|actually|really|quite|even|answer|is|it|of|"
    r"that|at\s+all)\s*){0,3}[\s$({\[\\]*(?:boxed|fbox)?\s*\{?$", re.IGNORECASE)
#: an answer whose own sentence ends in a question mark
_QUESTIONED = re.compile(r"[^.!?\n]{0,30}\?")
#: the phrases by which an output gives up (:data:`_GIVES_UP`), in parts: a modal verb and
#: what it cannot do after "I" / "we", guessing after them, and the rest of "not sure",
#: "no idea", "just a guess" ("unsure" and "random guess" are whole)
_MODAL_VERB = (r"\s+(?:cannot|can['’]t|can\s+not|could\s+not|couldn['’]t|am\s+unable\s+to|are"
               r"\s+unable\s+to|was\s+unable\s+to|do\s+not|don['’]t)\s+(?:solve|answer|"
               r"determine|figure|find|know|tell|say|be\s+sure)")
_GUESSING = r"\s*(?:am|are|['’]m|['’]re)\s+(?:just\s+)?guessing"
_NOT_SURE = r"\s+(?:sure|certain|confident)(?![A-Za-z])"
_NO_IDEA = r"\s+idea"
_JUST_GUESS = r"\s+(?:a\s+)?guess"
#: what withdraws an answer stated before it
_GIVES_UP = (r"(?:i|we)" + _MODAL_VERB + r"|not" + _NOT_SURE + r"|unsure|no" + _NO_IDEA
             + r"|(?:i|we)" + _GUESSING + r"|just" + _JUST_GUESS + r"|random\s+guess")
RETRACTION = re.compile(
    r"(?<![A-Za-z])(?:(?:that|this|it|which|the\s+above|my\s+answer|the\s+answer)"
    r"(?:['’]s|\s+is|\s+was|\s+(?:may|might|must|could)\s+be)\s+(?:(?:definitely|probably|"
    r"clearly|all|completely)\s+)?(?:wrong|incorrect|not\s+(?:right|correct))"
    r"|scratch\s+that|disregard|ignore\s+(?:that|this|it|the\s+above|my)|never\s?mind"
    r"|on\s+second\s+thought|take\s+(?:that|it)\s+back|(?:i|we)\s+made\s+(?:a|an)\s+"
    r"(?:mistake|error)|" + _GIVES_UP + ")",
    re.IGNORECASE)
#: a correction inside one stated answer: ``20, no wait, 18``, ``20. Wait: 18``, ``20
#: (correction: 18)``, ``20, I mean 18``, ``20, sorry, 18`` (``18 minutes wait`` is none)
_CORRECTION = re.compile(r"(?:(?<![A-Za-z])no,?\s+wait|(?<![A-Za-z])wait(?=\s*[,.:;!\u2014-])|"
                         r"(?<![A-Za-z])(?:correction|i\s+mean|sorry|oops)(?![A-Za-z]))",
                         re.IGNORECASE)
#: a correction right after a stated answer: ``18, no wait, 17``, ``18 (sorry, 17)``; a
#: bare "Wait," after it (``18. Wait, let me check: ...``) is no correction
_CORRECTED = re.compile(r"[\s$)}\].,;:(\u2014-]*(?:no,?\s+wait|correction|i\s+mean|sorry|oops)"
                        r"(?![A-Za-z])", re.IGNORECASE)
#: markdown bold around a value, not a power (``**18**``; ``2**3**`` is not bold)
BOLD_SPAN = re.compile(r"(?<![\w)])\*\*(?=\S)([^*\n]{1,200}?)(?<=\S)\*\*")
#: the output says it has no answer ("I do not know how to solve this"): then a number
#: read from its text is not one
_NO_ANSWER = re.compile(r"(?<![A-Za-z])(?:" + _GIVES_UP + ")", re.IGNORECASE)
#: :data:`_NO_ANSWER` for an ASCII text in lower case, written so that each alternative
#: starts with a plain letter (the regex engine then skips the positions that start none:
#: several times faster on a long text); built from :data:`_GIVES_UP`'s parts, and
#: tests/builtin/test_math_hashes_line.py checks both find the same
_NO_ANSWER_ASCII_LOWER = re.compile(
    r"i(?<![a-z]i)(?:" + _MODAL_VERB + "|" + _GUESSING + ")"
    r"|w(?<![a-z]w)e(?:" + _MODAL_VERB + "|" + _GUESSING + ")"
    r"|n(?<![a-z]n)o(?:t" + _NOT_SURE + "|" + _NO_IDEA + ")"
    r"|u(?<![a-z]u)nsure|j(?<![a-z]j)ust" + _JUST_GUESS + r"|r(?<![a-z]r)andom\s+guess")
#: a word every match of :data:`_NO_ANSWER` holds: the verb after a modal (``be sure``
#: ends in "sure"), "sure" / "certain" / "confident", "idea", "guess" (in "guessing" too);
#: written from :data:`_GIVES_UP`'s parts and kept with them
_NO_ANSWER_WORDS = ("sure", "know", "find", "answer", "solve", "tell", "say", "guess", "idea",
                    "figure", "determine", "certain", "confident")


def _says_no_answer(text: str, end: int) -> bool:
    """Whether ``text[:end]`` says it has no answer (:data:`_NO_ANSWER`). An ASCII text
    holding none of :data:`_NO_ANSWER_WORDS` there (most) is told by plain searches,
    without the regex (tests/builtin/test_math_scan_rewrites.py)."""
    if not text.isascii():
        return _NO_ANSWER.search(text, 0, end) is not None
    low = text.lower()
    for word in _NO_ANSWER_WORDS:
        if low.find(word, 0, end) >= 0:
            return _NO_ANSWER_ASCII_LOWER.search(low, 0, end) is not None
    return False


#: an answer called wrong right after it: "\boxed{18} is wrong", "18 is not the answer"
_REFUTED = re.compile(r"[\s$)}\]]*(?:is|was|seems)\s+(?:(?:definitely|probably|clearly)\s+)?"
                      r"(?:wrong|incorrect|not\s+(?:right|correct|the\s+(?:final\s+)?answer))",
                      re.IGNORECASE)
#: words that make an answer several values, or none: "17 or 18", "maybe 18", "±5"
HEDGE_WORD = re.compile(
    r"(?<![\\A-Za-z])(?:or|either|maybe|perhaps|possibly|guess)(?![A-Za-z])|\\pm|\\mp|±"
    r"|\\lor(?![A-Za-z])|\\vee(?![A-Za-z])",
    re.IGNORECASE)
#: :data:`HEDGE_WORD` for an ASCII text in lower case (where IGNORECASE reads an ASCII
#: letter as its lower case: ``\\PM`` as ``\\pm``), each alternative starting with a plain
#: character so that the regex engine skips the positions that start none (about twice
#: as fast); tests/builtin/test_math_scan_rewrites.py checks both find the same
_HEDGE_WORD_ASCII_LOWER = re.compile(
    r"o(?<![\\a-z]o)r(?![a-z])|e(?<![\\a-z]e)ither(?![a-z])|m(?<![\\a-z]m)aybe(?![a-z])"
    r"|p(?<![\\a-z]p)(?:erhaps|ossibly)(?![a-z])|g(?<![\\a-z]g)uess(?![a-z])|\\pm|\\mp"
    r"|\\lor(?![a-z])|\\vee(?![a-z])")


def hedge_word_in(text: str) -> bool:
    """Whether :data:`HEDGE_WORD` finds a hedge word in ``text``."""
    if text.isascii():
        return _HEDGE_WORD_ASCII_LOWER.search(text.lower()) is not None
    return HEDGE_WORD.search(text) is not None


#: a bound is not a value: "at least 18", "more than 18", "between 17 and 18", "\geq 18"
_BOUND = re.compile(
    r"(?<![\\A-Za-z])(?:at\s+(?:least|most)|(?:more|less|fewer|greater|smaller)\s+than|up"
    r"\s+to|between|no\s+(?:more|less|fewer)\s+than)(?![A-Za-z])|\\[lg]eq?(?![A-Za-z])|[≤≥]",
    re.IGNORECASE)
#: what may stand between the values of a list ("16, 17, 18", "17 and 18", "1 2 3")
_LIST_GAP = re.compile(r"(?:[\s;&/\-–]|[,.](?=\s)|\\quad|\\qquad|\\text\{\s*(?:and|to)?\s*\}|"
                       r"(?<![A-Za-z])(?:and|to|through|then)(?![A-Za-z]))+", re.IGNORECASE)


#: a chat template's turn marker (``<|im_end|>``): nothing after it is the answer
_TURN_END = re.compile(r"<\|[A-Za-z_]+\|>|</s>")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")
#: the last :data:`_SENTENCE_END` of a window, found from the window's end (where it most
#: often is) instead of by listing every sentence end before it
_LAST_SENTENCE_END = re.compile(r".*(?:[.!?](?=\s|$)|\n)", re.DOTALL)


def context_refusal(found: Found, first: bool = False, prompt: str = "") -> str:
    """Why the output does not stand by ``found`` (empty when it does): it is empty,
    negated ("not 18"), questioned ("18?"), withdrawn after it ("18. Wait, that is
    wrong"), or copied from the prompt; and for a number read from the text without a
    stated answer (``last_number``, ``math_span``): not where the output ends, hedged, or
    one of a list. Linear in the length of the text."""
    if not found.answer:
        return "the answer is empty"
    text = found.text
    if negated_before(text, found.start):
        return "the answer is negated"
    if _QUESTIONED.match(text, found.end):
        return "the answer is a question"
    stop = _next_question(text, found.end) if first else len(text)
    if found.end < stop and (RETRACTION.search(text, found.end, stop)
                             or _REFUTED.match(text, found.end)):
        return "the answer is retracted after it is given"
    if _CORRECTED.match(text, found.end):
        return "the answer is corrected right after it is given"
    if prompt and copied_from(found.answer, prompt):
        return "the answer is copied from the prompt"
    if "\\" in text[found.end : found.end + 40] and _noted_otherwise(text, found.end):
        return "a note beside the answer gives another value"
    if found.how in STATEMENTS and _hedged_after(found):
        return "the answer hedges right after it"
    if found.how in ("last_number", "math_span"):
        return _fallback_refusal(found, first, prompt)
    return ""


def retracted_after(text: str, end: int) -> bool:
    """Whether what follows a stated answer ending at ``end`` withdraws it ("C. Wait, that
    is wrong", "C is not correct"): the rule :func:`context_refusal` applies, for graders
    that read an answer without :class:`Found`'s other checks."""
    return RETRACTION.search(text, end) is not None or _REFUTED.match(text, end) is not None


#: a hedge word and another value right after a stated answer: ``\\boxed{18} (possibly
#: 17)``, ``18, or maybe 17``
_HEDGE_AFTER = re.compile(r"[\s$)}\]]*[,;.(\u2014-]*\s*(?:or|maybe|perhaps|possibly|else)\s+"
                          r"(?:(?:maybe|perhaps|possibly|even|else|rather|just|about)\s+)?"
                          r"[\s$(\\boxed{]*(" + NUMBER_TOKEN.pattern + r")", re.IGNORECASE)


def _hedged_after(found: Found) -> bool:
    """Whether a hedge word and a different number follow the answer in its sentence."""
    match = _HEDGE_AFTER.match(found.text, found.end, found.end + 60)
    if match is None:
        return False
    value = read_answer(found.answer)
    other = read_number(match.group(1))
    return isinstance(value, PlainNumber) and other is not None and other.value != value.value


#: a note set beside the answer: ``\boxed{18}\footnote{or 17}``
_NOTE = re.compile(r"[\s$.)}\]]{0,8}\\(?:footnote|footnotetext|marginpar|marginnote|sidenote|"
                   r"endnote|tablefootnote|tooltip)(?![A-Za-z])\s*(?:\[[^\]{}]{0,20}\]\s*)?\{")


def _noted_otherwise(text: str, end: int) -> bool:
    """Whether a note right after the answer hedges (``\\footnote{or 17}``) or is a value
    of its own (``\\footnote{17}``): the reader is given two answers."""
    note = _NOTE.match(text, end)
    if note is None:
        return False
    depth, close = 1, note.end()
    while close < len(text) and close < note.end() + 300 and depth:
        depth += (text[close] == "{") - (text[close] == "}")
        close += 1
    content = text[note.end() : close - 1]
    return hedged(content) or RETRACTION.search(content) is not None or (
        read_number(strip_lead_in(content)) is not None)


#: where a few-shot base model starts inventing the next question
_NEXT_QUESTION = re.compile(r"\n[ \t]*\n|\n[ \t]*(?:Q|Question|Problem)[ \t]*(?:\d+[ \t]*)?[:.]",
                            re.IGNORECASE)


def _next_question(text: str, start: int) -> int:
    """Where the output goes on to a next question after ``start`` (a blank line or a
    ``Q:`` / ``Question:`` line), or its end."""
    match = _NEXT_QUESTION.search(text, start)
    return match.start() if match else len(text)


def negated_before(text: str, start: int) -> bool:
    """Whether a negation stands right before ``text[start:]`` ("not 18")."""
    window = text[max(0, start - 80) : start]
    low = window.lower()  # most often there is no negation at all: plain searches
    if not ("not" in low or "never" in low or "n't" in low or "n’t" in low or "≠" in low
            or "\\ne" in low):
        return False
    return NEGATION_BEFORE.search(window) is not None


def copied_from(answer: str, prompt: str) -> bool:
    """A sentence of the prompt given back as the answer ("18 apples" is not one)."""
    words = " ".join(answer.split())
    return len(words) >= 20 and LATIN_WORD.search(words) is not None and words in " ".join(
        prompt.split())


#: the refusal of a number read from the text when a later number follows it: the next
#: strategy in the order reads on (``math_span`` gives way to ``last_number``)
SUPERSEDED = "a number follows it: not the final answer"


def _fallback_refusal(found: Found, first: bool, prompt: str) -> str:
    """Why a number read from the text is not a final answer: a later number follows it
    (:data:`SUPERSEDED`), the output ends in a question, its sentence hedges, it is one
    of a list of numbers, or its sentence was copied from the prompt."""
    text = found.text
    last = _LAST_SENTENCE_END.match(text, max(0, found.start - 2000), found.start)
    begin = last.end() if last else 0
    end_match = _SENTENCE_END.search(text, found.end)
    end = end_match.end() if end_match else len(text)
    sentence = text[begin:end]
    if not first:
        turn = _TURN_END.search(text, found.end)
        rest = text[found.end : turn.start() if turn else len(text)]
        if found.how == "math_span" and NUMBER_TOKEN.search(rest):
            return SUPERSEDED
        if rest.rstrip().endswith("?"):
            return "no final answer: the output ends in a question"
    if _says_no_answer(text, found.start):
        return "no final answer: the output says it cannot answer"
    if hedge_word_in(sentence):
        return "the last sentence hedges between values"
    if _listed(text, sentence, found):
        return "a list of numbers, not an answer"
    if prompt and copied_from(sentence, prompt):
        return "the last sentence is copied from the prompt"
    return ""


def _listed(text: str, sentence: str, found: Found) -> bool:
    """The number is one of a list: its sentence is numbers only, or its line repeats the
    line before with another number ("Candidate: 17" / "Candidate: 18")."""
    token = NUMBER_TOKEN
    # (a word in the sentence is tested first: the cheap test, and most often it decides)
    if not LATIN_WORD.search(sentence) and len(set(token.findall(sentence))) >= 2 and not (
            re.search(r"[=+*×^]|\\times|\\cdot", sentence)):
        return True
    line_start = text.rfind("\n", 0, found.start) + 1
    line_end = text.find("\n", found.start)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    before = text[: max(0, line_start - 1)].rstrip("\n")
    previous = before[before.rfind("\n") + 1 :]
    if not previous.strip() or previous == line:
        return False
    if (previous.isascii() and line.isascii()
            and previous.lstrip(_ASCII_NOT_A_LETTER)[:1] != line.lstrip(_ASCII_NOT_A_LETTER)[:1]):
        return False  # their first letters differ (or one has none): so do their letters
    if _NOT_A_LETTER.sub("", previous) != _NOT_A_LETTER.sub("", line):
        return False  # (a number token holds no letter: the lines differ outside numbers)
    return token.sub("#", previous).strip() == token.sub("#", line).strip()


_NOT_A_LETTER = re.compile(r"[^A-Za-z]+")
#: the ASCII characters :data:`_NOT_A_LETTER` matches
_ASCII_NOT_A_LETTER = "".join(c for c in map(chr, range(128)) if not c.isalpha())


def read_answer(answer: str, decimal_comma: bool = False,
                prose: bool = True) -> PlainNumber | str | None:
    """The one value a stated answer commits to, a reason why it commits to none (a
    question, a hedge or a bound, a false equation, several values, a negation), or None
    when it is mathematics for a CAS to read (``2\\sqrt{81}``). ``prose=False``: only
    a plain number (or the last side of an equation) is a value; None for the rest.

    >>> read_answer("18 thousand").value
    18000
    >>> read_answer("17 or 18")
    'the answer hedges between values'
    >>> read_answer("not 20, but 18").value
    18
    """
    if "**" in answer:  # markdown bold: "**18**" is 18 (2**3 stays a power)
        answer = BOLD_SPAN.sub(r"\1", answer)
    number = read_number(answer, decimal_comma)
    if number is not None:
        return number
    if not answer.strip():
        return "the answer is empty"
    withdrawn = _withdrawn_inside(answer, decimal_comma)
    if withdrawn is not None:  # "20. Wait, that is wrong, it is 18": what follows stands
        rest = answer[withdrawn:].lstrip(" \t\n,.;:!\u2014\u2013-")
        token = NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma else NUMBER_TOKEN
        if token.search(rest) is None:
            return "the answer is retracted inside it"
        return read_answer(rest, decimal_comma, prose)
    words = TEXT_COMMAND.sub(lambda t: " " + t.group(1) + " ", answer)
    if "?" in answer:
        return "the answer is a question"
    if hedged(answer):
        return "the answer hedges between values"
    if _BOUND.search(words):
        return "the answer is a bound, not a value"
    if "=" in answer:  # "9 \times 2 = 18": the last side, when it reads as a number
        sides = [read_number(side, decimal_comma) for side in answer.split("=")]
        last = sides[-1]
        if last is not None:
            if any(side is not None and side != last for side in sides[:-1]):
                return "an equation whose sides are different numbers"
            return last
    token = NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma else NUMBER_TOKEN
    tokens = list(token.finditer(answer))
    if not tokens or not prose:
        return None
    kept = [t for t in tokens if not negated_before(answer, t.start())]
    if not kept:
        return "the answer is negated"
    prose = LATIN_WORD.search(TEXT_COMMAND_ARG.sub(" ", answer)) is not None
    listed = len(kept) >= 2 and all(
        _LIST_GAP.fullmatch(answer, a.end(), b.start()) for a, b in pairwise(kept))
    if not prose:  # mathematics: a list of numbers is several answers, the rest is a CAS's
        if not listed:
            return None
        listed_values = {read_number(t.group(0), decimal_comma) for t in kept}
        one = listed_values.pop() if len(listed_values) == 1 else None
        return one if one is not None else "several values in one answer"
    values = []
    for t in kept:
        scale = SCALE_WORD_AFTER.match(answer, t.end())
        value = read_number(t.group(0) + (scale.group(0) if scale else ""), decimal_comma)
        if value is not None:
            values.append(value)
    if not values:
        return None
    if len(set(values)) == 1:
        return values[0]
    if _LIST_GAP.fullmatch(answer, kept[0].end(), kept[1].start()):
        return "several values in one answer"
    return values[0]  # "18 because 9 * 2 = 18": the value it states first


def _withdrawn_inside(answer: str, decimal_comma: bool) -> int | None:
    """Where the last retraction or correction that follows a number of ``answer`` ends
    (``20, no wait, 18``: before ``, 18``), or None: the commitment rules that refuse a
    stated answer withdrawn after it apply inside one statement too."""
    low = answer.lower()
    if not any(hint in low for hint in _WITHDRAWAL_HINTS):  # the common case: plain
        return None
    token = NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma else NUMBER_TOKEN
    first = token.search(answer)
    if first is None:
        return None
    ends = [m.end() for pattern in (RETRACTION, _CORRECTION)
            for m in pattern.finditer(answer, first.end())]
    return max(ends) if ends else None


#: plain strings one of which every retraction or correction holds (a cheap test first)
_WITHDRAWAL_HINTS = ("wrong", "incorrect", "not right", "not correct", "scratch", "disregard",
                     "ignore", "never", "second thought", "back", "mistake", "error", "can",
                     "could", "unable", "not", "unsure", "idea", "guess", "wait",
                     "correction", "mean", "sorry", "oops", "n't", "n’t")


def hedged(answer: str) -> bool:
    """Whether an answer hedges between values: ``17 or 18``, ``maybe 18``, ``18 \\pm 1``,
    ``17 \\text{ or } 18``."""
    return hedge_word_in(TEXT_COMMAND.sub(lambda t: " " + t.group(1) + " ", answer))


def competing_answers(found: Found, order: Sequence[str], answer_tag: str,
                      decimal_comma: bool = False, first: bool = False) -> list[PlainNumber]:
    """The plain-number values of :func:`competing_statements`. An output that stands by
    two different values has hedged."""
    values = []
    for _, answer in competing_statements(found, order, answer_tag, first):
        value = read_answer(answer, decimal_comma)
        if value is None and "\\" in answer:  # \substack{17}, \mathbf{17}: still 17
            value = read_answer(_unwrapped(answer), decimal_comma)
        if isinstance(value, PlainNumber):
            values.append(value)
    return values


#: commands that only format their one argument (``\\overline`` is left: it repeats a
#: decimal)
_WRAPPER = re.compile(r"\\(?:substack|shortstack|mathbf|mathrm|textbf|textrm|textit|mathit|"
                      r"bm|boldsymbol|emph|underline|displaystyle|textstyle|text|mbox|hbox|"
                      r"fbox|boxed|framebox|smash|(?:text|math)color\s*\{[^{}]{0,40}\}|"
                      r"colorbox\s*\{[^{}]{0,40}\})\s*\{([^{}]{0,200})\}")


def _unwrapped(answer: str) -> str:
    """``answer`` with formatting commands removed around their argument
    (``\\substack{17}`` is 17), two levels deep."""
    for _ in range(2):
        answer = _WRAPPER.sub(r"\1", answer)
    return answer


def competing_statements(found: Found, order: Sequence[str], answer_tag: str,
                         first: bool = False) -> list[tuple[str, str]]:
    """(kind, answer) of the other final statements that the output stands by:
    statements of the same kind as ``found`` (answer blocks, boxes, ``####`` lines,
    closing phrases), and of any kind in ``order`` after it; not empty, negated,
    questioned, or withdrawn before the next statement. (Boxed steps before a closing
    "The final answer is 84" are steps, not answers.) With ``first``, only the
    statements before the next question count."""
    text = found.text
    if first:  # what follows the first answer's paragraph is the next invented question
        text = text[: _next_question(text, found.end)]
    kinds = statement_kinds(tuple(order))
    if statement_marks(text, kinds, answer_tag) < 2:  # the common case: found is the only one
        return []
    statements = final_statements(text, kinds, answer_tag)
    others = []
    for i, (how, start, end, answer) in enumerate(statements):
        if start == found.start or not answer:
            continue
        if how != found.how and start < found.end and not _states_before(
                how, start, end, answer, text, found):
            continue  # "$3 \cdot 4 = \boxed{12}$, ... The final answer is 84": a step
        stop = statements[i + 1][1] if i + 1 < len(statements) else len(text)
        if (negated_before(text, start) or _QUESTIONED.match(text, end) or _REFUTED.match(text, end)
                or RETRACTION.search(text, end, stop)):
            continue
        others.append((how, answer))
    return others


def _states_before(how: str, start: int, end: int, answer: str, text: str,
                   found: Found) -> bool:
    """Whether a statement of another kind before ``found`` is a final statement too, not a
    step: a box or a bold line that does not end a computation (``x = \\boxed{17}``), or
    a closing phrase or ``####`` line that ends before ``found`` and states a plain number
    or a formula without words or ``=`` (``The answer is 17.`` then ``\\boxed{18}``); a
    closing phrase that states a computation (``The answer is 9 \\times 2 = 18.``) is a
    step."""
    if how in ("boxed", "bold"):
        return not _ends_equation(text, start)
    if how not in ("closing", "hashes") or end > found.start:
        return False
    if read_number(answer) is not None:
        return True
    # a formula with no words and no computation in it (``\\sqrt{3}``, ``x = \\sqrt{3}``)
    formula = strip_lead_in(answer).strip().strip("$").strip()
    return bool(formula) and "=" not in formula and "$" not in formula and \
        LATIN_WORD.search(TEXT_COMMAND_ARG.sub(" ", formula)) is None and len(formula) <= 100


@lru_cache(maxsize=64)
def statement_kinds(order: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(how for how in STATEMENTS if how in order)


def _ends_equation(text: str, start: int) -> bool:
    """The box at ``start`` is the result of a computation (``4 \\cdot 3 = \\boxed{12}``):
    it ends an equation whose left side ends in a digit, a bracket or a brace. A box
    after a bare name (``x = \\boxed{17}``) states a value, not a step."""
    before = text[max(0, start - 40) : start].rstrip(" \t$({")
    if not before.endswith("="):
        return False
    left = before[:-1].rstrip()
    return not left or not left[-1].isalpha()


def statement_marks(text: str, kinds: Sequence[str], answer_tag: str) -> int:
    """How many final statements ``text`` may hold, counted up to 2 (plain counts: cheap;
    never fewer than there are)."""
    markers, closing = _markers(tuple(kinds), answer_tag)
    marks = 0
    for marker in markers:
        marks += text.count(marker)
        if marks >= 2:
            return marks
    if "boxed" in kinds:  # the other boxes and bold lines: one scan when there are none
        if "box" in text:
            marks += sum(text.count(name) for name in _OTHER_BOXES)
        marks += text.count("**") + text.count("\\textbf")
        if marks >= 2:
            return marks
    if closing:
        low = text.lower()
        marks += low.startswith("a:")
        closings = 0
        for key in CLOSING_KEYS:
            closings += low.count(key)
        if closings == 1 and marks == 1 and "hashes" in kinds and \
                _closing_on_the_hashes_line(text, low):
            return 1  # "#### The final answer is 18": one statement read two ways
        marks += closings
    return marks


def _closing_on_the_hashes_line(text: str, low: str) -> bool:
    """Whether the one closing phrase of ``text`` sits on its one ``####`` line (after
    the marks): the line's two readings (``hashes`` and ``closing``) then overlap, and
    neither is a competitor of the other (each starts before the other ends and ends
    after it starts: :func:`_states_before` says step), so the text states one answer."""
    hashes = text.find("####")
    if hashes < 0 or text.find("####", hashes + 4) >= 0:
        return False
    line_end = text.find("\n", hashes)
    line = low[hashes: len(text) if line_end < 0 else line_end]
    return any(key in line for key in CLOSING_KEYS)


@lru_cache(maxsize=64)
def _markers(kinds: tuple[str, ...], answer_tag: str) -> tuple[tuple[str, ...], bool]:
    """The plain marks of the statement kinds, and whether closing phrases count."""
    markers: list[str] = []
    if "answer_tag" in kinds:
        markers.append(f"</{answer_tag}>")
    if "boxed" in kinds:
        markers += ["\\boxed", "\\fbox"]  # (and those statement_marks counts)
    if "hashes" in kinds:
        markers.append("####")
    return tuple(markers), "closing" in kinds


#: the other boxes a completion can draw around an answer, and how many arguments (a colour)
#: come before the boxed one
_OTHER_BOXES = {"\\framebox": 0, "\\colorbox": 1, "\\fcolorbox": 2, "\\cfbox": 1,
                "\\bbox": 0, "\\ovalbox": 0, "\\Ovalbox": 0, "\\doublebox": 0,
                "\\shadowbox": 0}
_OPTIONAL_ARGS = re.compile(r"(?:\s*\[[^\]{}]{0,40}\])*\s*")
_ARG = re.compile(r"\{[^{}]{0,60}\}\s*")
#: a line that is only a bold answer: ``**17**``, ``- **Answer: 17**``, ``\textbf{17}.``
_BOLD_LINE = re.compile(r"^[ \t]*(?:[-*+>][ \t]+)?"
                        r"(?:\*\*([^*\n]{1,80})\*\*|\\textbf\{([^{}\n]{1,80})\})"
                        r"[ \t]*\.?[ \t]*$", re.MULTILINE)


def _other_box_at(text: str, start: int, name: str) -> tuple[int, str] | None:
    """(end, content) of the box of kind ``name`` (one of :data:`_OTHER_BOXES`) at
    ``start``: its optional and colour arguments skipped, braces balanced."""
    pos = start + len(name)
    if pos < len(text) and (text[pos].isalpha()):
        return None  # another command (\framebox is not \frameboxes)
    pos = _OPTIONAL_ARGS.match(text, pos).end()  # type: ignore[union-attr]
    for _ in range(_OTHER_BOXES[name]):
        arg = _ARG.match(text, pos)
        if arg is None:
            return None
        pos = arg.end()
    if not text.startswith("{", pos):
        return None
    box = box_at(text, pos)
    return box


def final_statements(text: str, kinds: Sequence[str],
                answer_tag: str) -> list[tuple[str, int, int, str]]:
    """(kind, start, end, answer) of every final statement of the given kinds, in text
    order."""
    found: list[tuple[str, int, int, str]] = []
    if "answer_tag" in kinds:
        for start, end, block in tag_block_spans(text, answer_tag):
            inner = boxed(block)
            found.append(("answer_tag", start, end,
                          strip_lead_in(inner if inner is not None else block).strip()))
    if "boxed" in kinds:
        for name in ("\\boxed", "\\fbox"):
            pos = text.find(name)
            while pos >= 0 and len(found) < MAX_STATEMENTS:
                box = box_at(text, pos)
                if box is not None:
                    found.append(("boxed", pos, box[0], box[1].strip()))
                pos = text.find(name, pos + len(name))
        for name in _OTHER_BOXES:  # \framebox{18}, \colorbox{yellow}{18}, ...
            pos = text.find(name)
            while pos >= 0 and len(found) < MAX_STATEMENTS:
                box = _other_box_at(text, pos, name)
                if box is not None:
                    found.append(("boxed", pos, box[0], box[1].strip()))
                pos = text.find(name, pos + len(name))
        if "**" in text or "\\textbf" in text:  # "**17**" alone on its line
            for line in _BOLD_LINE.finditer(text):
                if len(found) >= MAX_STATEMENTS:
                    break
                answer = strip_lead_in(line.group(1) or line.group(2) or "").strip()
                if read_number(answer) is not None:
                    found.append(("bold", line.start(), line.end(), answer))
    if "hashes" in kinds:
        pos = text.find("####")
        while pos >= 0 and len(found) < MAX_STATEMENTS:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            found.append(("hashes", pos, end, strip_lead_in(text[pos + 4 : end]).strip()))
            pos = text.find("####", end)
    if "closing" in kinds:
        found += [("closing", *closing) for closing in closing_phrases(text)]
    found.sort(key=lambda statement: statement[1])
    return found
