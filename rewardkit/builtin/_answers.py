"""Finding and reading the final answer in a completion (shared by the built-in rewards).

Two jobs, both cheap and linear in the length of the text, so they are safe on any
input a policy can produce:

* *extraction*: where the answer is — the last ``<answer>`` block, the last
  ``\\boxed{}``, the last ``####`` line, or the last number in the text;
* *reading a plain number*: ``"$1,234.50"``, ``"12 apples"``, ``"50%"``, ``"3/4"``,
  ``"\\frac{3}{4}"``, ``"1.5 \\times 10^{3}"`` become an exact :class:`~fractions.Fraction`
  without sympy, so numeric answers (GSM8K and the like) never pay for a CAS.

Everything here is private to :mod:`rewardkit.builtin`; the rewards are the public API.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

#: longest text read as a plain number; longer "numbers" are spam, not answers
MAX_NUMBER_CHARS = 120


def tag_block(text: str, tag: str, first: bool = False) -> str | None:
    """Content of the last (or ``first``) complete ``<tag>...</tag>`` block, or None.

    >>> tag_block("<answer>1</answer> <answer> 2 </answer>", "answer")
    ' 2 '
    """
    opener, closer = f"<{tag}>", f"</{tag}>"
    if first:
        start = text.find(opener)
        close = text.find(closer, start + len(opener)) if start >= 0 else -1
        return text[start + len(opener) : close] if close >= 0 else None
    close = text.rfind(closer)
    if close < 0:
        return None
    start = text.rfind(opener, 0, close)
    if start < 0:
        return None
    return text[start + len(opener) : close]


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
    i = text.index("{", start) if "{" in text[start : start + 8] else -1
    if i < 0:  # "\boxed 5": the next token
        rest = text[start:].split(None, 2)
        return rest[1] if len(rest) > 1 and rest[0] in ("\\boxed", "\\fbox") else None
    depth = 0
    for j in range(i, len(text)):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
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
    token = _NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma else _NUMBER_TOKEN
    if _opens_broken_span(text):
        text = _BROKEN_SPAN.sub(" ", text)
    if first:
        match = token.search(text)
        return match.group(0) if match else None
    if "\\!" in text:  # a ",\\!" thin-space group may go on over a line break
        found = None
        for found in token.finditer(text):  # noqa: B007 - the loop keeps the last
            pass
        return found.group(0) if found else None
    # every token holds a digit and none crosses a line break: the last token is on the
    # last line with a digit where one is found (a scan from a line start finds the same
    # tokens there as a scan of the whole text; the token regex is slow to scan, so only
    # those lines are)
    start = text.rfind("\n") + 1  # most often the last line has it
    found = None
    for found in token.finditer(text, start):  # noqa: B007
        pass
    if found is not None:
        return found.group(0)
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
            return found.group(0)
        end = start
    found = None  # lines of digits glued into words: scan the rest once
    for found in token.finditer(text, 0, end):  # noqa: B007
        pass
    return found.group(0) if found else None


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
    return found[1] if found else None


def _closing(text: str, first: bool = False) -> tuple[int, str] | None:
    """(where the answer starts, the answer) of the last (or first) closing phrase."""
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
    return (best, match.group(1).strip()) if match else None


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


def _math_spans(text: str) -> list[tuple[int, str]]:
    """(position, content) of the math spans of ``text``, in order; linear time.

    ``$...$`` pairs are taken left to right and must hug their content (TeX style, so
    "costs $5 and $6" is currency, not math); ``$$...$$``, ``\\(...\\)`` and
    ``\\[...\\]`` pair with the next closer. Spans over 1000 characters are ignored."""
    spans: list[tuple[int, str]] = []
    for opener, closer in (("\\(", "\\)"), ("\\[", "\\]")):
        pos = text.find(opener)
        while pos >= 0:
            end = text.find(closer, pos + 2)
            if end < 0:
                break
            inline_broken = opener == "\\(" and "\n" in text[pos + 2 : end].strip(" \t")
            if end - pos - 2 <= _MAX_SPAN and not inline_broken:
                spans.append((pos, text[pos + 2 : end]))
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
                spans.append((a, content))
            k = close + 2
            continue
        content = text[a + 1 : b]
        hugs = content[:1].strip() and content[-1:].strip() and not text[b + 1 : b + 2].isdigit()
        # "$ \frac{1}{2} $" is math even with spaces; "$ \n 9 \n $" is not (inline math
        # stays within a paragraph)
        hugs = (hugs or "\\" in content) and "\n" not in content.strip(" \t")
        if hugs and len(content) <= _MAX_SPAN:
            spans.append((a, content))
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
    spans = [inner for _, inner in _math_spans(text)
             if not _WORD.search(_TEXT_ARG.sub(" ", inner))]
    if not spans:
        return None
    return strip_lead_in(spans[0] if first else spans[-1]).strip()


#: strategies that would read a calculator note as an answer (the others never look there)
_READS_NOTES = frozenset({"closing", "bare", "math_span", "last_number"})


def extract(
    text: str,
    order: Sequence[str],
    answer_tag: str,
    first: bool = False,
    decimal_comma: bool = False,
) -> tuple[str, str] | None:
    """Try the strategies in ``order``; the first that finds something gives
    ``(strategy, answer text)``. Strategies: ``answer_tag``, ``boxed``, ``hashes``,
    ``closing`` (``A: 18``, ``The answer is 18``), ``bare`` (the whole output is just an
    answer), ``math_span`` (last ``$...$``), ``last_number``; each takes the last
    occurrence, or the first with ``first``. GSM8K calculator notes (``<<3*4=12>>``) are
    not read."""
    stripped = False
    for how in order:
        if not stripped and how in _READS_NOTES:
            text, stripped = strip_calculator_notes(text), True
        if how == "answer_tag":
            if f"</{answer_tag}>" not in text:  # the plain searches skip most strategies
                continue
            found = tag_block(text, answer_tag, first)
            if found is not None:
                inner = boxed(found)  # "<answer>\boxed{3}</answer>" is common
                found = strip_lead_in(inner if inner is not None else found).strip()
        elif how == "boxed":
            if "\\boxed" not in text and "\\fbox" not in text:
                continue
            found = boxed(text, first)
            if found is not None and not first:  # boxed steps, then "Final Answer: ..."
                closing = _closing(text)
                if closing is not None and closing[0] > text.rfind("\\boxed"):
                    return "closing", closing[1]
        elif how == "hashes":
            if "####" not in text:
                continue
            found = hashes_line(text, first)
        elif how == "closing":
            found = closing_answer(text, first)
        elif how == "bare":
            found = bare_answer(text)
        elif how == "math_span":
            found = math_span(text, first)
        elif how == "last_number":
            found = last_number(text, first, decimal_comma)
        else:  # pragma: no cover - params validate the names
            raise ValueError(f"unknown extraction strategy {how!r}")
        if found is not None and found.strip():
            return how, found.strip()
    return None


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
    percent = False
    m = _PERCENT_WORD.search(s)
    if m:
        percent = True
        s = s[: m.start()].rstrip()
    else:
        s = _UNIT_WORDS.sub("", s).strip()
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
    return None if value is None else PlainNumber(value, percent)


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


def numbers_match(gold: PlainNumber, pred: PlainNumber, abs_tol: float, rel_tol: float) -> bool:
    """True when some reading of ``pred`` is within tolerance of some reading of ``gold``
    (``|p - g| <= max(abs_tol, rel_tol * |g|)``, exact arithmetic)."""
    if not (gold.percent or pred.percent):
        if gold.value == pred.value:
            return True
        g, p = gold.value, pred.value
        if g.denominator == 1 and p.denominator == 1:  # the common case, without Fractions
            return abs(p.numerator - g.numerator) <= max(abs_tol, rel_tol * abs(g.numerator))
    a, r = _tolerances(abs_tol, rel_tol)
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
