"""Whether two polynomial equations have the same solutions, decided exactly.

Equal when they match side by side or are proportional; different when both are
linear (two hyperplanes are one only when proportional), or when a point solving one,
found exactly in Q(sqrt), does not solve the other (:func:`same_equation`). None when
neither is shown: math-verify decides. Apart from the other structures because it is
the one comparison that solves anything.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from rewardkit.builtin.math.exact_numbers import (
    NAMED_CONSTANTS,
    Monomial,
    NotExact,
    Poly,
    poly_add,
    poly_const,
    poly_mul,
    poly_power,
    poly_sqrt,
)


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
    f, g = poly_add(dict(gl), dict(gr), -1), poly_add(dict(pl), dict(pr), -1)
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
        and any(v not in NAMED_CONSTANTS for m in monomials for v, _ in m)


#: the values tried for the other variables when looking for a point of a zero set
_TRIAL_VALUES = (Fraction(1), Fraction(2), Fraction(-1), Fraction(3), Fraction(1, 2))


def _point_apart(g: Poly, f: Poly) -> bool:
    """Whether some point solves ``g = 0`` and not ``f = 0`` (then the two equations have
    different solutions), found exactly: the other variables set to small rationals, ``g``
    solved for a variable of degree one or two in it (a root in Q(sqrt)), ``f`` evaluated
    there. Only for rational coefficients without pi; False when no such point is found."""
    if any(r != 1 or any(v in NAMED_CONSTANTS for v, _ in m) for (m, r) in (*g, *f)):
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
                    if _evaluate(f, {**{v: poly_const(c) for v, c in point.items()}, var: root}):
                        return True
                except NotExact:
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
        return [poly_const(-c0 / c1)] if c1 else []
    disc = c1 * c1 - 4 * c2 * c0
    if disc < 0:
        return []
    try:
        root = poly_sqrt(poly_const(disc))
    except NotExact:
        return []
    base = poly_const(-c1 / (2 * c2))
    half = poly_mul(root, poly_const(1 / (2 * c2)))
    return [poly_add(base, half), poly_add(base, half, -1)]


def _evaluate(f: Poly, point: dict[str, Poly]) -> Poly:
    total: Poly = {}
    for (m, r), c in f.items():
        term: Poly = {((), r): c}
        for v, e in m:
            term = poly_mul(term, poly_power(point[v], poly_const(e)))
        total = poly_add(total, term)
    return total


def _is_constant(p: frozenset[tuple[tuple[Monomial, int], Fraction]]) -> bool:
    return all(m == () for (m, _), _ in p)
