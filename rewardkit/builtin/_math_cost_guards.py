"""Cheap checks that an answer is safe to hand to sympy (:func:`_too_costly`).

sympy can run for minutes or eat memory on inputs a policy will produce (``10^{10^{10}}``,
``1000000!``, deep ``\\frac`` nests); these linear checks refuse the known ways before
math-verify parses anything. The worker timeout remains the guard for everything else.
Apart from the reward because its references, its exact fast path and its symbolic path
all refuse with them.
"""

from __future__ import annotations

import re

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
