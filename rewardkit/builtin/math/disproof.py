"""math-verify's ``verify`` with a cheap numeric disproof first: the same verdict, less sympy.

math-verify (0.9, default settings, strict) decides a pair of plain expressions (not
relations, sets, tuples, matrices or a lone symbol) in three steps: structural equality,
its numeric comparison (``sympy_numeric_eq``: rounding where a float is involved, an
exact or ``evalf(chop=True)`` comparison otherwise), then ``simplify(gold - pred).is_zero``.
The last step is most of its time on real answers, and on a wrong answer it is spent only
to fail. :func:`verify` runs math-verify's own first two steps and, in place of the third,
evaluates ``gold - pred`` at one point (every free symbol given a distinct rational that
satisfies its assumptions, e.g. ``real``): a finite value clearly away from zero (relative
to the two sides' sizes) shows that the difference is not zero as a function, so
``simplify`` cannot reduce it to zero and math-verify's answer is False. Anything else
(no symbols-only expression, a function outside a small list, a value not a finite
number, a difference near zero, any exception) is left to math-verify's ``verify`` as
before, pair by pair in its own order, so a True is always math-verify's own.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product
from typing import Any

#: math-verify versions whose ``verify`` rules this module follows
KNOWN_VERSIONS = ("0.9.",)

#: relative size under which a difference proves nothing (math-verify rounds floats to 6
#: places and chops evalf at 15 digits; sides are evaluated to 40)
_MARGIN = 1e-9
_DIGITS = 40


def verify(mv: Any, gold: list[Any], pred: list[Any]) -> bool:
    """``mv.verify(gold, pred, timeout_seconds=None)``, with each (gold, pred) pair that
    :func:`numerically_different` shows unequal skipped (math-verify would answer False
    for it)."""
    if not _rules_known():
        return bool(mv.verify(gold, pred, timeout_seconds=None))
    for g, t in product(gold, pred):
        if numerically_different(g, t):
            continue
        if mv.verify([g], [t], timeout_seconds=None):
            return True
    return False


@lru_cache(maxsize=1)
def _rules_known() -> bool:
    """The installed math-verify is a version whose comparison rules the disproof follows
    (0.9.x, read from its source); any other version gets plain ``verify``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("math-verify").startswith(KNOWN_VERSIONS)
    except PackageNotFoundError:
        return False


def numerically_different(gold: Any, pred: Any) -> bool:
    """True when math-verify's comparison of these two parsed expressions is certain to be
    False: both plain expressions, not structurally equal, not equal by math-verify's own
    numeric comparison, and their difference evaluates clearly away from zero at one
    point. False (undecided) otherwise."""
    try:
        return _different(gold, pred)
    except Exception:
        return False


def _different(gold: Any, pred: Any) -> bool:
    import sympy

    if not (isinstance(gold, sympy.Expr) and isinstance(pred, sympy.Expr)):
        return False
    if isinstance(gold, sympy.Symbol) or isinstance(pred, sympy.Symbol):
        return False  # math-verify's own symbol rules
    if not (_plain(gold) and _plain(pred)):
        return False
    from math_verify.grader import sympy_numeric_eq, sympy_str_eq

    if gold in (sympy.nan, sympy.zoo) or sympy_str_eq(gold, pred):
        return False
    if sympy_numeric_eq(gold, pred, 6, 15):  # verify's defaults
        return False
    point = _point(gold.free_symbols | pred.free_symbols)
    if point is None:
        return False
    a = _value(gold.xreplace(point))
    b = _value(pred.xreplace(point))
    if a is None or b is None:
        return False
    return abs(a - b) > _MARGIN * (1 + abs(a) + abs(b))


def _plain(expr: Any) -> bool:
    """Built only from numbers, constants, symbols, arithmetic and a few elementary
    functions, all of which evaluate at a point quickly."""
    import sympy
    from sympy.core.numbers import ImaginaryUnit, NumberSymbol
    from sympy.functions.elementary.trigonometric import (
        InverseTrigonometricFunction,
        TrigonometricFunction,
    )

    allowed = (sympy.Number, NumberSymbol, sympy.Symbol, sympy.Add, sympy.Mul, sympy.Pow,
               sympy.exp, sympy.log, TrigonometricFunction, InverseTrigonometricFunction,
               sympy.Abs, sympy.floor, sympy.ceiling, sympy.factorial, sympy.binomial,
               sympy.UnevaluatedExpr, ImaginaryUnit)
    for node in sympy.preorder_traversal(expr):
        if not isinstance(node, allowed):
            return False
        if isinstance(node, sympy.Integer) and abs(int(node)).bit_length() > 2000:
            return False
        if isinstance(node, sympy.Pow) and node.exp.is_Number and abs(node.exp) > 10**4:
            return False
    return True


def _point(symbols: set[Any]) -> dict[Any, Any] | None:
    """A distinct rational for each symbol (2 - 1/(i+3): 5/3, 7/4, 9/5, ...), None when
    one does not satisfy a symbol's assumptions."""
    import sympy

    point = {}
    for i, symbol in enumerate(sorted(symbols, key=str)):
        if not isinstance(symbol, sympy.Symbol):
            return None
        value = sympy.Rational(2 * i + 5, i + 3)
        for fact, holds in symbol.assumptions0.items():
            if getattr(value, f"is_{fact}", None) is not holds:
                return None
        point[symbol] = value
    return point


def _value(expr: Any) -> complex | None:
    """The expression's value to ``_DIGITS`` digits as a finite complex number, or None."""
    import math

    value = complex(expr.evalf(_DIGITS))
    if not (math.isfinite(value.real) and math.isfinite(value.imag)):
        return None
    return value
