"""A fast reader for the plain part of LaTeX that math-verify hands its LaTeX parser.

math-verify reads every answer's LaTeX with latex2sympy2_extended, an ANTLR parser in
pure Python: tens of milliseconds an answer (most of math_answer's time on real
competition answers that its exact fast path does not settle). Most of those answers
are small formulas: integers and decimals, letters and runs of letters (``xy``, words:
products of one-letter symbols to the parser), lower-case Greek letters, subscripts of
digits or one letter (``a_{1998}``), ``\\pi``, ``e`` and ``e^{x}``, ``\\frac``, ``\\sqrt``,
``\\binom``, ``\\ln``, ``\\lfloor \\rfloor``, one ``|x|``, powers,
``+ - * / \\cdot \\times \\div``, parentheses, ``!``, thin spaces, lists, one relation
(``=``, ``<``, ``\\le``, ...) and one ``\\cup`` of two bracketed lists. This module reads
that subset by hand into the very sympy object latex2sympy2_extended builds from it (the
same unevaluated ``Add`` / ``Mul`` / ``Pow`` / relation with the same argument order, its
mixed fractions ``2\\frac{1}{2}``, its real symbols), and declines (None) everything else:
any other command, letters whose meaning depends on context (``d``, ``I``, ``E``, ``e``
after a digit, a letter before a parenthesis, which may be a function, a run of letters
holding a name the parser's lexer reads as one token: ``tr``, ``ones``, ``svd``, ...,
``^T``), ``\\ln`` before a quotient, another factor or a ``\\sqrt`` after its first factor,
chained relations,
other subscripts, digits split by a space, chained powers. Declined text takes
latex2sympy2_extended as before. tests/builtin/test_math_latex_reader.py checks, text
by text, that the two give the same object on real answers, math-verify's and
rewardkit's own cases and random formulas of the subset.

It is used only inside math_answer's own calls to math-verify
(:func:`reading_fast`): math-verify called by anyone else in the process parses as it
always does.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import sympy
from latex2sympy2_extended.sets import FiniteSet

#: letters latex2sympy2_extended reads as something other than a real symbol, or as part
#: of a longer token (a differential, Euler's number, the imaginary unit, ...)
_SPECIAL_LETTERS = frozenset("dEI")
_TOKEN = re.compile(
    r"\s+|\\[,;]|(?P<num>\d+(?:\.\d+)?)|(?P<letter>[A-Za-z])|(?P<cmd>\\[A-Za-z]+)"
    r"|(?P<op>[-+*/^(){}!,\[\]_|=<>]|\\[{}])")
_COMMANDS = frozenset({"\\frac", "\\sqrt", "\\pi", "\\cdot", "\\times", "\\div", "\\infty",
                       "\\binom", "\\dbinom", "\\tbinom", "\\ln", "\\lfloor", "\\rfloor",
                       "\\le", "\\leq", "\\ge", "\\geq", "\\cup"})
#: lower-case Greek letters the parser reads as a real symbol of that name (not
#: ``\\gamma``, its Euler constant, nor ``\\pi``); read as letters are
_GREEK = frozenset(
    "\\" + name for name in [
        "alpha", "beta", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta",
        "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "upsilon", "phi",
        "varphi", "chi", "psi", "omega"])
#: a relation between two expressions, as the parser builds it (unevaluated)
_RELATIONS: dict[str, Any] = {
    "=": sympy.Eq, "<": sympy.StrictLessThan, ">": sympy.StrictGreaterThan,
    "\\le": sympy.LessThan, "\\leq": sympy.LessThan,
    "\\ge": sympy.GreaterThan, "\\geq": sympy.GreaterThan}
#: runs of letters the parser's lexer reads as one token (a function or matrix name, the
#: trace ``tr``), written in any case: a run holding one is declined
_LETTER_WORDS = re.compile(
    r"tr|svd|lcm|gcd|ones|rows|cols|norm|rank|diag|zeros|floor|ceil|rref|stack|null|orth"
    r"|eig|matrix|ar[c]?(?:sinh|cosh|tanh)|eye", re.IGNORECASE)
#: relation signs next to each other, one token to the lexer (``!=``, ``<=``, ``->``)
_JOINED_RELATIONS = re.compile(r"[!<>=-][<>=]|[<>=]-?[<>=]")
_LETTER_RUN = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_COMMAND_NAME = re.compile(r"\\[A-Za-z]+")
#: what may follow ``\ln``'s argument written without parentheses (``\ln 2x + 1``): the
#: parser's argument runs over a product, a quotient, another ``\ln``, which are declined
_AFTER_LN_ARGUMENT = frozenset({None, "+", "-", ")", "}", ",", "]", "\\rfloor"})
#: latex2sympy2_extended reads a whole text of this shape as one number (``1,234``)
_COMMA_NUMBER = re.compile(r"^\s*-?\d{1,3}(,\d{3})+(\.\d+)?\s*$")
_OPENING = {"(": ")", "[": "]", "\\{": "\\}"}
_CLOSING = frozenset(_OPENING.values())
#: the longest text read by hand (longer ones are rare and left to the parser)
MAX_READ = 300


class _Decline(Exception):
    """The text is outside the subset."""


def _tokens(text: str) -> list[tuple[str, str]]:
    for run in _LETTER_RUN.findall(_COMMAND_NAME.sub(" ", text)):
        if _LETTER_WORDS.search(run):
            raise _Decline  # "trace", "ones": one token to the lexer
    if _JOINED_RELATIONS.search(text):
        raise _Decline
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _Decline
        pos = m.end()
        kind = m.lastgroup
        if kind is None:
            continue
        value = m.group(0)
        if kind == "cmd" and value in _GREEK:
            kind = "letter"
        elif kind == "cmd" and value not in _COMMANDS:
            raise _Decline
        if kind == "letter" and value in _SPECIAL_LETTERS:
            raise _Decline
        if out:
            last_kind, _ = out[-1]
            if kind == "num" and last_kind == "num":
                raise _Decline  # "2 3", "1.5.2": the lexer's number rules decide
            if kind == "num" and last_kind == "letter":
                raise _Decline  # "x1", "x 1": a subscript to the lexer
            if value == "(" and (last_kind == "letter" or out[-1][1] in ("\\pi", "\\infty")):
                raise _Decline  # "f(x)", "\\pi (x)": a function to the parser
            if kind == "num" and out[-1][1] == ".":
                raise _Decline
            if value == "e" and last_kind == "num":
                raise _Decline  # "2e3", "1e-5": a number in E notation to the lexer
        if kind == "num" and pos < len(text) and text[pos] == ".":
            raise _Decline
        out.append((kind, value))
    return out


class _Reader:
    def __init__(self, tokens: list[tuple[str, str]], is_real: bool) -> None:
        self.tokens = tokens
        self.pos = 0
        self.is_real = is_real
        #: ``|x|`` is read only where the text has these two bars alone
        self.bars = sum(1 for _, value in tokens if value == "|")

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise _Decline
        token = self.tokens[self.pos]
        if value is not None and token[1] != value:
            raise _Decline
        self.pos += 1
        return token

    def whole(self, text: str) -> Any:
        """The text as latex2sympy2_extended's top rule reads it: one expression, a list
        of expressions (a set), an interval or tuple in ``(`` / ``[``, a set in ``\\{``, or
        one relation between two expressions (``x = 2``, ``k \\le 8``: unevaluated; a
        chain, or relations in a list, are declined)."""
        relations = sum(1 for _, value in self.tokens if value in _RELATIONS)
        commas = any(value == "," for _, value in self.tokens)
        if relations:
            if relations > 1 or commas:
                raise _Decline
            lh = self.expr()
            relation = _RELATIONS.get(self.take()[1])
            if relation is None:
                raise _Decline
            value = relation(lh, self.expr(), evaluate=False)
        elif not commas:
            value = self.expr()
        elif self.tokens[0][1] in _OPENING and self.tokens[-1][1] in _CLOSING:
            opening, closing = self.tokens[0][1], self.tokens[-1][1]
            self.pos = 1
            items = self.items()
            self.take(closing)
            if opening == "\\{" and closing == "\\}":
                value = FiniteSet(*items)
            elif len(items) == 2 and opening != "\\{" and closing != "\\}":
                value = _interval(items[0], items[1], opening == "(", closing == ")")
            elif closing == _OPENING[opening]:
                value = sympy.Tuple(*items)
            else:
                raise _Decline
        elif self.tokens[0][1] in _OPENING:
            raise _Decline  # "(1,2), 3": a set of intervals
        else:
            if _COMMA_NUMBER.match(text):
                raise _Decline
            value = FiniteSet(*self.items())
        if self.pos != len(self.tokens):
            raise _Decline
        return value

    def items(self) -> list[Any]:
        found = [self.expr()]
        while self.peek() == ",":
            self.take()
            found.append(self.expr())
        if len(found) < 2:
            raise _Decline
        return found

    # additive: left-associative, as latex2sympy2_extended's convert_add builds it
    def expr(self) -> Any:
        lh = self.mp()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            rh = self.mp()
            if op == "-":
                rh = -rh if getattr(rh, "func", None) is not None and rh.func.is_Number \
                    else _mul_flat(sympy.Integer(-1), rh)
            lh = _add_flat(lh, rh)
        return lh

    def mp(self) -> Any:
        lh = self.unary()
        while self.peek() in ("*", "\\cdot", "\\times", "/", "\\div"):
            op = self.take()[1]
            rh = self.unary()
            lh = _divide(lh, rh) if op in ("/", "\\div") else _mul_flat(lh, rh)
        return lh

    def unary(self) -> Any:
        head = self.peek()
        if head == "+":
            self.take()
            return self.unary()
        if head == "-":
            self.take()
            value = self.unary()
            if value.func.is_Number or value.is_Number:
                return -value
            return _mul_flat(sympy.Integer(-1), value)
        items = [self.postfix()]
        while self.pos < len(self.tokens) and self._starts_postfix():
            items.append(self.postfix())
        return _postfix_list(items)

    def _starts_postfix(self) -> bool:
        kind, value = self.tokens[self.pos]
        return kind in ("num", "letter") or value in (
            "(", "\\pi", "\\frac", "\\sqrt", "\\infty", "\\binom", "\\ln", "\\lfloor")

    def postfix(self) -> Any:
        value = self.exp()
        while self.peek() == "!":
            self.take()
            if value.is_Pow:
                raise _Decline
            value = sympy.factorial(value, evaluate=False)
        return value

    def exp(self) -> Any:
        if self.pos >= len(self.tokens):
            raise _Decline
        if self.tokens[self.pos] == ("letter", "e"):
            return self.euler()
        named = self.tokens[self.pos][0] == "letter" or self.tokens[self.pos][1] in (
            "\\pi", "\\infty")
        base = self.comp()
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.exponent(letter_e=True)
        if self.peek() in ("^", "!") or (named and self.peek() == "("):
            raise _Decline  # "p^{-1}(7)": a function to the parser
        return sympy.Pow(base, exponent, evaluate=False)

    def exponent(self, *, letter_e: bool) -> Any:
        """What follows ``^``: a braced expression, one digit, a letter (``e`` too only
        where ``letter_e``) or ``\\pi``; anything else is declined."""
        kind, value = self.take()
        if value == "{":
            if self.peek() == "T":
                raise _Decline  # "^{T}": a transpose to the lexer
            exponent = self.expr()
            self.take("}")
            return exponent
        if kind == "num" and len(value) == 1:
            return sympy.Integer(int(value))
        if kind == "letter" and (letter_e or value != "e") and value != "T":  # (T: transpose)
            return self.symbol(value)
        if value == "\\pi":
            return sympy.pi
        raise _Decline

    def euler(self) -> Any:
        """``e`` and ``e^{x}``: Euler's number and its power, which the parser reads as
        ``sympy.exp`` of the exponent, evaluated (``e^{1}`` is ``E``, ``e^{0}`` is 1)."""
        self.take()
        exponent: Any = sympy.Integer(1)
        if self.peek() == "^":
            self.take()
            exponent = self.exponent(letter_e=False)
        if self.peek() in ("^", "("):
            raise _Decline
        return sympy.exp(exponent)

    def logarithm(self) -> Any:
        """``\\ln(x)`` (its argument in parentheses, then a factor like any other) and
        ``\\ln 2x`` (its argument a product of factors up to a sum's sign, a closing
        bracket, a comma or the end; a quotient or another factor after it is declined)."""
        if self.peek() == "(":
            self.take()
            argument = self.expr()
            self.take(")")
            return sympy.log(argument, sympy.E, evaluate=False)
        if self.pos >= len(self.tokens) or not self._starts_postfix() or self.peek() in (
                "(", "\\ln"):
            raise _Decline
        items = [self.postfix()]
        while (self.pos < len(self.tokens) and self._starts_postfix()
               and self.peek() not in ("(", "\\ln", "\\sqrt")):  # (\sqrt ends it: declined)
            items.append(self.postfix())
        if self.peek() not in _AFTER_LN_ARGUMENT:
            raise _Decline
        return sympy.log(_postfix_list(items), sympy.E, evaluate=False)

    def comp(self) -> Any:
        kind, value = self.take()
        if kind == "num":
            return _number(value)
        if kind == "letter":  # (latex2sympy2_extended writes every symbol in lower case)
            if self.peek() == "_":
                return self.subscripted(value.lstrip("\\"))
            return self.symbol(value)
        if value == "|" and self.bars == 2:
            inner = self.expr()
            self.take("|")
            return sympy.Abs(inner, evaluate=False)
        if value == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if value == "\\pi":
            return sympy.pi
        if value == "\\infty":
            return sympy.oo
        if value in ("\\binom", "\\dbinom", "\\tbinom"):
            top = self.braced()
            return sympy.binomial(top, self.braced())
        if value == "\\frac":
            top = self.braced()
            bottom = self.braced()
            if top.is_Integer and bottom.is_Integer:
                if bottom == 0:
                    raise _Decline
                return sympy.Rational(top, bottom)
            return sympy.Mul(top, sympy.Pow(bottom, -1, evaluate=False), evaluate=False)
        if value == "\\sqrt":
            return sympy.Pow(self.braced(), sympy.S.Half, evaluate=False)
        if value == "\\ln":
            return self.logarithm()
        if value == "\\lfloor":
            inner = self.expr()
            self.take("\\rfloor")
            return sympy.floor(inner, evaluate=False)
        raise _Decline

    def subscripted(self, letter: str) -> Any:
        """``x_1``, ``a_{1998}``, ``x_{n}``: one symbol, named as the parser names it (the
        subscript in braces when longer than one character); a subscript other than digits
        or one letter, or one before a parenthesis (a function), is declined."""
        self.take("_")
        kind, value = self.take()
        if value == "{":
            kind, value = self.take()
            self.take("}")
        if not ((kind == "num" and value.isdigit()) or (kind == "letter" and value != "e")):
            raise _Decline
        if self.peek() in ("(", "_"):
            raise _Decline
        name = f"{letter}_{value}" if len(value) == 1 else f"{letter}_{{{value}}}"
        return self.symbol(name)

    def symbol(self, name: str) -> Any:
        """A letter (``x``, ``\\alpha``) or subscripted name as the parser names it: no
        backslash, lower case (latex2sympy2_extended writes every symbol so), real where
        asked."""
        return sympy.Symbol(name.lstrip("\\").lower(), real=self.is_real)

    def braced(self) -> Any:
        self.take("{")
        inner = self.expr()
        self.take("}")
        return inner


def _number(text: str) -> Any:
    if text.isdigit():
        text = text.lstrip("0") or "0"
    return sympy.Number(text)


def _interval(left: Any, right: Any, left_open: bool, right_open: bool) -> Any:
    """``(a, b)`` / ``[a, b]`` as latex2sympy2_extended reads them: an interval, or a
    tuple when the interval would be empty."""
    try:
        if (left_open and right_open and right <= left) or (
                not left_open and not right_open and right < left):
            return sympy.Tuple(left, right)
    except TypeError:  # an undecidable comparison (symbols)
        pass
    return sympy.Interval(left, right, left_open=left_open, right_open=right_open)


def _add_flat(lh: Any, rh: Any) -> Any:
    if lh.is_Add or rh.is_Add:
        args = [*(lh.args if lh.is_Add else [lh]), *(rh.args if rh.is_Add else [rh])]
        return sympy.Add(*args, evaluate=False)
    return sympy.Add(lh, rh, evaluate=False)


def _mul_flat(lh: Any, rh: Any) -> Any:
    if lh.is_Mul or rh.is_Mul:
        args = [*(lh.args if lh.is_Mul else [lh]), *(rh.args if rh.is_Mul else [rh])]
        return sympy.Mul(*args, evaluate=False)
    return sympy.Mul(lh, rh, evaluate=False)


def _divide(lh: Any, rh: Any) -> Any:
    if lh.is_Integer and rh.is_Integer:
        if rh == 0:
            raise _Decline
        return sympy.Rational(lh, rh)
    return sympy.Mul(lh, sympy.Pow(rh, -1, evaluate=False), evaluate=False)


def _postfix_list(items: list[Any]) -> Any:
    """Implicit products (``2x``, ``3\\sqrt{2}``), grouped from the right, with a mixed
    fraction (an integer before a positive fraction) read as its sum."""
    value = items[-1]
    for res in reversed(items[:-1]):
        if res.is_Integer and value.is_Rational and value.p > 0 and value.q > 0:
            value = sympy.Rational(res * value.q - value.p if res < 0 else res * value.q + value.p,
                                   value.q)
        else:
            value = _mul_flat(res, value)
    return value


@lru_cache(maxsize=4096)
def read_latex(latex: str, is_real: bool = True) -> Any:
    """The sympy object latex2sympy2_extended makes of ``latex`` (normalised as math-verify
    hands it over, read with ``is_real``), or None when ``latex`` is outside the subset
    read here."""
    if len(latex) > MAX_READ:
        return None
    try:
        tokens = _tokens(latex)
        cups = [i for i, (_, value) in enumerate(tokens) if value == "\\cup"]
        if not cups:
            return _Reader(tokens, is_real).whole(latex)
        if len(cups) > 1:
            return None
        # ``(0, \\frac{1}{2}) \\cup (2, +\\infty)``: the union of two bracketed lists (a
        # tuple in it is read as a set), unevaluated
        parts = []
        for piece in (tokens[:cups[0]], tokens[cups[0] + 1:]):
            if not piece or piece[0][1] not in _OPENING or piece[-1][1] not in _CLOSING:
                return None
            part = _Reader(piece, is_real).whole("")
            parts.append(FiniteSet(*part) if isinstance(part, sympy.Tuple) else part)
        return sympy.Union(*parts, evaluate=False)
    except (_Decline, RecursionError, ZeroDivisionError, TypeError, ValueError):
        return None


_state = threading.local()


@contextlib.contextmanager
def reading_fast() -> Iterator[None]:
    """math-verify calls in this block (this thread) read the subset by hand."""
    before = getattr(_state, "on", False)
    _state.on = True
    try:
        yield
    finally:
        _state.on = before


def install(parser: Any) -> None:
    """Route math-verify's LaTeX parse (``math_verify.parser.parse_latex_cached``) through
    :func:`read_latex` inside :func:`reading_fast` blocks; unchanged everywhere else."""
    original = parser.parse_latex_cached
    if getattr(original, "_rewardkit_reader", False):
        return
    treat_as_complex = parser.should_treat_as_complex

    def parse_latex_cached(latex: str) -> Any:
        if getattr(_state, "on", False):
            value = read_latex(latex, not treat_as_complex(latex))
            if value is not None:
                return value
        return original(latex)

    parse_latex_cached._rewardkit_reader = True  # type: ignore[attr-defined]
    parse_latex_cached.cache_clear = original.cache_clear  # type: ignore[attr-defined]
    parse_latex_cached.__wrapped__ = original  # type: ignore[attr-defined]
    parser.parse_latex_cached = parse_latex_cached
    from latex2sympy2_extended import latex2sympy2

    from rewardkit.builtin.math import antlr_parse

    # what the reader declines: texts the grammar cannot hold raise before the parser runs
    antlr_parse.install(latex2sympy2, lambda: getattr(_state, "on", False))
