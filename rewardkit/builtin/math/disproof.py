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
``simplify`` cannot reduce it to zero and math-verify's answer is False.

The same disproof reaches inside math-verify's rules for an equation against a value and
for finite sets, tuples and intervals (issue 42 item 1), each rule read from its 0.9
source (``sympy_expr_eq``, ``sympy_compare_sets``):

- an equation answer against a non-equation gold is its last right-hand side, and an
  assignment gold (``x = 5``) against a non-equation answer is its last right-hand side,
  as math-verify unwraps them before comparing; any other relation is left to it;
- two intervals differ when their open/closed ends differ, or an end of one is disproved
  against the same end of the other;
- two finite sets or tuples (a plain value counting as a one-element set) differ when an
  element of one side is disproved against every element of the other: no pairing of
  elements can then be equal (math-verify pairs them in its sorted order), and the two
  sets differ as sets at the point, so sympy cannot find their symmetric difference empty;
- an interval with numeric ends, start below end, against a finite set differs: the
  symmetric difference of an infinite and a finite set is never empty, and the pairing of
  an open interval's ends with a two-element set is disproved as above.

Anything else (no symbols-only expression, a function outside a small list, a value not a
finite number, a difference near zero, unions and other sets, matrices, any exception) is
left to math-verify's ``verify`` as before, pair by pair in its own order, so a True is
always math-verify's own.
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


#: the most elements on a side of a set comparison that the disproof pairs up
_MAX_ELEMENTS = 16


def _different(gold: Any, pred: Any) -> bool:
    import sympy

    unwrapped = _unwrapped(gold, pred)
    if unwrapped is None:
        return False
    gold, pred = unwrapped
    if isinstance(gold, (sympy.Set, sympy.Tuple)) or isinstance(pred, (sympy.Set, sympy.Tuple)):
        return _sets_different(gold, pred)
    return _plain_different(gold, pred)


def _unwrapped(gold: Any, pred: Any) -> tuple[Any, Any] | None:
    """The two sides as math-verify compares them after its equation rules: an equation
    answer against a non-equation gold becomes its last right-hand side, an assignment
    gold against a non-equation answer its last right-hand side. None (undecided) when a
    relation is left on either side."""
    from math_verify.grader import (
        is_assignment_relation,
        is_equation,
        is_relation,
        take_last_relation,
    )

    gold_equation, pred_equation = is_equation(gold), is_equation(pred)
    if pred_equation and not gold_equation:
        pred = take_last_relation(pred).rhs
    elif not pred_equation and is_assignment_relation(gold):
        gold = take_last_relation(gold).rhs
    if is_relation(gold) or is_relation(pred):
        return None
    return gold, pred


def _sets_different(gold: Any, pred: Any) -> bool:
    """math-verify's ``sympy_compare_sets`` is certain to be False for these two (sets,
    tuples or intervals, a plain value as a one-element set): see the module's rules."""
    import sympy
    from math_verify.grader import sympy_str_eq

    finite = (sympy.FiniteSet, sympy.Tuple)
    for side in (gold, pred):
        if not isinstance(side, (*finite, sympy.Interval)) and not _plain_value(side):
            return False
    if gold in (sympy.nan, sympy.zoo) or sympy_str_eq(gold, pred):
        return False
    a = gold if isinstance(gold, (sympy.Set, sympy.Tuple)) else sympy.FiniteSet(gold)
    b = pred if isinstance(pred, (sympy.Set, sympy.Tuple)) else sympy.FiniteSet(pred)
    if not all(isinstance(s, (*finite, sympy.Interval)) for s in (a, b)):
        return False  # FiniteSet(x) evaluated to something else
    if isinstance(a, sympy.Interval) and isinstance(b, sympy.Interval):
        if a.left_open != b.left_open or a.right_open != b.right_open:
            return True
        return numerically_different(a.start, b.start) or numerically_different(a.end, b.end)
    if a == b:
        return False
    if isinstance(a, finite) and isinstance(b, finite):
        return _no_pairing(list(a.args), list(b.args))
    interval, other = (a, b) if isinstance(a, sympy.Interval) else (b, a)
    if isinstance(other, sympy.FiniteSet) and not _proper(interval):
        return False  # their symmetric difference might be empty
    if interval.is_open and len(other) == 2:
        ends = [interval.start, interval.end]
        return _no_pairing(ends, list(b.args)) if interval is a else \
            _no_pairing(list(a.args), ends)
    return True


def _plain_value(expr: Any) -> bool:
    """An expression math-verify's set rules wrap in a one-element set (not a matrix)."""
    import sympy

    return isinstance(expr, sympy.Expr) and not isinstance(
        expr, (sympy.MatrixBase, sympy.MatrixExpr))


def _no_pairing(gold: list[Any], pred: list[Any]) -> bool:
    """An element of one side is disproved against every element of the other."""
    if not gold or not pred or max(len(gold), len(pred)) > _MAX_ELEMENTS:
        return False
    if not all(_element(x) for x in (*gold, *pred)):
        return False  # sets or intervals inside: equal as sets in ways not checked here
    differ = {(i, j): numerically_different(g, p)
              for i, g in enumerate(gold) for j, p in enumerate(pred)}
    return any(all(differ[i, j] for j in range(len(pred))) for i in range(len(gold))) or \
        any(all(differ[i, j] for i in range(len(gold))) for j in range(len(pred)))


def _element(expr: Any) -> bool:
    """A plain value, or a tuple of them (an ordered pair inside a set)."""
    import sympy

    if isinstance(expr, sympy.Tuple):
        return all(_element(x) for x in expr.args)
    return _plain_value(expr)


def _proper(interval: Any) -> bool:
    """Numeric ends (infinite allowed), start strictly below end: infinitely many points."""
    ends = (interval.start, interval.end)
    if any(end.free_symbols or end.is_extended_real is not True for end in ends):
        return False
    return (interval.end - interval.start).is_extended_positive is True


def _plain_different(gold: Any, pred: Any) -> bool:
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
