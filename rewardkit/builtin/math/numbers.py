"""Reading a plain number exactly, without a CAS, and comparing two of them.

``"$1,234.50"``, ``"12 apples"``, ``"50%"``, ``"3/4"``, ``"\\frac{3}{4}"``,
``"1.5 \\times 10^{3}"`` become an exact :class:`~fractions.Fraction`
(:func:`read_number`), so numeric answers (GSM8K and the like) never pay for sympy;
:func:`numbers_match` compares them within a tolerance. Bounded work on any input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from rewardkit.builtin.math.extraction import boxed

#: longest text read as a plain number; longer "numbers" are spam, not answers
MAX_NUMBER_CHARS = 120


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
TEXT_COMMAND = re.compile(r"\\(?:text|mathrm|textbf|mbox|textnormal|operatorname)\s*\{([^{}]*)\}")
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
#: a decimal comma where it cannot be a thousands separator, read without ``decimal_comma``:
#: one comma, digits on both sides, fewer than three after it (``1000,99``, ``2,74``), or a
#: zero before it (``0,111``); ``1,000`` is a thousand, ``1, 22`` two values
_COMMA_DECIMAL = re.compile(r"[-+]?(?:\d+,\d{1,2}|0,\d+)")
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
    s = TEXT_COMMAND.sub(lambda t: " " + t.group(1), s)
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
    elif _COMMA_DECIMAL.fullmatch(s):  # "1000,99": not a list, not thousands
        s = s.replace(",", ".")
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
