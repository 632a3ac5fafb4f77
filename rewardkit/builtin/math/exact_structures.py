"""Exact answers of the fast path: numbers, tuples, intervals, sets, matrices, equations.

:func:`exact_value` reads an answer into a hashable value of one of those kinds (None
outside the language) and :func:`same` compares two: equal, different, or None when the
kinds or brackets differ and math-verify must say. Numbers come from
:mod:`~rewardkit.builtin.math.exact_numbers`, equations are compared by
:mod:`~rewardkit.builtin.math.exact_equations`.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rewardkit.builtin.math.exact_equations import same_equation
from rewardkit.builtin.math.exact_numbers import (
    MAX_EXACT_CHARS,
    Monomial,
    NotExact,
    Poly,
    exact_tokens,
    parse_poly,
)


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
        raise NotExact
    return parts


_INF = ("inf",)


def _bound(tokens: list[str]) -> Any:
    if tokens == ["\\infty"] or tokens == ["+", "\\infty"]:
        return _INF
    if tokens == ["-", "\\infty"]:
        return ("-inf",)
    if "\\infty" in tokens:
        raise NotExact
    return _frozen(parse_poly(tokens))


@lru_cache(maxsize=65536)
def exact_value(text: str) -> Any:
    """The exact, hashable value of an answer in this module's language; None outside it.
    Kinds: ``("num", poly)``, ``("seq", open, close, items)`` (a tuple or an interval),
    ``("set", items)``, ``("matrix", rows)``, ``("eq", lhs, rhs)``."""
    if len(text) > MAX_EXACT_CHARS or re.search(r"\d,\d{3}(?!\d)", text):
        return None  # "1,000" may be a thousand or a pair
    try:
        return _value(exact_tokens(text))
    except (NotExact, ZeroDivisionError, RecursionError):
        return None


def _value(tokens: list[str]) -> Any:
    if tokens[0].startswith("\\begin"):
        return _matrix(tokens)
    if any(t.startswith(("\\begin", "\\end")) or t in ("&", "\\\\") for t in tokens):
        raise NotExact
    if tokens[0] == "\\{" and tokens[-1] == "\\}":
        inner = tokens[1:-1]
        items = [] if not inner else [_frozen(parse_poly(p)) for p in _split(inner, ",")]
        return ("set", frozenset(items))
    if "\\{" in tokens or "\\}" in tokens:
        raise NotExact
    if "=" in tokens:
        sides = _split(tokens, "=")
        if len(sides) != 2:
            raise NotExact
        return ("eq", _frozen(parse_poly(sides[0])), _frozen(parse_poly(sides[1])))
    if tokens[0] in ("(", "[") and tokens[-1] in (")", "]") and len(tokens) > 2:
        parts = _split(tokens[1:-1], ",")
        if len(parts) > 1:
            return ("seq", tokens[0], tokens[-1], tuple(_bound(p) for p in parts))
    if "," in tokens or "\\infty" in tokens:
        raise NotExact  # a bare list: math-verify reads it as a set, or not
    return ("num", _frozen(parse_poly(tokens)))


def _matrix(tokens: list[str]) -> Any:
    env = tokens[0][len("\\begin") :]
    if len(tokens) < 3 or tokens[-1] != "\\end" + env:
        raise NotExact
    body = tokens[1:-1]
    if any(t.startswith(("\\begin", "\\end")) for t in body):
        raise NotExact
    rows = _split(body, "\\\\")
    cells = [tuple(_frozen(parse_poly(c)) for c in _split(row, "&")) for row in rows]
    if len({len(row) for row in cells}) != 1:
        raise NotExact
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
