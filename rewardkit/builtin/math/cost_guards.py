"""Cheap checks that an answer is safe to hand to sympy (:func:`too_costly`).

sympy can run for minutes or eat memory on inputs a policy will produce (``10^{10^{10}}``,
``1000000!``, deep ``\\frac`` nests, and in twenty characters ``(x+1)^{5000}``,
``\\binom{10000000}{5000000}`` or ``\\sum_{k=1}^{2019} k!``); these linear checks refuse the
known ways before math-verify parses anything. Such an answer is wrong, with the reason:
its grading cost has no bound, so a grader that waited for it would mask it (status
timeout) instead of paying it nothing. math_answer's ``symbolic_timeout``
(:mod:`~rewardkit.builtin.math.deadline`) bounds everything else, and the worker's hard
timeout remains the last guard (for one long call into C, which the deadline cannot cut).
Apart from the reward because its references, its exact fast path and its symbolic path
all refuse with them.
"""

from __future__ import annotations

import math
import re

_MAX_BRACE_DEPTH = 40
_MAX_POWERS = 8
#: ``\\frac`` / ``\\sqrt`` nested deeper than this (a continued fraction 15 deep runs past
#: 10 s in math-verify; honest answers nest a few levels)
_MAX_FRACTION_DEPTH = 8
#: the largest exponent, all together, of the powers whose base holds a variable or a
#: radical, which sympy may expand (``(x+1)^{1000}`` takes seconds, ``(x+1)^{5000}``
#: minutes, ``\\frac{(x+1)^{100}}{(x-1)^{100}}`` six seconds), nested powers multiplied
#: (``((x+1)^{30})^{30}`` is ``(x+1)^{900}``) ...
_MAX_SYMBOLIC_EXPONENT = 60
#: ... and the most terms its expansions may have together (``(a+b+c)^{100}`` has 176,851;
#: ``(a+b+c)^{15}`` 816, a second)
_MAX_EXPANDED_TERMS = 1000
#: the most digits an integer binomial coefficient may have (10000! has 35,660 and is
#: computed in milliseconds; ``\\binom{10000000}{5000000}`` has three million)
_MAX_DIGITS = 40_000
#: the largest bound of a sum of factorials, powers or binomials, or of a product, that
#: sympy may expand term by term (``\\sum_{k=1}^{1000} k!`` runs past 10 s,
#: ``\\prod_{k=1}^{500}(x+k)`` takes seconds), and of any sum
_MAX_HARD_TERMS = 100
_MAX_TERMS = 1000
#: the largest number a symbolic binomial's other argument may be (``\\binom{x}{100}``
#: expands to a polynomial of degree 100: ten seconds)
_MAX_SYMBOLIC_BINOMIAL = 20

#: the reason every refusal ends with
UNBOUNDED = "grading cost unbounded"


def too_costly(text: str, max_chars: int, max_powers: int | None = _MAX_POWERS) -> str:
    """Why sympy should not see ``text`` (empty when it may). Cheap checks for the known
    ways to make sympy run for minutes: size, deep nesting, power towers, big factorials,
    expansions of large powers of sums, huge binomials, long sums and products. The
    worker timeout remains the guard for everything else."""
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
        return f"answer nested too deeply ({UNBOUNDED})"
    powers = text.count("^") + text.count("**")
    if (max_powers is not None and powers > max_powers) or _power_tower(text):
        return f"answer has a power tower ({UNBOUNDED})"
    if _big_factorial(text):
        return f"answer has a large factorial ({UNBOUNDED})"
    if ("frac" in text or "sqrt" in text) and _fraction_depth(text) > _MAX_FRACTION_DEPTH:
        return f"answer nests fractions or roots too deeply ({UNBOUNDED})"
    if powers and _large_expansion(text, together=max_powers is not None):
        return f"answer has a large power of a sum to expand ({UNBOUNDED})"
    if "binom" in text or "choose" in text or "Gamma" in text:
        why = _big_binomial(text)
        if why:
            return f"answer has {why} ({UNBOUNDED})"
    if ("\\sum" in text or "\\prod" in text) and _long_series(text):
        return f"answer has a sum or product of too many terms ({UNBOUNDED})"
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


_NESTING = re.compile(r"\\(?:[dtc]?frac|sqrt)(?![A-Za-z])\s*(?:\[[^\[\]{}]{0,40}\])?\s*|[{}]")


def _fraction_depth(text: str) -> int:
    """How deeply ``\\frac`` and ``\\sqrt`` arguments nest (``\\frac{1}{1+\\frac{1}{2}}``:
    2). One pass: each open brace remembers whether it opens such an argument."""
    stack: list[int] = []  # per open brace: 0 plain, 1 a first \frac argument, 2 other
    depth = deepest = 0
    pending = 0  # the next brace opens: 1 a \frac's first argument, 2 another argument
    last_end = -1
    for m in _NESTING.finditer(text):
        token = m.group(0)
        adjacent = m.start() == last_end or not text[last_end : m.start()].strip()
        if token == "{":
            kind = pending if pending and adjacent else 0
            stack.append(kind)
            if kind:
                depth += 1
                deepest = max(deepest, depth)
            pending = 0
        elif token == "}":
            pending = 0
            if stack:
                kind = stack.pop()
                if kind:
                    depth -= 1
                pending = 2 if kind == 1 else 0  # a \frac's second argument may follow
        else:
            pending = 1 if "frac" in token else 2
        last_end = m.end()
    return deepest


_VARIABLE = re.compile(r"\\[A-Za-z]+|[A-Za-z]")
_EXPONENT_VALUE = re.compile(r"\s*\+?\s*(\d{1,6})\s*")
_DIGITS = re.compile(r"\d+")


def _large_expansion(text: str, together: bool = True) -> bool:
    """A power of a bracketed base that holds a variable or a radical with an exponent
    whose expansion is costly: over :data:`_MAX_SYMBOLIC_EXPONENT` all together (nested
    powers multiplied), or over :data:`_MAX_EXPANDED_TERMS` terms in all; an exponent that holds a
    factorial counts as huge. Numbers alone (``2^{2019}``) are cheap at any size allowed
    by :func:`_power_tower`. ``together=False`` (a whole output, a reference): each power
    on its own, since a long solution writes many small ones."""
    powers: list[tuple[int, int]] = []  # (position, effective exponent) of each power
    terms = degree = 0
    for m in _POWER.finditer(text):
        start = m.start()
        base_start = _group_start(text, start)
        if base_start is None:
            continue  # not a bracketed base: x^{5000} alone is cheap
        base = text[base_start:start]
        names = {name for name in _VARIABLE.findall(base)
                 if name not in ("\\left", "\\right", "\\cdot", "\\times", "\\frac",
                                 "\\dfrac", "\\tfrac")}
        exponent = _exponent(text, m)
        if exponent is None:
            continue
        inner, k = 1, len(powers) - 1  # the powers inside the base are the last ones found
        while k >= 0 and powers[k][0] >= base_start:
            inner = max(inner, powers[k][1])
            k -= 1
        effective = exponent * inner
        powers.append((start, effective))
        if not names:
            continue  # (1+2)^{5000} is a number
        degree = degree + effective if together else effective
        if degree > _MAX_SYMBOLIC_EXPONENT:
            return True
        expanded = math.comb(effective + len(names), len(names))
        terms = terms + expanded if together else expanded
        if terms > _MAX_EXPANDED_TERMS:
            return True
    return False


def _group_start(text: str, end: int) -> int | None:
    """Where the bracketed group that ends right before ``end`` opens (``(x+1)`` in
    ``(x+1)^{5}``, ``\\left(x+1\\right)``, ``{x+1}``), or None (also for a subscript,
    ``\\sum_{k=1}^{n}``)."""
    i = end - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    if i < 0 or text[i] not in ")]}":
        return None
    closer = text[i]
    opener = {")": "(", "]": "[", "}": "{"}[closer]
    depth = 0
    for j in range(i, max(-1, i - 400), -1):
        ch = text[j]
        if ch == closer:
            depth += 1
        elif ch == opener:
            depth -= 1
            if depth == 0:
                before = text[:j].rstrip()
                return None if before.endswith("_") else j  # a subscript is not a base
    return None


def _exponent(text: str, m: re.Match[str]) -> int | None:
    """The exponent of the power ``m`` as a whole number, when it is one, or a bound on it
    (the product of the numbers in it: ``4999+1`` is at most 4999; a factorial in it is
    taken as huge); None for a symbolic one (``n``)."""
    rest = text[m.end() : m.end() + 200]
    if m.group(1):
        exponent = rest.split("}" if m.group(1) == "{" else ")", 1)[0]
    else:
        exponent = _LEADING_DIGITS.match(rest).group(0)  # type: ignore[union-attr]
    if "!" in exponent:
        return 10**6
    value = _EXPONENT_VALUE.fullmatch(exponent)
    if value:
        return int(value.group(1))
    numbers = _DIGITS.findall(exponent)  # ``4999+1``, ``2 \\cdot 500``: at most their product
    if not numbers:
        return None
    estimate = 1
    for number in numbers[:8]:
        estimate = min(10**6, estimate * max(1, int(number[:7])))
    return estimate


#: ``\\binom{n}{k}`` (``\\dbinom``, ``\\tbinom``), ``{n \\choose k}``, ``\\Gamma(n)``
_BINOM = re.compile(r"\\[dt]?binom\s*\{([^{}]{0,60})\}\s*\{([^{}]{0,60})\}"
                    r"|\{([^{}]{0,60})\\choose(?![A-Za-z])([^{}]{0,60})\}")
_GAMMA = re.compile(r"\\Gamma\s*(?:\\left\s*)?[({]([^(){}]{0,60})")
_INTEGER = re.compile(r"\s*(\d{1,12})\s*")


def _big_binomial(text: str) -> str:
    """What makes a binomial coefficient or a Gamma value costly (empty when none): over
    :data:`_MAX_DIGITS` digits, or a power or factorial in an argument, or a variable
    argument beside a number over :data:`_MAX_SYMBOLIC_BINOMIAL` (sympy expands it)."""
    for m in _BINOM.finditer(text):
        top, bottom = (m.group(1), m.group(2)) if m.group(1) is not None else (
            m.group(3), m.group(4))
        if any(mark in arg for arg in (top, bottom) for mark in ("^", "!", "**")):
            return "a binomial coefficient of a power or factorial"
        n, k = _INTEGER.fullmatch(top), _INTEGER.fullmatch(bottom)
        if n and k:
            big, small = int(n.group(1)), int(k.group(1))
            if 0 < small < big and _binomial_digits(big, small) > _MAX_DIGITS:
                return "a huge binomial coefficient"
        elif (n and int(n.group(1)) > _MAX_SYMBOLIC_BINOMIAL) or (
                k and int(k.group(1)) > _MAX_SYMBOLIC_BINOMIAL):
            return "a binomial coefficient of a variable to expand"
    for m in _GAMMA.finditer(text):
        arg = m.group(1)
        number = _INTEGER.fullmatch(arg)
        if "^" in arg or "!" in arg or (number and len(number.group(1)) >= 5):
            return "a huge Gamma value"
    return ""


def _binomial_digits(n: int, k: int) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(10)


#: a sum or product's upper bound: ``\\sum_{k=1}^{2019}``, ``\\prod_{k=1}^{100}``
_SERIES = re.compile(r"\\(?:sum|prod)(?![A-Za-z])\s*(?:\\limits\s*)?"
                     r"(?:_\s*(?:\{[^{}]{0,60}\}|\S)\s*)?"
                     r"\^\s*(?:\{([^{}]{0,60})\}|(\d+))")
_HARD_TERM = re.compile(r"!|\^|binom|choose")


def _long_series(text: str) -> bool:
    """A sum over more than :data:`_MAX_TERMS` terms, a product or a sum of factorials,
    powers or binomials over more than :data:`_MAX_HARD_TERMS` (sympy works them out one by
    one), or either with a bound that holds a power or a factorial."""
    for m in _SERIES.finditer(text):
        bound = m.group(1) if m.group(1) is not None else m.group(2)
        if "^" in bound or "!" in bound:
            return True
        number = _INTEGER.fullmatch(bound)
        if number is None:
            continue
        value = int(number.group(1))
        if value > _MAX_TERMS or (value > _MAX_HARD_TERMS and "prod" in m.group(0)):
            return True
        if value > _MAX_HARD_TERMS and _HARD_TERM.search(text, m.end(), m.end() + 120):
            return True
    return False
