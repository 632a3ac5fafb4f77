"""Finding and reading the final answer in a completion (shared by the built-in rewards).

Three jobs, all cheap and linear in the length of the text, so they are safe on any
input a policy can produce:

* *extraction*: where the answer is — the last ``<answer>`` block, the last
  ``\\boxed{}``, the last ``####`` line, or the last number in the text;
* *reading a plain number*: ``"$1,234.50"``, ``"12 apples"``, ``"50%"``, ``"3/4"``,
  ``"\\frac{3}{4}"``, ``"1.5 \\times 10^{3}"`` become an exact :class:`~fractions.Fraction`
  without sympy, so numeric answers (GSM8K and the like) never pay for a CAS;
* *commitment*: whether the output stands by the answer found (:func:`context_refusal`,
  :func:`read_answer`, :func:`competing_answers`): not negated, questioned, retracted,
  hedged, bounded, one of a list, copied from the prompt, or contradicted by another
  final statement. A policy learns whatever a grader pays; these are the cheap ways to
  look right without committing to an answer.

Everything here is private to :mod:`rewardkit.builtin`; the rewards are the public API.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import pairwise
from typing import Any

#: longest text read as a plain number; longer "numbers" are spam, not answers
MAX_NUMBER_CHARS = 120


def tag_block(text: str, tag: str, first: bool = False) -> str | None:
    """Content of the last (or ``first``) complete ``<tag>...</tag>`` block, or None.

    >>> tag_block("<answer>1</answer> <answer> 2 </answer>", "answer")
    ' 2 '
    """
    span = _tag_span(text, tag, first)
    return None if span is None else text[span[0] + len(tag) + 2 : span[1] - len(tag) - 3]


def tag_blocks(text: str, tag: str) -> list[str]:
    """Contents of every complete ``<tag>...</tag>`` block, in order (at most
    ``_MAX_STATEMENTS``).

    >>> tag_blocks("<answer>1</answer> <answer> 2 </answer>", "answer")
    ['1', ' 2 ']
    """
    return [block for _, _, block in _tag_block_spans(text, tag)]


def _tag_block_spans(text: str, tag: str) -> list[tuple[int, int, str]]:
    """(start, end, contents) of every complete ``<tag>...</tag>`` block, in order (at
    most ``_MAX_STATEMENTS``); a block opened twice keeps what follows its last opener."""
    opener, closer = f"<{tag}>", f"</{tag}>"
    spans: list[tuple[int, int, str]] = []
    pos = text.find(opener)
    while pos >= 0 and len(spans) < _MAX_STATEMENTS:
        close = text.find(closer, pos + len(opener))
        if close < 0:
            break
        block = text[pos + len(opener) : close]
        block = block[block.rfind(opener) + len(opener) :] if opener in block else block
        spans.append((pos, close + len(closer), block))
        pos = text.find(opener, close + len(closer))
    return spans


def _tag_span(text: str, tag: str, first: bool = False) -> tuple[int, int] | None:
    """(start of the opener, end of the closer) of the last (or first) complete block."""
    opener, closer = f"<{tag}>", f"</{tag}>"
    if first:
        start = text.find(opener)
        close = text.find(closer, start + len(opener)) if start >= 0 else -1
        return (start, close + len(closer)) if close >= 0 else None
    close = text.rfind(closer)
    if close < 0:
        return None
    start = text.rfind(opener, 0, close)
    if start < 0:
        return None
    return start, close + len(closer)


def after_reasoning(text: str, tag: str) -> str | None:
    """What follows the last closing ``</tag>`` of a reasoning block (the part of a
    reasoning model's output that is its answer), or None when the reasoning never closes.

    >>> after_reasoning("<think>maybe 3</think> It is 4.", "think")
    ' It is 4.'
    """
    closer = f"</{tag}>"
    end = text.rfind(closer)
    return None if end < 0 else text[end + len(closer) :]


def boxed(text: str, first: bool = False) -> str | None:
    """Content of the last (or ``first``) ``\\boxed{...}`` (or ``\\fbox{...}``), braces
    balanced, or None.

    >>> boxed(r"so \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    """
    if first:
        found = [i for i in (text.find("\\boxed"), text.find("\\fbox")) if i >= 0]
        start = min(found) if found else -1
    else:
        start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    box = _box_at(text, start)
    return None if box is None else box[1]


def _box_at(text: str, start: int) -> tuple[int, str] | None:
    """(end, content) of the ``\\boxed`` / ``\\fbox`` that starts at ``start``."""
    i = text.index("{", start) if "{" in text[start : start + 8] else -1
    if i < 0:  # "\boxed 5": the next token
        rest = text[start:].split(None, 2)
        if len(rest) > 1 and rest[0] in ("\\boxed", "\\fbox"):
            return text.find(rest[1], start) + len(rest[1]), rest[1]
        return None
    depth = 0
    for j in range(i, len(text)):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return j + 1, text[i + 1 : j]
    return None


_LEAD_IN = re.compile(
    r"^\s*(?:(?:so|thus|therefore|hence),?\s+)?(?:the\s+)?(?:final\s+)?(?:answer|result)"
    r"\s*(?:is|=|:)?\s*:?\s*|^\s*[A-Za-z]\s*=\s*",
    re.IGNORECASE,
)


def strip_lead_in(answer: str) -> str:
    """Drop a lead-in such as ``The final answer is`` or ``x =`` from an answer."""
    if not answer.lstrip()[:1].isalpha():  # every lead-in starts with a letter ("#### 72")
        return answer
    return _LEAD_IN.sub("", answer, count=1)


def hashes_line(text: str, first: bool = False) -> str | None:
    """The rest of the line after the last (or ``first``) ``####``, lead-in phrase
    removed, or None.

    >>> hashes_line("so 8 + 4 = 12\\n#### The final answer is 12")
    '12'
    """
    pos = text.find("####") if first else text.rfind("####")
    if pos < 0:
        return None
    end = text.find("\n", pos)
    line = text[pos + 4 : end if end >= 0 else len(text)]
    return strip_lead_in(line).strip()


_NUMBER_TOKEN = re.compile(
    r"(?<![A-Za-z\d.])[-+]?\$?(?:\d{1,3}(?:(?:,|,\\!\s*|\{,\})\d{3})+(?:\.\d+)?"
    r"|\d+(?:\.\d+)?(?:/\d+)?|\.\d+)%?(?![A-Za-z]*\d)"
)
_NUMBER_TOKEN_DECIMAL_COMMA = re.compile(
    r"(?<![A-Za-z\d,])[-+]?\$?(?:\d{1,3}(?:[. ]\d{3})+(?:,\d+)?|\d+(?:,\d+)?)%?(?![A-Za-z]*\d)"
)


def last_number(text: str, first: bool = False, decimal_comma: bool = False) -> str | None:
    """The last (or ``first``) number-looking token in ``text`` (``1,234.5``, ``-3``,
    ``$40``, ``3/4``); digits glued into a word (``AZYUK2A``) are not a number, and a
    ``$`` span broken over lines is not read at all.

    >>> last_number("3 apples cost $1,200.50 in total.")
    '$1,200.50'
    >>> last_number("code AZYUK2A") is None
    True
    """
    match = _last_number_match(text, first, decimal_comma)
    return match.group(0) if match else None


def _last_number_match(text: str, first: bool = False,
                       decimal_comma: bool = False) -> re.Match[str] | None:
    """The match of :func:`last_number`; its positions are positions in ``text``."""
    token = _NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma else _NUMBER_TOKEN
    if _opens_broken_span(text):  # blanked to the same length: positions stay
        text = _BROKEN_SPAN.sub(lambda m: " " * len(m.group(0)), text)
    if first:
        return token.search(text)
    if "\\!" in text:  # a ",\\!" thin-space group may go on over a line break
        found = None
        for found in token.finditer(text):  # noqa: B007 - the loop keeps the last
            pass
        return found
    # every token holds a digit and none crosses a line break: the last token is on the
    # last line with a digit where one is found (a scan from a line start finds the same
    # tokens there as a scan of the whole text; the token regex is slow to scan, so only
    # those lines are)
    start = text.rfind("\n") + 1  # most often the last line has it
    found = None
    for found in token.finditer(text, start):  # noqa: B007
        pass
    if found is not None:
        return found
    end = start
    for _ in range(_LINES_TRIED):
        if not end:
            return None
        digit = max([text.rfind(d, 0, end) for d in _DIGITS])
        if digit < 0:
            return None
        start = text.rfind("\n", 0, digit) + 1
        stop = text.find("\n", digit)
        found = None
        for found in token.finditer(text, start, len(text) if stop < 0 else stop):  # noqa: B007
            pass
        if found is not None:
            return found
        end = start
    found = None  # lines of digits glued into words: scan the rest once
    for found in token.finditer(text, 0, end):  # noqa: B007
        pass
    return found


#: lines with a digit but no number searched from the end before scanning the rest whole
_LINES_TRIED = 4
_DIGITS = "0123456789"


def _opens_broken_span(text: str) -> bool:
    """Whether ``text`` has a ``$`` or ``\\(`` followed by blanks and a line break (what
    every broken span starts with; found with plain string searches, cheaply)."""
    for opener in ("$", "\\("):
        pos = text.find(opener)
        while pos >= 0:
            if _BLANKS_TO_EOL.match(text, pos + len(opener)):
                return True
            pos = text.find(opener, pos + 1)
    return False


_BLANKS_TO_EOL = re.compile(r"[ \t]*\n")


#: an inline ``$ ... $`` or ``\( ... \)`` whose content starts on a new line: not TeX math
#: (inline math cannot span paragraphs), so nothing inside it is an answer
_BROKEN_SPAN = re.compile(r"(?<![$\\])\$[ \t]*\n[^$]{0,1000}?\n[ \t]*\$(?!\$)"
                          r"|\\\([ \t]*\n.{0,1000}?\n[ \t]*\\\)", re.DOTALL)

#: GSM8K calculator notes: ``$<<30*3=90>>90`` is ``$90`` to a reader
_CALCULATOR_NOTE = re.compile(r"<<[^<>\n]{0,200}>>")


def strip_calculator_notes(text: str) -> str:
    """``text`` without GSM8K calculator notes (``<<30*3=90>>``).

    >>> strip_calculator_notes("so 30*3 = $<<30*3=90>>90")
    'so 30*3 = $90'
    """
    return _CALCULATOR_NOTE.sub("", text) if "<<" in text else text


#: closing phrases, lower case; a line ``A: 18`` or ``Answer: 18``, or ``answer is 18``
_CLOSING_KEYS = ("answer is", "answer:", "\na:")
_CLOSING_REST = re.compile(
    r"\s*:?[ \t]*([^\n]{1,300}?)[ \t]*(?:\.[ \t]*(?:\n|\Z)|\.\s+(?=[A-Z])|\n|\Z)")


def closing_answer(text: str, first: bool = False) -> str | None:
    """What follows the last (or ``first``) closing phrase of a solution: a line
    ``A: 18`` / ``Answer: 18`` / ``Final Answer: ...``, or ``The (final) answer is 18``,
    up to the end of that sentence. A plain string search, then one anchored match.

    >>> closing_answer("so she makes $18\\nA: 18")
    '18'
    >>> closing_answer("Thus the answer is: 6. I hope it is correct.")
    '6'
    """
    found = _closing(text, first)
    return found[2] if found else None


def _closing(text: str, first: bool = False) -> tuple[int, int, str] | None:
    """(where the answer starts, where it ends, the answer) of the last (or first)
    closing phrase."""
    low = text.lower()
    best = -1
    for key in _CLOSING_KEYS:
        pos = low.find(key) if first else low.rfind(key)
        if pos >= 0 and key == "answer is" and low[pos + 9 : pos + 10].isalpha():
            pos = -1  # "the answer isn't"
        if pos >= 0 and (best < 0 or (pos < best if first else pos + len(key) > best)):
            best = pos + len(key)
    if best < 0 and low.startswith("a:"):
        best = 2
    if best < 0:
        return None
    match = _CLOSING_REST.match(text, best)
    return (best, match.end(1), match.group(1).strip()) if match else None


def _closings(text: str) -> list[tuple[int, int, str]]:
    """(start, end, answer) of every closing phrase of ``text`` (at most
    ``_MAX_STATEMENTS``)."""
    low = text.lower()
    found: list[tuple[int, int, str]] = []
    for key in _CLOSING_KEYS:
        pos = low.find(key)
        while pos >= 0 and len(found) < _MAX_STATEMENTS:
            if not (key == "answer is" and low[pos + 9 : pos + 10].isalpha()):
                match = _CLOSING_REST.match(text, pos + len(key))
                if match:
                    found.append((pos + len(key), match.end(1), match.group(1).strip()))
            pos = low.find(key, pos + 1)
    if low.startswith("a:"):
        match = _CLOSING_REST.match(text, 2)
        if match:
            found.append((2, match.end(1), match.group(1).strip()))
    return found


#: a whole output that is only an answer: no word of two or more letters outside a LaTeX
#: command, short
_BARE_ANSWER_MAX = 100
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")


def bare_answer(text: str) -> str | None:
    """The whole output when it is nothing but an answer (``\\frac{3}{4}``, ``x = 3``,
    ``1,000``), else None.

    >>> bare_answer(" x = -2 ")
    '-2'
    >>> bare_answer("the answer is 2") is None
    True
    """
    stripped = text.strip()
    if not stripped or len(stripped) > _BARE_ANSWER_MAX or _WORD.search(stripped):
        return None
    return strip_lead_in(stripped).strip()


_MAX_SPAN = 1000
#: a unit or remark in a math span (``\\frac{1}{3} \\text{meters}``) is not prose
_TEXT_ARG = re.compile(r"\\(?:text|textbf|mathrm|mbox|textnormal)\s*\{[^{}]*\}")


def _math_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of the math spans of ``text``, in order; linear time.

    ``$...$`` pairs are taken left to right and must hug their content (TeX style, so
    "costs $5 and $6" is currency, not math); ``$$...$$``, ``\\(...\\)`` and
    ``\\[...\\]`` pair with the next closer. Spans over 1000 characters are ignored."""
    spans: list[tuple[int, int, str]] = []
    for opener, closer in (("\\(", "\\)"), ("\\[", "\\]")):
        pos = text.find(opener)
        while pos >= 0:
            end = text.find(closer, pos + 2)
            if end < 0:
                break
            inline_broken = opener == "\\(" and "\n" in text[pos + 2 : end].strip(" \t")
            if end - pos - 2 <= _MAX_SPAN and not inline_broken:
                spans.append((pos, end + 2, text[pos + 2 : end]))
            pos = text.find(opener, end + 2)
    dollars = _dollars(text)
    k = 0
    while k + 1 < len(dollars):
        a, b = dollars[k], dollars[k + 1]
        if b == a + 1:  # "$$": display math up to the next "$$"
            close = next((m for m in range(k + 2, len(dollars) - 1)
                          if dollars[m + 1] == dollars[m] + 1), None)
            if close is None:
                break
            content = text[a + 2 : dollars[close]]
            if len(content) <= _MAX_SPAN:
                spans.append((a, dollars[close] + 2, content))
            k = close + 2
            continue
        content = text[a + 1 : b]
        hugs = content[:1].strip() and content[-1:].strip() and not text[b + 1 : b + 2].isdigit()
        # "$ \frac{1}{2} $" is math even with spaces; "$ \n 9 \n $" is not (inline math
        # stays within a paragraph)
        hugs = (hugs or "\\" in content) and "\n" not in content.strip(" \t")
        if hugs and len(content) <= _MAX_SPAN:
            spans.append((a, b + 1, content))
            k += 2
        else:
            k += 1
    spans.sort()
    return spans


def _dollars(text: str) -> list[int]:
    """Positions of the ``$`` signs of ``text`` not escaped as ``\\$``."""
    found = []
    pos = text.find("$")
    while pos >= 0:
        if not pos or text[pos - 1] != "\\":
            found.append(pos)
        pos = text.find("$", pos + 1)
    return found


def math_span(text: str, first: bool = False) -> str | None:
    """Content of the last (or ``first``) ``$...$``, ``$$...$$``, ``\\(...\\)`` or
    ``\\[...\\]`` span that holds math (no words), lead-in removed.

    >>> math_span(r"We get $x^2$, so the answer is $\\frac{1}{2}$.")
    '\\\\frac{1}{2}'
    >>> math_span("It costs $5 and then $6 more.") is None
    True
    """
    span = _math_span(text, first)
    return None if span is None else strip_lead_in(span[2]).strip()


def _math_span(text: str, first: bool = False) -> tuple[int, int, str] | None:
    spans = [span for span in _math_spans(text)
             if not _WORD.search(_TEXT_ARG.sub(" ", span[2]))]
    if not spans:
        return None
    return spans[0] if first else spans[-1]


#: strategies that would read a calculator note as an answer (the others never look there)
_READS_NOTES = frozenset({"closing", "bare", "math_span", "last_number"})
#: strategies that read a stated final answer (the others fall back on what the text holds)
STATEMENTS = ("answer_tag", "boxed", "hashes", "closing")
#: the most final statements of one output compared with each other
_MAX_STATEMENTS = 200


@dataclass(frozen=True, slots=True)
class Found:
    """An answer a strategy found: ``answer`` (stripped; empty for an empty box or
    answer block), and where it stands, ``text[start:end]``, in ``text``, the text that
    strategy read (calculator notes are removed for some)."""

    how: str
    answer: str
    text: str
    start: int
    end: int


def extract(
    text: str,
    order: Sequence[str],
    answer_tag: str,
    first: bool = False,
    decimal_comma: bool = False,
) -> Found | None:
    """Try the strategies in ``order``; the first that finds something decides.
    Strategies: ``answer_tag``, ``boxed``, ``hashes``, ``closing`` (``A: 18``, ``The
    answer is 18``), ``bare`` (the whole output is just an answer), ``math_span`` (last
    ``$...$``), ``last_number``; each takes the last occurrence, or the first with
    ``first``. GSM8K calculator notes (``<<3*4=12>>``) are not read. An empty answer
    block or box decides too: the output stated its answer there, and it is empty."""
    stripped = False
    for how in order:
        if not stripped and how in _READS_NOTES:
            text, stripped = strip_calculator_notes(text), True
        found = _find(how, text, answer_tag, first, decimal_comma)
        if found is not None:
            return found
    return None


def _find(how: str, text: str, answer_tag: str, first: bool,
          decimal_comma: bool) -> Found | None:
    if how == "answer_tag":
        if f"</{answer_tag}>" not in text:  # the plain searches skip most strategies
            return None
        span = _tag_span(text, answer_tag, first)
        if span is None:
            return None
        block = text[span[0] + len(answer_tag) + 2 : span[1] - len(answer_tag) - 3]
        inner = boxed(block)  # "<answer>\boxed{3}</answer>" is common
        answer = strip_lead_in(inner if inner is not None else block).strip()
        return Found(how, answer, text, span[0], span[1])
    if how == "boxed":
        if "\\boxed" not in text and "\\fbox" not in text:
            return None
        if first:
            starts = [i for i in (text.find("\\boxed"), text.find("\\fbox")) if i >= 0]
            start = min(starts) if starts else -1
        else:
            start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
        box = _box_at(text, start)
        if box is None:
            return None
        if not first:  # boxed steps, then "Final Answer: ..."
            closing = _closing(text)
            if closing is not None and closing[0] > start and closing[2]:
                return Found("closing", closing[2], text, closing[0], closing[1])
        return Found(how, box[1].strip(), text, start, box[0])
    if how == "hashes":
        if "####" not in text:
            return None
        pos = text.find("####") if first else text.rfind("####")
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        answer = strip_lead_in(text[pos + 4 : end]).strip()
        return Found(how, answer, text, pos, end) if answer else None
    if how == "closing":
        closing = _closing(text, first)
        if closing is None or not closing[2]:
            return None
        return Found(how, closing[2], text, closing[0], closing[1])
    if how == "bare":
        bare = bare_answer(text)
        return Found(how, bare.strip(), text, 0, len(text)) if bare else None
    if how == "math_span":
        spanned = _math_span(text, first)
        if spanned is None:
            return None
        answer = strip_lead_in(spanned[2]).strip()
        return Found(how, answer, text, spanned[0], spanned[1]) if answer else None
    if how == "last_number":
        match = _last_number_match(text, first, decimal_comma)
        if match is None:
            return None
        scale = _SCALE_AFTER.match(text, match.end())  # "18 million": the scale is the value's
        end = scale.end() if scale else match.end()
        return Found(how, text[match.start() : end].strip(), text, match.start(), end)
    raise ValueError(f"unknown extraction strategy {how!r}")  # pragma: no cover


# -- commitment: is a found answer one the output stands by? ---------------------------
#: a negation right before an answer: "not 18", "isn't \boxed{18}", "\neq 18"
_NEGATED = re.compile(
    r"(?:(?<![A-Za-z])not|(?<![A-Za-z])never|n['’]t|≠|\\neq?)\s*(?:(?:be|equal|equals|to|"
    r"exactly|just|simply|the|a|an|definitely|actually|really|quite|even|answer|is|it|of|"
    r"that|at\s+all)\s*){0,3}[\s$({\[\\]*(?:boxed|fbox)?\s*\{?$", re.IGNORECASE)
#: an answer whose own sentence ends in a question mark
_QUESTIONED = re.compile(r"[^.!?\n]{0,30}\?")
#: what withdraws an answer stated before it
_GIVES_UP = (
    r"(?:i|we)\s+(?:cannot|can['’]t|can\s+not|could\s+not|couldn['’]t|am\s+unable\s+to|are\s+"
    r"unable\s+to|was\s+unable\s+to|do\s+not|don['’]t)\s+(?:solve|answer|determine|figure|"
    r"find|know|tell|say|be\s+sure)"
    r"|not\s+(?:sure|certain|confident)(?![A-Za-z])|unsure|no\s+idea"
    r"|(?:i|we)\s*(?:am|are|['’]m|['’]re)\s+(?:just\s+)?guessing|just\s+(?:a\s+)?guess|random\s+"
    r"guess")
_RETRACTION = re.compile(
    r"(?<![A-Za-z])(?:(?:that|this|it|which|the\s+above|my\s+answer|the\s+answer)"
    r"(?:['’]s|\s+is|\s+was|\s+(?:may|might|must|could)\s+be)\s+(?:(?:definitely|probably|"
    r"clearly|all|completely)\s+)?(?:wrong|incorrect|not\s+(?:right|correct))"
    r"|scratch\s+that|disregard|ignore\s+(?:that|this|it|the\s+above|my)|never\s?mind"
    r"|on\s+second\s+thought|take\s+(?:that|it)\s+back|(?:i|we)\s+made\s+(?:a|an)\s+"
    r"(?:mistake|error)|" + _GIVES_UP + ")",
    re.IGNORECASE)
#: the output says it has no answer ("I do not know how to solve this"): then a number
#: read from its text is not one
_NO_ANSWER = re.compile(r"(?<![A-Za-z])(?:" + _GIVES_UP + ")", re.IGNORECASE)
#: an answer called wrong right after it: "\boxed{18} is wrong", "18 is not the answer"
_REFUTED = re.compile(r"[\s$)}\]]*(?:is|was|seems)\s+(?:(?:definitely|probably|clearly)\s+)?"
                      r"(?:wrong|incorrect|not\s+(?:right|correct|the\s+(?:final\s+)?answer))",
                      re.IGNORECASE)
#: words that make an answer several values, or none: "17 or 18", "maybe 18", "±5"
_HEDGE = re.compile(
    r"(?<![\\A-Za-z])(?:or|either|maybe|perhaps|possibly|guess)(?![A-Za-z])|\\pm|\\mp|±"
    r"|\\lor(?![A-Za-z])|\\vee(?![A-Za-z])",
    re.IGNORECASE)
#: a bound is not a value: "at least 18", "more than 18", "between 17 and 18", "\geq 18"
_BOUND = re.compile(
    r"(?<![\\A-Za-z])(?:at\s+(?:least|most)|(?:more|less|fewer|greater|smaller)\s+than|up"
    r"\s+to|between|no\s+(?:more|less|fewer)\s+than)(?![A-Za-z])|\\[lg]eq?(?![A-Za-z])|[≤≥]",
    re.IGNORECASE)
#: what may stand between the values of a list ("16, 17, 18", "17 and 18", "1 2 3")
_LIST_GAP = re.compile(r"(?:[\s;&/\-–]|[,.](?=\s)|\\quad|\\qquad|\\text\{\s*(?:and|to)?\s*\}|"
                       r"(?<![A-Za-z])(?:and|to|through|then)(?![A-Za-z]))+", re.IGNORECASE)
_SCALE_AFTER = re.compile(r"[ \t]*(?:hundred|thousand|million|billion|trillion|dozen)s?"
                          r"(?![A-Za-z])", re.IGNORECASE)
#: a chat template's turn marker (``<|im_end|>``): nothing after it is the answer
_TURN_END = re.compile(r"<\|[A-Za-z_]+\|>|</s>")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")


def context_refusal(found: Found, first: bool = False, prompt: str = "") -> str:
    """Why the output does not stand by ``found`` (empty when it does): it is empty,
    negated ("not 18"), questioned ("18?"), withdrawn after it ("18. Wait, that is
    wrong"), or copied from the prompt; and for a number read from the text without a
    stated answer (``last_number``, ``math_span``): not where the output ends, hedged, or
    one of a list. Linear in the length of the text."""
    if not found.answer:
        return "the answer is empty"
    text = found.text
    if _negated(text, found.start):
        return "the answer is negated"
    if _QUESTIONED.match(text, found.end):
        return "the answer is a question"
    stop = _next_question(text, found.end) if first else len(text)
    if found.end < stop and (_RETRACTION.search(text, found.end, stop)
                             or _REFUTED.match(text, found.end)):
        return "the answer is retracted after it is given"
    if prompt and _copied(found.answer, prompt):
        return "the answer is copied from the prompt"
    if found.how in ("last_number", "math_span"):
        return _fallback_refusal(found, first, prompt)
    return ""


#: where a few-shot base model starts inventing the next question
_NEXT_QUESTION = re.compile(r"\n[ \t]*\n|\n[ \t]*(?:Q|Question|Problem)[ \t]*(?:\d+[ \t]*)?[:.]",
                            re.IGNORECASE)


def _next_question(text: str, start: int) -> int:
    """Where the output goes on to a next question after ``start`` (a blank line or a
    ``Q:`` / ``Question:`` line), or its end."""
    match = _NEXT_QUESTION.search(text, start)
    return match.start() if match else len(text)


def _negated(text: str, start: int) -> bool:
    """Whether a negation stands right before ``text[start:]`` ("not 18")."""
    window = text[max(0, start - 80) : start]
    low = window.lower()  # most often there is no negation at all: plain searches
    if not ("not" in low or "never" in low or "n't" in low or "n’t" in low or "≠" in low
            or "\\ne" in low):
        return False
    return _NEGATED.search(window) is not None


def _copied(answer: str, prompt: str) -> bool:
    """A sentence of the prompt given back as the answer ("18 apples" is not one)."""
    words = " ".join(answer.split())
    return len(words) >= 20 and _WORD.search(words) is not None and words in " ".join(
        prompt.split())


#: the refusal of a number read from the text when a later number follows it: the next
#: strategy in the order reads on (``math_span`` gives way to ``last_number``)
SUPERSEDED = "a number follows it: not the final answer"


def _fallback_refusal(found: Found, first: bool, prompt: str) -> str:
    """Why a number read from the text is not a final answer: a later number follows it
    (:data:`SUPERSEDED`), the output ends in a question, its sentence hedges, it is one
    of a list of numbers, or its sentence was copied from the prompt."""
    text = found.text
    begin = max((m.end() for m in _SENTENCE_END.finditer(text, max(0, found.start - 2000),
                                                         found.start)), default=0)
    end_match = _SENTENCE_END.search(text, found.end)
    end = end_match.end() if end_match else len(text)
    sentence = text[begin:end]
    if not first:
        turn = _TURN_END.search(text, found.end)
        rest = text[found.end : turn.start() if turn else len(text)]
        if found.how == "math_span" and _NUMBER_TOKEN.search(rest):
            return SUPERSEDED
        if rest.rstrip().endswith("?"):
            return "no final answer: the output ends in a question"
    if _NO_ANSWER.search(text, 0, found.start):
        return "no final answer: the output says it cannot answer"
    if _HEDGE.search(sentence):
        return "the last sentence hedges between values"
    if _listed(text, sentence, found):
        return "a list of numbers, not an answer"
    if prompt and _copied(sentence, prompt):
        return "the last sentence is copied from the prompt"
    return ""


def _listed(text: str, sentence: str, found: Found) -> bool:
    """The number is one of a list: its sentence is numbers only, or its line repeats the
    line before with another number ("Candidate: 17" / "Candidate: 18")."""
    token = _NUMBER_TOKEN
    numbers = token.findall(sentence)
    if len(set(numbers)) >= 2 and not _WORD.search(sentence) and not re.search(
            r"[=+*×^]|\\times|\\cdot", sentence):
        return True
    line_start = text.rfind("\n", 0, found.start) + 1
    line_end = text.find("\n", found.start)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    before = text[: max(0, line_start - 1)].rstrip("\n")
    previous = before[before.rfind("\n") + 1 :]
    if not previous.strip() or previous == line:
        return False
    return token.sub("#", previous).strip() == token.sub("#", line).strip()


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
    number = read_number(answer, decimal_comma)
    if number is not None:
        return number
    if not answer.strip():
        return "the answer is empty"
    words = _TEXT_CMD.sub(lambda t: " " + t.group(1) + " ", answer)
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
    token = _NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma else _NUMBER_TOKEN
    tokens = list(token.finditer(answer))
    if not tokens or not prose:
        return None
    kept = [t for t in tokens if not _negated(answer, t.start())]
    if not kept:
        return "the answer is negated"
    prose = _WORD.search(_TEXT_ARG.sub(" ", answer)) is not None
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
        scale = _SCALE_AFTER.match(answer, t.end())
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


def hedged(answer: str) -> bool:
    """Whether an answer hedges between values: ``17 or 18``, ``maybe 18``, ``18 \\pm 1``,
    ``17 \\text{ or } 18``."""
    return _HEDGE.search(_TEXT_CMD.sub(lambda t: " " + t.group(1) + " ", answer)) is not None


def competing_answers(found: Found, order: Sequence[str], answer_tag: str,
                      decimal_comma: bool = False, first: bool = False) -> list[PlainNumber]:
    """The plain-number values of :func:`competing_statements`. An output that stands by
    two different values has hedged."""
    values = []
    for _, answer in competing_statements(found, order, answer_tag, first):
        value = read_answer(answer, decimal_comma)
        if isinstance(value, PlainNumber):
            values.append(value)
    return values


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
    kinds = _kinds(tuple(order))
    if _statement_marks(text, kinds, answer_tag) < 2:  # the common case: found is the only one
        return []
    statements = _statements(text, kinds, answer_tag)
    others = []
    for i, (how, start, end, answer) in enumerate(statements):
        if start == found.start or not answer:
            continue
        if how != found.how and start < found.end and (how != "boxed" or _ends_equation(
                text, start)):
            continue  # "$3 \cdot 4 = \boxed{12}$, ... The final answer is 84": a step
        stop = statements[i + 1][1] if i + 1 < len(statements) else len(text)
        if (_negated(text, start) or _QUESTIONED.match(text, end) or _REFUTED.match(text, end)
                or _RETRACTION.search(text, end, stop)):
            continue
        others.append((how, answer))
    return others


@lru_cache(maxsize=64)
def _kinds(order: tuple[str, ...]) -> tuple[str, ...]:
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


def _statement_marks(text: str, kinds: Sequence[str], answer_tag: str) -> int:
    """How many final statements ``text`` may hold, counted up to 2 (plain counts: cheap;
    never fewer than there are)."""
    markers, closing = _markers(tuple(kinds), answer_tag)
    marks = 0
    for marker in markers:
        marks += text.count(marker)
        if marks >= 2:
            return marks
    if closing:
        low = text.lower()
        marks += low.startswith("a:")
        for key in _CLOSING_KEYS:
            marks += low.count(key)
    return marks


@lru_cache(maxsize=64)
def _markers(kinds: tuple[str, ...], answer_tag: str) -> tuple[tuple[str, ...], bool]:
    """The plain marks of the statement kinds, and whether closing phrases count."""
    markers: list[str] = []
    if "answer_tag" in kinds:
        markers.append(f"</{answer_tag}>")
    if "boxed" in kinds:
        markers += ["\\boxed", "\\fbox"]
    if "hashes" in kinds:
        markers.append("####")
    return tuple(markers), "closing" in kinds


def _statements(text: str, kinds: Sequence[str],
                answer_tag: str) -> list[tuple[str, int, int, str]]:
    """(kind, start, end, answer) of every final statement of the given kinds, in text
    order."""
    found: list[tuple[str, int, int, str]] = []
    if "answer_tag" in kinds:
        for start, end, block in _tag_block_spans(text, answer_tag):
            inner = boxed(block)
            found.append(("answer_tag", start, end,
                          strip_lead_in(inner if inner is not None else block).strip()))
    if "boxed" in kinds:
        for name in ("\\boxed", "\\fbox"):
            pos = text.find(name)
            while pos >= 0 and len(found) < _MAX_STATEMENTS:
                box = _box_at(text, pos)
                if box is not None:
                    found.append(("boxed", pos, box[0], box[1].strip()))
                pos = text.find(name, pos + len(name))
    if "hashes" in kinds:
        pos = text.find("####")
        while pos >= 0 and len(found) < _MAX_STATEMENTS:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            found.append(("hashes", pos, end, strip_lead_in(text[pos + 4 : end]).strip()))
            pos = text.find("####", end)
    if "closing" in kinds:
        found += [("closing", *closing) for closing in _closings(text)]
    found.sort(key=lambda statement: statement[1])
    return found


# -- plain numbers ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PlainNumber:
    """A number read without a CAS; ``percent`` when it was written with ``%``."""

    value: Fraction | int  # an int when it is one: cheaper than Fraction(n, 1)
    percent: bool = False

    def candidates(self) -> tuple[Fraction | int, ...]:
        """Values the answer may stand for: ``50%`` is 50 (GSM8K style) or 0.5."""
        if self.percent:
            return (self.value, Fraction(self.value) / 100)
        return (self.value,)


_DELIMITED = re.compile(r"^(?:\$\$(.*)\$\$|\$(.*)\$|\\\((.*)\\\)|\\\[(.*)\\\])$", re.DOTALL)
_TEXT_CMD = re.compile(r"\\(?:text|mathrm|textbf|mbox|textnormal|operatorname)\s*\{([^{}]*)\}")
_LATEX_NOISE = re.compile(r"\\[,!;: ]|\\left|\\right|\\displaystyle|~")
_DEGREES = re.compile(r"\^\s*\{?\\circ\}?|°")
_UNIT_WORDS = re.compile(
    r"(?:\s+[A-Za-z][A-Za-z'./-]*)+\s*$|(?<=\d)[A-Za-z]{2,}(?:/[A-Za-z]+)?\s*$"
)
#: words after a number that make it another value: part of the number, not its unit
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9,
           "trillion": 10**12, "dozen": 12}
_SCALE_WORD = re.compile(r"(?<=[\d.])\s*(hundred|thousand|million|billion|trillion|dozen)s?"
                         r"(?![A-Za-z])", re.IGNORECASE)
#: words after a number that make it a bound, a range or several values, not a unit
_QUALIFIER = re.compile(
    r"(?<![A-Za-z])(?:or|and|to|nor|than|least|most|not|plus|minus|maybe|perhaps|possibly|"
    r"over|under|up)(?![A-Za-z])", re.IGNORECASE)
_PERCENT_WORD = re.compile(r"\s*(?:%|percent|per\s*cent)\s*$", re.IGNORECASE)
_CURRENCY = re.compile(r"^([-+]?)\s*(?:\$|€|£|¥|₹|USD|EUR|Rs\.?)\s*", re.IGNORECASE)
_DECIMAL = re.compile(
    r"[-+]?(?:[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?"
)
_INTEGER = re.compile(r"[-+]?\d{1,100}")
_GROUPED_INTEGER = re.compile(r"[-+]?[1-9]\d{0,2}(?:,\d{3}){1,30}")
_SPACED_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?: \d{3})+(?:\.\d+)?")
_THOUSANDS_GAP = re.compile(r"\s+")
_THIN_SPACE_GROUP = re.compile(r"(?<=\d),\\!\s*(?=\d{3})")
_DECIMAL_COMMA = re.compile(r"[-+]?(?:[1-9]\d{0,2}(?:[. ]\d{3})+|\d+)(?:,\d+)?")
_SLASH = re.compile(r"([-+]?\d+)\s*/\s*(\d+)")
_FRAC = re.compile(r"([-+]?)\\frac\s*(?:\{\s*([-+]?\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))")
_SCI = re.compile(r"(.+?)\s*(?:\\times|\\cdot|×|\*)\s*10\s*\^\s*\{?\s*([-+]?\d{1,3})\s*\}?")


def normalise(answer: str) -> str:
    """An answer with the decoration that does not change its value removed: math
    delimiters, ``\\text{}`` units, LaTeX spacing, degrees, a trailing full stop,
    currency signs (percent and unit words are handled by :func:`read_number`)."""
    s = answer.strip()
    m = _DELIMITED.match(s)
    if m:
        s = next(g for g in m.groups() if g is not None).strip()
    single_box = s.count("\\boxed") + s.count("\\fbox") == 1
    inner = boxed(s) if single_box and s.startswith(("\\boxed", "\\fbox")) else None
    if inner is not None:
        s = inner.strip()
    s = s.replace("\\$", "$").replace("\\%", "%").replace("{,}", ",")
    if ",\\!" in s:  # "11,\\! 111,\\! 100"
        s = _THIN_SPACE_GROUP.sub(",", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = _TEXT_CMD.sub(lambda t: " " + t.group(1), s)
    s = _LATEX_NOISE.sub(" ", s)
    s = _DEGREES.sub("", s)
    s = s.strip().rstrip(".").strip()
    return _CURRENCY.sub(lambda c: c.group(1), s)


@lru_cache(maxsize=16384)  # answers repeat within a group; PlainNumber is immutable
def read_number(answer: str, decimal_comma: bool = False) -> PlainNumber | None:
    """The value of ``answer`` when it is a plain number, else None (then it is a case for
    symbolic comparison). Never imports sympy; bounded work on any input.

    >>> read_number("$1,234.50").value
    Fraction(2469, 2)
    >>> read_number("x^2") is None
    True
    """
    if len(answer) > 4 * MAX_NUMBER_CHARS:
        return None
    if _INTEGER.fullmatch(answer):  # the common cases, at a fraction of the cost
        return PlainNumber(int(answer))
    if not decimal_comma and _GROUPED_INTEGER.fullmatch(answer):
        return PlainNumber(int(answer.replace(",", "")))
    s = normalise(answer)
    scale = _SCALE_WORD.search(s)  # "18 thousand" is 18000, "18 dozen eggs" 216
    if scale:
        s = s[: scale.start()] + s[scale.end() :]
    percent = False
    m = _PERCENT_WORD.search(s)
    if m:
        percent = True
        s = s[: m.start()].rstrip()
    else:
        units = _UNIT_WORDS.search(s)
        if units:
            if _QUALIFIER.search(units.group(0)):  # "18 or more" is not 18
                return None
            s = s[: units.start()].strip()
        m = _PERCENT_WORD.search(s)
        if m:  # "50 % of them"
            percent = True
            s = s[: m.start()].rstrip()
    s = _CURRENCY.sub(lambda c: c.group(1), s)
    if not s or len(s) > MAX_NUMBER_CHARS:
        return None
    if decimal_comma and _DECIMAL_COMMA.fullmatch(s):
        s = s.replace(".", "").replace(" ", "").replace(",", ".")
    elif _SPACED_THOUSANDS.fullmatch(s):  # "1 000"
        s = _THOUSANDS_GAP.sub("", s)
    value = _exact_value(s)
    if value is None:
        return None
    if scale:
        scaled = value * _SCALES[scale.group(1).lower()]
        return PlainNumber(int(scaled) if scaled.denominator == 1 else scaled, percent)
    return PlainNumber(value, percent)


def _exact_value(s: str) -> Fraction | None:
    if _DECIMAL.fullmatch(s):
        return Fraction(s.replace(",", ""))
    m = _SLASH.fullmatch(s)
    if m:
        num, den = int(m.group(1)), int(m.group(2))
        return Fraction(num, den) if den else None
    m = _FRAC.fullmatch(s)
    if m:
        sign, num_braced, num_digit, den_braced, den_digit = m.groups()
        num = int(num_braced or num_digit)
        den = int(den_braced or den_digit)
        if not den:
            return None
        return Fraction(-num if sign == "-" else num, den)
    m = _SCI.fullmatch(s)
    if m and _DECIMAL.fullmatch(m.group(1).strip()):
        return Fraction(m.group(1).strip().replace(",", "")) * Fraction(10) ** int(m.group(2))
    return None


#: the relative tolerance for decimals when the user sets none
DEFAULT_REL_TOL = 1e-9


def numbers_match(gold: PlainNumber, pred: PlainNumber, abs_tol: float,
                  rel_tol: float | None) -> bool:
    """True when some reading of ``pred`` is within tolerance of some reading of ``gold``
    (``|p - g| <= max(abs_tol, rel_tol * |g|)``, exact arithmetic). ``rel_tol=None``
    (unset) is :data:`DEFAULT_REL_TOL` for decimals and none for two whole numbers, which
    are then within ``abs_tol`` only (1000000000001 is not 10^12); a tolerance the user
    set applies to whole numbers too."""
    if not (gold.percent or pred.percent):
        if gold.value == pred.value:
            return True
        g, p = gold.value, pred.value
        if g.denominator == 1 and p.denominator == 1:  # the common case, without Fractions
            whole_tol = abs_tol if rel_tol is None else max(abs_tol, rel_tol * abs(g.numerator))
            return abs(p.numerator - g.numerator) <= whole_tol
    a, r = _tolerances(abs_tol, DEFAULT_REL_TOL if rel_tol is None else rel_tol)
    return any(
        abs(Fraction(p) - g) <= max(a, r * abs(Fraction(g)))
        for g in gold.candidates() for p in pred.candidates()
    )


@lru_cache(maxsize=32)
def _tolerances(abs_tol: float, rel_tol: float) -> tuple[Fraction, Fraction]:
    return Fraction(abs_tol), Fraction(rel_tol)


def reference_text(reference: Any) -> str | None:
    """The gold answer as text: numbers as written, a GSM8K solution reduced to what
    follows its ``####``, a one-item list to its item; None when there is none."""
    if reference is None:
        return None
    if isinstance(reference, bool):
        return str(reference)
    if isinstance(reference, int | float | Fraction):
        return repr(reference) if isinstance(reference, float) else str(reference)
    if isinstance(reference, list | tuple) and len(reference) == 1:
        return reference_text(reference[0])
    if isinstance(reference, dict):
        for key in ("answer", "solution", "reference"):
            if key in reference:
                return reference_text(reference[key])
        return None
    text = str(reference)
    if "####" in text:
        found = hashes_line(text)
        if found:
            return found
    return text.strip() or None
