"""math_answer's exact fast path for symbolic answers, before math-verify and sympy.

A GRPO batch is P prompts x G completions sharing one reference per group, and a group
gives a few distinct final answers. math-verify parses the reference and the answer of
every completion again (milliseconds each); this module reads both, once per distinct
text, into exact values of a small language and compares them exactly:

- numbers of Q(sqrt): integers, fractions, square roots and their sums and products
  (``\\frac{1+\\sqrt{5}}{2}``, ``3\\sqrt{2}``, ``2^{1009}``), with ``\\pi`` or ``e`` and
  one-letter variables as indeterminates (polynomials such as ``2x^2+x-1``, ``\\frac{x}{2}``);
  two such values are equal exactly when their canonical forms are (square roots of
  distinct squarefree integers are linearly independent over Q, and pi and e are
  transcendental), so no tolerance is involved anywhere;
- tuples and intervals ``(a, b)``, ``[a, b)``, ``(-\\infty, 3]``, sets ``\\{a, b\\}``,
  matrices (``pmatrix``, ``bmatrix``), and equations: equal when proportional, different
  when both are linear, or when a point solving one (found exactly in Q(sqrt)) does not
  solve the other; a decimal answer far from an exact gold (``4.47`` for ``2\\sqrt{5}``) is
  wrong, one close to it is math-verify's to round.

Anything outside that language (decimals, percents, functions, ``\\pm``, subscripts,
words, unions, bare lists, a tuple against a set, ...) goes to math-verify, but with the
one formula the output commits to (as an answer block is read), the reference parsed
once. Each (reference, answer) verdict is cached in the process, so a worker grades each
distinct answer of a batch once. Outputs where the commitment rules have something to
say (refusals, hedges, several final statements or boxes) take math_answer's symbolic
path unchanged.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rewardkit.builtin._answers import STATEMENTS, reference_text
from rewardkit.builtin._commitment import competing_statements, hedged
from rewardkit.builtin._math_cost_guards import _too_costly
from rewardkit.builtin._math_params import MathParams
from rewardkit.builtin._math_references import _plain_reference, _Symbolic, _symbolic_reference
from rewardkit.builtin._math_sample import _find, _graded_text, _prompt_text, _verdict
from rewardkit.builtin._math_verify_bridge import (
    _cas_form,
    _delimited,
    _exactly_different,
    _math_verify,
    _parse_output,
)
from rewardkit.types import Sample, Score


class _Unsupported(Exception):
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
_MAX_CHARS = 400

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
_CONSTANTS = {"π": 3.141592653589793, "e": 2.718281828459045}


def _tokens(text: str) -> list[str]:
    text = _DROP.sub(" ", text).strip()
    text = text.strip("$").strip().rstrip(".").strip()
    if not text:
        raise _Unsupported
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                break
            raise _Unsupported
        token = m.group(m.lastindex or 0)
        if m.group(2) and token[token.index("{") + 1 : -1] not in _MATRIX_ENVS:
            raise _Unsupported
        if m.group(3) and token not in _COMMANDS:
            raise _Unsupported
        if m.group(4) and (token in _CONSTANT_LETTERS or (out and out[-1].isalpha()
                                                           and len(out[-1]) == 1)):
            raise _Unsupported  # a word, or e / i
        out.append(token)
        pos = m.end()
    return out


# -- arithmetic on Poly ----------------------------------------------------------------
def _const(value: Fraction | int) -> Poly:
    return {((), 1): Fraction(value)} if value else {}


def _add(a: Poly, b: Poly, sign: int = 1) -> Poly:
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


def _mul(a: Poly, b: Poly) -> Poly:
    if len(a) * len(b) > _MAX_TERMS * 8:
        raise _Unsupported
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
        raise _Unsupported
    return out


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def _inverse(a: Poly) -> Poly:
    """1/a for a single term c * monomial * sqrt(r); anything else is unsupported."""
    if len(a) != 1:
        raise _Unsupported
    ((m, r), c), = a.items()
    return {(tuple((v, -e) for v, e in m), r): 1 / (c * r)}


def _power(a: Poly, exponent: Poly) -> Poly:
    if set(exponent) - {((), 1)}:
        raise _Unsupported
    e = exponent.get(((), 1), Fraction(0))
    if e.denominator != 1:
        raise _Unsupported
    n = abs(e.numerator)
    constant = set(a) <= {((), 1)}
    if constant and a:
        c = a[((), 1)]
        bits = max(abs(c.numerator).bit_length(), c.denominator.bit_length(), 1)
        if n * bits > _MAX_POWER_BITS:
            raise _Unsupported
        value = c ** n
        return _const(1 / value if e < 0 else value)
    if n > _MAX_DEGREE or (not a and e < 0):
        raise _Unsupported
    out = _const(1)
    for _ in range(n):
        out = _mul(out, a)
    return _inverse(out) if e < 0 else out


def _sqrt(a: Poly) -> Poly:
    if set(a) - {((), 1)}:
        raise _Unsupported
    c = a.get(((), 1), Fraction(0))
    if c < 0:
        raise _Unsupported
    if c == 0:
        return {}
    p, q = c.numerator * c.denominator, c.denominator  # sqrt(p/q^2) = sqrt(p)/q
    if p > _MAX_RADICAND:
        raise _Unsupported
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
            raise _Unsupported
        self.i += 1
        return token

    def expr(self) -> Poly:
        sign = 1
        if self.peek() in ("+", "-"):
            sign = -1 if self.take() == "-" else 1
        value = _mul(_const(sign), self.term())
        while self.peek() in ("+", "-"):
            sign = -1 if self.take() == "-" else 1
            value = _add(value, self.term(), sign)
        return value

    def term(self) -> Poly:
        value = self.power()
        while True:
            token = self.peek()
            if token in ("*", "\\cdot", "\\times"):
                self.take()
                value = _mul(value, self.power())
            elif token == "/":
                self.take()
                value = _mul(value, _inverse(self.power()))
            elif token is not None and (token[0].isalpha() or token in (
                    "(", "\\frac", "\\dfrac", "\\tfrac", "\\sqrt", "\\pi")):
                value = _mul(value, self.power())  # implicit product: 2x, 3\sqrt{2}
            else:
                return value

    def power(self) -> Poly:
        base = self.atom()
        if self.peek() == "^":
            self.take()
            if self.peek() == "-":  # x^-1 is ambiguous in LaTeX
                raise _Unsupported
            base = _power(base, self.atom(single=True))
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
                return _const(int(token[0]))
            return _const(int(token))
        if token.isalpha() and len(token) == 1:
            return {(((token, 1),), 1): Fraction(1)}
        raise _Unsupported

    def atom(self, single: bool = False) -> Poly:
        token = self.peek()
        if token is None:
            raise _Unsupported
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
            return _const(int(token))
        if token.isalpha():  # a variable, or e
            return {(((token, 1),), 1): Fraction(1)}
        if token == "\\pi":
            return {((("π", 1),), 1): Fraction(1)}
        if token in ("\\frac", "\\dfrac", "\\tfrac"):
            numerator = self.argument()
            return _mul(numerator, _inverse(self.argument()))
        if token == "\\sqrt":
            if self.peek() == "[":
                raise _Unsupported
            return _sqrt(self.argument())
        raise _Unsupported


def _expression(tokens: list[str]) -> Poly:
    parser = _Parser(tokens)
    value = parser.expr()
    if parser.peek() is not None:
        raise _Unsupported
    return value


def _frozen(p: Poly) -> frozenset[tuple[tuple[Monomial, int], Fraction]]:
    return frozenset(p.items())


def _split(tokens: list[str], separator: str) -> list[list[str]]:
    """Tokens split at ``separator`` outside any brackets."""
    parts: list[list[str]] = [[]]
    depth = 0
    for token in tokens:
        if token in ("(", "[", "{", "\\{"):
            depth += 1
        elif token in (")", "]", "}", "\\}"):
            depth -= 1
        if token == separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    if depth != 0 or any(not part for part in parts):
        raise _Unsupported
    return parts


_INF = ("inf",)


def _bound(tokens: list[str]) -> Any:
    if tokens == ["\\infty"] or tokens == ["+", "\\infty"]:
        return _INF
    if tokens == ["-", "\\infty"]:
        return ("-inf",)
    if "\\infty" in tokens:
        raise _Unsupported
    return _frozen(_expression(tokens))


@lru_cache(maxsize=65536)
def exact_value(text: str) -> Any:
    """The exact, hashable value of an answer in this module's language; None outside it.
    Kinds: ``("num", poly)``, ``("seq", open, close, items)`` (a tuple or an interval),
    ``("set", items)``, ``("matrix", rows)``, ``("eq", lhs, rhs)``."""
    if len(text) > _MAX_CHARS or re.search(r"\d,\d{3}(?!\d)", text):
        return None  # "1,000" may be a thousand or a pair
    try:
        return _value(_tokens(text))
    except (_Unsupported, ZeroDivisionError, RecursionError):
        return None


def _value(tokens: list[str]) -> Any:
    if tokens[0].startswith("\\begin"):
        return _matrix(tokens)
    if any(t.startswith(("\\begin", "\\end")) or t in ("&", "\\\\") for t in tokens):
        raise _Unsupported
    if tokens[0] == "\\{" and tokens[-1] == "\\}":
        inner = tokens[1:-1]
        items = [] if not inner else [_frozen(_expression(p)) for p in _split(inner, ",")]
        return ("set", frozenset(items))
    if "\\{" in tokens or "\\}" in tokens:
        raise _Unsupported
    if "=" in tokens:
        sides = _split(tokens, "=")
        if len(sides) != 2:
            raise _Unsupported
        return ("eq", _frozen(_expression(sides[0])), _frozen(_expression(sides[1])))
    if tokens[0] in ("(", "[") and tokens[-1] in (")", "]") and len(tokens) > 2:
        parts = _split(tokens[1:-1], ",")
        if len(parts) > 1:
            return ("seq", tokens[0], tokens[-1], tuple(_bound(p) for p in parts))
    if "," in tokens or "\\infty" in tokens:
        raise _Unsupported  # a bare list: math-verify reads it as a set, or not
    return ("num", _frozen(_expression(tokens)))


def _matrix(tokens: list[str]) -> Any:
    env = tokens[0][len("\\begin") :]
    if len(tokens) < 3 or tokens[-1] != "\\end" + env:
        raise _Unsupported
    body = tokens[1:-1]
    if any(t.startswith(("\\begin", "\\end")) for t in body):
        raise _Unsupported
    rows = _split(body, "\\\\")
    cells = [tuple(_frozen(_expression(c)) for c in _split(row, "&")) for row in rows]
    if len({len(row) for row in cells}) != 1:
        raise _Unsupported
    return ("matrix", env, tuple(cells))


def same(gold: Any, pred: Any) -> bool | None:
    """Whether two exact values are equal; None when math-verify must say (the kinds or
    brackets differ, or an equation is not matched side by side)."""
    if gold[0] != pred[0]:
        return None
    kind = gold[0]
    if kind == "seq":  # a tuple or an interval: other brackets or ends are another value
        return gold == pred
    if kind == "eq":
        return same_equation(gold, pred)
    if kind == "matrix":
        if len(gold[2]) != len(pred[2]) or len(gold[2][0]) != len(pred[2][0]):
            return None  # math-verify may read a column against a row
        return gold[2] == pred[2]
    return bool(gold == pred)


def same_equation(gold: Any, pred: Any) -> bool | None:
    """Whether two equations ``("eq", lhs, rhs)`` have the same solutions: True when they
    match side by side or are proportional, False when both are linear, or when a point
    solving one does not solve the other; None when math-verify must say."""
    _, gl, gr = gold
    _, pl, pr = pred
    if (gl, gr) == (pl, pr) or (gl, gr) == (pr, pl):
        return True
    if gl == pl and _is_constant(gr) and _is_constant(pr):
        return False  # x = 3 against x = 4
    f, g = _add(dict(gl), dict(gr), -1), _add(dict(pl), dict(pr), -1)
    if _proportional(f, g):
        return True  # 2y = 4x is y = 2x
    if _linear(f) and _linear(g):
        return False  # two hyperplanes are one only when their equations are proportional
    if _point_apart(g, f) or _point_apart(f, g):
        return False  # a solution of one that is not a solution of the other
    return None


def _proportional(f: Poly, g: Poly) -> bool:
    if not f or f.keys() != g.keys():
        return False
    ratios = {f[k] / g[k] for k in f}
    return len(ratios) == 1


def _linear(f: Poly) -> bool:
    """A polynomial of degree one in at least one variable: its zero set is a hyperplane
    (pi and square roots are constants linearly independent over Q, so this holds with
    them in the coefficients; pi counts towards the degree, so x*pi is not linear)."""
    monomials = [m for (m, _) in f]
    return all(sum(e for _, e in m) <= 1 and all(e >= 0 for _, e in m) for m in monomials) \
        and any(v not in _CONSTANTS for m in monomials for v, _ in m)


#: the values tried for the other variables when looking for a point of a zero set
_TRIAL_VALUES = (Fraction(1), Fraction(2), Fraction(-1), Fraction(3), Fraction(1, 2))


def _point_apart(g: Poly, f: Poly) -> bool:
    """Whether some point solves ``g = 0`` and not ``f = 0`` (then the two equations have
    different solutions), found exactly: the other variables set to small rationals, ``g``
    solved for a variable of degree one or two in it (a root in Q(sqrt)), ``f`` evaluated
    there. Only for rational coefficients without pi; False when no such point is found."""
    if any(r != 1 or any(v in _CONSTANTS for v, _ in m) for (m, r) in (*g, *f)):
        return False
    variables = sorted({v for (m, _) in g for v, _ in m})
    everywhere = sorted({v for (m, _) in (*g, *f) for v, _ in m})
    if not variables or len(everywhere) > 3:
        return False
    for var in variables:
        others = [v for v in everywhere if v != var]
        for start in range(len(_TRIAL_VALUES)):
            point = {v: _TRIAL_VALUES[(start + k) % len(_TRIAL_VALUES)]
                     for k, v in enumerate(others)}
            coefficients = _univariate(g, var, point)
            if coefficients is None:
                break  # degree above two in var
            for root in _roots(coefficients):
                try:
                    if _evaluate(f, {**{v: _const(c) for v, c in point.items()}, var: root}):
                        return True
                except _Unsupported:
                    return False
    return False


def _univariate(g: Poly, var: str, point: dict[str, Fraction]) -> list[Fraction] | None:
    """The coefficients [c0, c1, c2] of ``g`` in ``var`` with the other variables set."""
    out = [Fraction(0)] * 3
    for (m, _), c in g.items():
        degree = 0
        value = c
        for v, e in m:
            if v == var:
                degree = e
            else:
                value *= point[v] ** e
        if degree < 0 or degree > 2:
            return None
        out[degree] += value
    return out


def _roots(coefficients: list[Fraction]) -> list[Poly]:
    c0, c1, c2 = coefficients
    if c2 == 0:
        return [_const(-c0 / c1)] if c1 else []
    disc = c1 * c1 - 4 * c2 * c0
    if disc < 0:
        return []
    try:
        root = _sqrt(_const(disc))
    except _Unsupported:
        return []
    base = _const(-c1 / (2 * c2))
    half = _mul(root, _const(1 / (2 * c2)))
    return [_add(base, half), _add(base, half, -1)]


def _evaluate(f: Poly, point: dict[str, Poly]) -> Poly:
    total: Poly = {}
    for (m, r), c in f.items():
        term: Poly = {((), r): c}
        for v, e in m:
            term = _mul(term, _power(point[v], _const(e)))
        total = _add(total, term)
    return total


def _is_constant(p: frozenset[tuple[tuple[Monomial, int], Fraction]]) -> bool:
    return all(m == () for (m, _), _ in p)


@lru_cache(maxsize=65536)
def _compare(gold: str, answer: str) -> bool | None:
    """The exact verdict for one (reference, answer) pair, cached: a worker grades each
    distinct answer of a batch once."""
    g = exact_value(gold)
    if g is None or ("\\pi" in gold + answer and _EULER.search(gold + " " + answer)):
        return None  # pi and e together: math-verify decides
    p = exact_value(answer)
    if p is None:
        return _decimal_differs(g, answer)
    return same(g, p)


_EULER = re.compile(r"(?<![\\A-Za-z])e(?![A-Za-z])")
_DECIMAL = re.compile(r"\s*\$?\s*(-?\d{1,9}\.\d{1,12})\s*\$?\s*\.?\s*")
#: math-verify compares a decimal with an exact number after rounding both to 6 places:
#: farther apart than this, it cannot call them equal
_DECIMAL_MARGIN = 1e-5


def _decimal_differs(gold: Any, answer: str) -> bool | None:
    """False for a decimal answer far from an exact constant gold (``4.47`` for
    ``2\\sqrt{5}``: math-verify rounds both to 6 places, and these differ in the third);
    None when they are close, which math-verify's rounding decides."""
    m = _DECIMAL.fullmatch(answer)
    if m is None or gold[0] != "num":
        return None
    total = 0.0
    for (monomial, radicand), c in gold[1]:
        if any(v not in _CONSTANTS for v, _ in monomial):
            return None  # a variable against a number: math-verify decides
        if sum(abs(e) for _, e in monomial) > 8 or abs(c) > 10**9:
            return None
        value = float(c) * radicand ** 0.5
        for v, e in monomial:
            value *= _CONSTANTS[v] ** e
        total += value
    if abs(total) > 10**9:
        return None
    return False if abs(total - float(m.group(1))) > _DECIMAL_MARGIN else None


#: strategies whose answer is all that math-verify reads (the boxed one only when the
#: output holds a single box)
_WHOLE_ANSWER = ("answer_tag", "hashes", "bare", "boxed")


def fast_verdict(sample: Sample, params: MathParams) -> Score | None:
    """math_answer's verdict on a symbolic reference without math-verify, when both the
    reference and the answer the output commits to are in the exact language; None
    otherwise (and for every case the commitment rules must look at: refusals, hedges,
    competing final statements), which leaves the verdict to the math-verify path."""
    if not params.symbolic or _math_verify() is None:
        return None  # without math-verify, symbolic answers are an error, not a verdict
    gold_text = reference_text(sample.reference)
    if gold_text is None:
        return None
    gold = _plain_reference(sample.reference, params)
    if type(gold) is not _Symbolic:
        return None
    text = _graded_text(sample.text, params)
    if text is None:
        return None
    found, refusal = _find(text, params, _prompt_text(sample))
    if found is None or refusal or found.how not in _WHOLE_ANSWER or not found.answer:
        return None
    if found.how == "boxed" and text.count("\\boxed") + text.count("\\fbox") != 1:
        return None
    if hedged(found.answer) or _too_costly(found.answer, params.max_symbolic_chars):
        return None
    if found.how in STATEMENTS and competing_statements(
            found, params.extract, params.answer_tag, first=params.occurrence == "first"):
        return None
    formula = _cas_form(found.answer)
    verdict = _compare(gold_text.strip(), formula)
    if verdict is None:
        verdict = _math_verify_compare(gold_text, formula)
    if verdict is None:
        return None
    return _verdict(verdict, params, found.how, found.answer)


@lru_cache(maxsize=4096)
def _gold_parse(gold_text: str) -> tuple[Any, ...] | None:
    """math-verify's parse of a reference, once per distinct reference in this process."""
    parsed = _symbolic_reference(_math_verify(), gold_text)
    return None if isinstance(parsed, Score) else tuple(parsed)


@lru_cache(maxsize=65536)
def _math_verify_compare(gold_text: str, formula: str) -> bool | None:
    """math-verify's verdict on the one formula the output commits to, as math_answer's
    symbolic path reads an answer block (the formula in math delimiters; exact numbers
    compared exactly), cached: each distinct answer of a batch is parsed once. None when
    either side cannot be parsed (the symbolic path then reads the whole output)."""
    gold = _gold_parse(gold_text)
    if gold is None:
        return None
    mv = _math_verify()
    region = _delimited(formula)
    pred = _parse_output(mv, region)
    if not pred:
        return None
    same = bool(mv.verify(list(gold), pred, timeout_seconds=None))
    return same and not _exactly_different(list(gold), pred, region)
