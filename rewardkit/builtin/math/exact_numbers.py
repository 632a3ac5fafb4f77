"""Exact numbers of the fast path: Q(sqrt) with indeterminates, and reading them from LaTeX.

A value is a :data:`Poly`: integers, fractions, square roots of squarefree integers and
their sums and products, with ``\\pi``, ``e`` and one-letter variables as
indeterminates. Arithmetic on it is exact, and canonical (square roots of distinct
squarefree integers are linearly independent over Q), so two values are equal exactly
when their forms are. :func:`parse_poly` parses the tokens of one LaTeX expression
(:func:`exact_tokens`) into one; anything outside the language raises :class:`NotExact`,
and the size limits keep the work bounded on any input. Apart from the fast path's
structures and equations, which are built on it.
"""

from __future__ import annotations

import re
from fractions import Fraction


class NotExact(Exception):
    """The text is outside the language this module decides exactly."""


#: a monomial: sorted (indeterminate, exponent) pairs
Monomial = tuple[tuple[str, int], ...]
#: a polynomial over Q(sqrt): (monomial, squarefree radicand) -> nonzero coefficient
Poly = dict[tuple[Monomial, int], Fraction]

#: the largest integer whose square root is taken (trial division stays cheap)
_MAX_RADICAND = 10**8
#: the most bits of an integer power (``2^{1009}`` is fine, ``2^{10^6}`` is not)
_MAX_POWER_BITS = 20_000
#: the highest power of a non-constant base
_MAX_DEGREE = 24
#: the longest text read
MAX_EXACT_CHARS = 400

_DROP = re.compile(
    r"\\left|\\right|\\displaystyle|(?<!\\)\\[,;:!> ]|\\q?quad|\\big[lr]?|\\Big[lr]?|~")
_TOKEN = re.compile(
    r"\s*(?:(\d+)|(\\(?:begin|end)\{[a-z]+\})|(\\[A-Za-z]+|\\[{}])|([A-Za-z])|([-+*/^(){}\[\],=&]|\\\\))")
_COMMANDS = {"\\frac", "\\dfrac", "\\tfrac", "\\sqrt", "\\cdot", "\\times", "\\pi",
             "\\infty", "\\{", "\\}"}
_MATRIX_ENVS = {"pmatrix", "bmatrix"}
#: letters that math-verify reads as constants, not variables
_CONSTANT_LETTERS = {"i", "E", "I"}
#: the transcendental constants, read as indeterminates (each is transcendental over the
#: algebraic numbers, so a polynomial identity in one of them is an identity of numbers;
#: whether pi and e are algebraically independent is unknown, so never both at once)
NAMED_CONSTANTS = {"π": 3.141592653589793, "e": 2.718281828459045}


def exact_tokens(text: str) -> list[str]:
    text = _DROP.sub(" ", text).strip()
    text = text.strip("$").strip().rstrip(".").strip()
    if not text:
        raise NotExact
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                break
            raise NotExact
        token = m.group(m.lastindex or 0)
        if m.group(2) and token[token.index("{") + 1 : -1] not in _MATRIX_ENVS:
            raise NotExact
        if m.group(3) and token not in _COMMANDS:
            raise NotExact
        if m.group(4) and (token in _CONSTANT_LETTERS or (out and out[-1].isalpha()
                                                           and len(out[-1]) == 1)):
            raise NotExact  # a word, or e / i
        out.append(token)
        pos = m.end()
    return out


# -- arithmetic on Poly ----------------------------------------------------------------
def poly_const(value: Fraction | int) -> Poly:
    return {((), 1): Fraction(value)} if value else {}


def poly_add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for key, c in b.items():
        v = out.get(key, Fraction(0)) + sign * c
        if v:
            out[key] = v
        else:
            out.pop(key, None)
    return out


def _mono_mul(m: Monomial, n: Monomial) -> Monomial:
    exps: dict[str, int] = dict(m)
    for var, e in n:
        exps[var] = exps.get(var, 0) + e
    return tuple(sorted((v, e) for v, e in exps.items() if e))


#: the most terms a product may have (``(x+y+z)^{24}`` has 325); past it, math-verify
#: decides (under the worker's timeout)
_MAX_TERMS = 512


def poly_mul(a: Poly, b: Poly) -> Poly:
    if len(a) * len(b) > _MAX_TERMS * 8:
        raise NotExact
    out: Poly = {}
    for (m, r), c in a.items():
        for (n, s), d in b.items():
            g = _gcd(r, s)
            key = (_mono_mul(m, n), (r // g) * (s // g))
            v = out.get(key, Fraction(0)) + c * d * g
            if v:
                out[key] = v
            else:
                out.pop(key, None)
    if len(out) > _MAX_TERMS:
        raise NotExact
    return out


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _inverse(a: Poly) -> Poly:
    """1/a for a single term c * monomial * sqrt(r); anything else is unsupported."""
    if len(a) != 1:
        raise NotExact
    ((m, r), c), = a.items()
    return {(tuple((v, -e) for v, e in m), r): 1 / (c * r)}


def poly_power(a: Poly, exponent: Poly) -> Poly:
    if set(exponent) - {((), 1)}:
        raise NotExact
    e = exponent.get(((), 1), Fraction(0))
    if e.denominator != 1:
        raise NotExact
    n = abs(e.numerator)
    constant = set(a) <= {((), 1)}
    if constant and a:
        c = a[((), 1)]
        bits = max(abs(c.numerator).bit_length(), c.denominator.bit_length(), 1)
        if n * bits > _MAX_POWER_BITS:
            raise NotExact
        value = c ** n
        return poly_const(1 / value if e < 0 else value)
    if n > _MAX_DEGREE or (not a and e < 0):
        raise NotExact
    out = poly_const(1)
    for _ in range(n):
        out = poly_mul(out, a)
    return _inverse(out) if e < 0 else out


def poly_sqrt(a: Poly) -> Poly:
    if set(a) - {((), 1)}:
        raise NotExact
    c = a.get(((), 1), Fraction(0))
    if c < 0:
        raise NotExact
    if c == 0:
        return {}
    p, q = c.numerator * c.denominator, c.denominator  # sqrt(p/q^2) = sqrt(p)/q
    if p > _MAX_RADICAND:
        raise NotExact
    outside, inside = 1, 1
    f = 2
    while f * f <= p:
        while p % (f * f) == 0:
            p //= f * f
            outside *= f
        if p % f == 0:
            p //= f
            inside *= f
        f += 1
    inside *= p
    return {((), inside): Fraction(outside, q)}


# -- the parser ------------------------------------------------------------------------
class _Parser:
    """Recursive descent over the tokens of one expression."""

    def __init__(self, tokens: list[str]) -> None:
        self.t = tokens
        self.i = 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise NotExact
        self.i += 1
        return token

    def expr(self) -> Poly:
        sign = 1
        if self.peek() in ("+", "-"):
            sign = -1 if self.take() == "-" else 1
        value = poly_mul(poly_const(sign), self.term())
        while self.peek() in ("+", "-"):
            sign = -1 if self.take() == "-" else 1
            value = poly_add(value, self.term(), sign)
        return value

    def term(self) -> Poly:
        value = self.power()
        while True:
            token = self.peek()
            if token in ("*", "\\cdot", "\\times"):
                self.take()
                value = poly_mul(value, self.power())
            elif token == "/":
                self.take()
                value = poly_mul(value, _inverse(self.power()))
            elif token is not None and (token[0].isalpha() or token in (
                    "(", "\\frac", "\\dfrac", "\\tfrac", "\\sqrt", "\\pi")):
                value = poly_mul(value, self.power())  # implicit product: 2x, 3\sqrt{2}
            else:
                return value

    def power(self) -> Poly:
        base = self.atom()
        if self.peek() == "^":
            self.take()
            if self.peek() == "-":  # x^-1 is ambiguous in LaTeX
                raise NotExact
            base = poly_power(base, self.atom(single=True))
        return base

    def group(self) -> Poly:
        self.take("{")
        value = self.expr()
        self.take("}")
        return value

    def argument(self) -> Poly:
        """A command's argument: ``{...}`` or one character (``\\frac12``, ``\\sqrt3``)."""
        if self.peek() == "{":
            return self.group()
        token = self.take()
        if token.isdigit():
            if len(token) > 1:  # \frac12 is 1/2; take the first digit, leave the rest
                self.t[self.i - 1 : self.i] = [token[0], token[1:]]
                self.i -= 1
                self.take()
                return poly_const(int(token[0]))
            return poly_const(int(token))
        if token.isalpha() and len(token) == 1:
            return {(((token, 1),), 1): Fraction(1)}
        raise NotExact

    def atom(self, single: bool = False) -> Poly:
        token = self.peek()
        if token is None:
            raise NotExact
        if single and token not in ("{",):
            return self.argument()
        if token == "{":
            return self.group()
        if token == "(":
            self.take()
            value = self.expr()
            self.take(")")
            return value
        self.take()
        if token.isdigit():
            return poly_const(int(token))
        if token.isalpha():  # a variable, or e
            return {(((token, 1),), 1): Fraction(1)}
        if token == "\\pi":
            return {((("π", 1),), 1): Fraction(1)}
        if token in ("\\frac", "\\dfrac", "\\tfrac"):
            numerator = self.argument()
            return poly_mul(numerator, _inverse(self.argument()))
        if token == "\\sqrt":
            if self.peek() == "[":
                raise NotExact
            return poly_sqrt(self.argument())
        raise NotExact


def parse_poly(tokens: list[str]) -> Poly:
    parser = _Parser(tokens)
    value = parser.expr()
    if parser.peek() is not None:
        raise NotExact
    return value
