"""Finding the final answer in a completion (shared by the built-in rewards).

*Extraction*: where the answer is: the last ``<answer>`` block, the last ``\\boxed{}``,
the last ``####`` line, a closing phrase (``The answer is 18``), the whole output when it
is just an answer, the last ``$...$`` span, or the last number in the text
(:func:`extract`, which returns a :class:`Found`), and the gold answer of a sample as
text (:func:`reference_text`). All cheap and linear in the length of the text, so safe
on any input a policy can produce. The neighbouring modules hold the rest of reading an
answer: :mod:`~rewardkit.builtin._tag_blocks` (tag blocks),
:mod:`~rewardkit.builtin.math.numbers` (a plain number read exactly, without sympy)
and :mod:`~rewardkit.builtin.math.commitment` (whether the output stands by the answer found).

Everything here is private to :mod:`rewardkit.builtin`; the rewards are the public API.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rewardkit.builtin._tag_blocks import MAX_STATEMENTS, tag_span


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
    box = box_at(text, start)
    return None if box is None else box[1]


def box_at(text: str, start: int) -> tuple[int, str] | None:
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


ANSWER_LEAD_IN = re.compile(
    r"^\s*(?:(?:so|thus|therefore|hence),?\s+)?(?:the\s+)?(?:final\s+)?(?:answer|result)"
    r"\s*(?:is|=|:)?\s*:?\s*|^\s*[A-Za-z]\s*=\s*",
    re.IGNORECASE,
)


def strip_lead_in(answer: str) -> str:
    """Drop a lead-in such as ``The final answer is`` or ``x =`` from an answer."""
    if not answer.lstrip()[:1].isalpha():  # every lead-in starts with a letter ("#### 72")
        return answer
    return ANSWER_LEAD_IN.sub("", answer, count=1)


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


#: a number in prose; a decimal comma where it cannot be a list or thousands (``2,74``: one
#: comma, no comma before it, fewer than three digits after it) is one number. Each token
#: starts with a sign, ``$``, a digit or a point: the look-ahead that says so first lets
#: ``re`` give up at every other position at once (a scan is about twice as fast; the
#: tokens are the same: tests/builtin/test_math_scan_rewrites.py)
NUMBER_TOKEN = re.compile(
    r"(?=[-+$\d.])(?<![A-Za-z\d.])[-+]?\$?(?:\d{1,3}(?:(?:,|,\\!\s*|\{,\})\d{3})+(?:\.\d+)?"
    r"|(?<!\d,)\d+,\d{1,2}(?![\d,]|\.\d)|\d+(?:\.\d+)?(?:/\d+)?|\.\d+)%?(?![A-Za-z]*\d)"
)
NUMBER_TOKEN_DECIMAL_COMMA = re.compile(
    r"(?=[-+$\d])(?<![A-Za-z\d,])[-+]?\$?(?:\d{1,3}(?:[. ]\d{3})+(?:,\d+)?|\d+(?:,\d+)?)%?"
    r"(?![A-Za-z]*\d)"
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
    match = last_number_match(text, first, decimal_comma)
    return match.group(0) if match else None


def last_number_match(text: str, first: bool = False,
                       decimal_comma: bool = False) -> re.Match[str] | None:
    """The match of :func:`last_number`; its positions are positions in ``text``."""
    token = NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma else NUMBER_TOKEN
    if opens_broken_span(text):  # blanked to the same length: positions stay
        text = BROKEN_MATH_SPAN.sub(lambda m: " " * len(m.group(0)), text)
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


def opens_broken_span(text: str) -> bool:
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
BROKEN_MATH_SPAN = re.compile(r"(?<![$\\])\$[ \t]*\n[^$]{0,1000}?\n[ \t]*\$(?!\$)"
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
CLOSING_KEYS = ("answer is", "answer:", "\na:")
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
    for key in CLOSING_KEYS:
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


def closing_phrases(text: str) -> list[tuple[int, int, str]]:
    """(start, end, answer) of every closing phrase of ``text`` (at most
    ``MAX_STATEMENTS``)."""
    low = text.lower()
    found: list[tuple[int, int, str]] = []
    for key in CLOSING_KEYS:
        pos = low.find(key)
        while pos >= 0 and len(found) < MAX_STATEMENTS:
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
LATIN_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")


def bare_answer(text: str) -> str | None:
    """The whole output when it is nothing but an answer (``\\frac{3}{4}``, ``x = 3``,
    ``1,000``), else None.

    >>> bare_answer(" x = -2 ")
    '-2'
    >>> bare_answer("the answer is 2") is None
    True
    """
    stripped = text.strip()
    if not stripped or len(stripped) > _BARE_ANSWER_MAX or LATIN_WORD.search(stripped):
        return None
    return strip_lead_in(stripped).strip()


_MAX_SPAN = 1000
#: a unit or remark in a math span (``\\frac{1}{3} \\text{meters}``) is not prose
TEXT_COMMAND_ARG = re.compile(r"\\(?:text|textbf|mathrm|mbox|textnormal)\s*\{[^{}]*\}")


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
    dollars = dollar_positions(text)
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


def dollar_positions(text: str) -> list[int]:
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
             if not LATIN_WORD.search(TEXT_COMMAND_ARG.sub(" ", span[2]))]
    if not spans:
        return None
    return spans[0] if first else spans[-1]


#: strategies that would read a calculator note as an answer (the others never look there)
_READS_NOTES = frozenset({"closing", "bare", "math_span", "last_number"})
#: strategies that read a stated final answer (the others fall back on what the text holds)
STATEMENTS = ("answer_tag", "boxed", "hashes", "closing")


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
        span = tag_span(text, answer_tag, first)
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
        box = box_at(text, start)
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
        match = last_number_match(text, first, decimal_comma)
        if match is None:
            return None
        scale = SCALE_WORD_AFTER.match(text, match.end())  # "18 million": the scale is the value's
        end = scale.end() if scale else match.end()
        return Found(how, text[match.start() : end].strip(), text, match.start(), end)
    raise ValueError(f"unknown extraction strategy {how!r}")  # pragma: no cover


# -- commitment: is a found answer one the output stands by? ---------------------------
SCALE_WORD_AFTER = re.compile(r"[ \t]*(?:hundred|thousand|million|billion|trillion|dozen)s?"
                          r"(?![A-Za-z])", re.IGNORECASE)

# -- plain numbers ---------------------------------------------------------------------

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
