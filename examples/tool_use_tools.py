"""The two tools of examples/tool-use.yaml: ``convert_units`` and ``calculate``.

Plain typed functions with Google-style docstrings, so transformers' ``get_json_schema``
(what TRL and verl render into the prompt) reads the same schemas as the ``tools`` column
of examples/data/tool-use.jsonl. They give the results recorded in its rollouts
(``convert_units(12, "km", "mi")`` is ``"7.456"``, ``calculate("7.456*3")`` is
``"22.368"``); a call they cannot answer raises ``ValueError``, which each backend's tool
loop turns into a failed tool result (``tool_errors`` counts it).

Each backend is handed them its own way (examples/tool-use.yaml's ``train.backend_args``):
TRL as ``tool_use_tools:convert_units`` import paths, verl through
``tool_use_verl_tools.py`` (verl's ``@function_tool`` registration), ms-swift through the
scheduler in ``tool_use_swift_scheduler.py``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable

#: value in the unit's base (km and kg), per unit
_UNITS = {"km": ("length", 1.0), "mi": ("length", 1.609344),
          "kg": ("mass", 1.0), "lb": ("mass", 0.45359237)}
#: the operators ``calculate`` evaluates: arithmetic only
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg}
#: longest expression ``calculate`` parses (a policy's runaway text is not arithmetic)
MAX_EXPRESSION_CHARS = 200


def convert_units(value: float, from_unit: str, to_unit: str,
                  precision: int | None = None) -> str:
    """Convert a value between units.

    Args:
        value: The amount to convert.
        from_unit: The unit the value is in. (choices: ["km", "mi", "kg", "lb"])
        to_unit: The unit to convert to. (choices: ["km", "mi", "kg", "lb"])
        precision: Decimal places of the result (default 3).
    """
    if from_unit not in _UNITS or to_unit not in _UNITS:
        raise ValueError(f"unknown unit: use one of {', '.join(_UNITS)}")
    (kind, factor), (to_kind, to_factor) = _UNITS[from_unit], _UNITS[to_unit]
    if kind != to_kind:
        raise ValueError(f"cannot convert {from_unit} ({kind}) to {to_unit} ({to_kind})")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"value must be a number, got {value!r}")
    digits = 3 if precision is None else int(precision)
    return _number(round(float(value) * factor / to_factor, digits))


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: Numbers with + - * / // % ** and parentheses, e.g. "7.456*3".
    """
    if not isinstance(expression, str) or len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression must be text of at most {MAX_EXPRESSION_CHARS} chars")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        result = _evaluate(tree.body)
    except SyntaxError as exc:
        raise ValueError(exc.msg) from None
    except (ZeroDivisionError, OverflowError, RecursionError, MemoryError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    if not math.isfinite(result):
        raise ValueError("the result is not a finite number")
    return _number(result)


def _evaluate(node: ast.expr) -> float:
    """The value of a numbers-and-operators tree; anything else (names, calls,
    attributes, strings) is refused, so no expression reaches Python's own evaluator."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        result = _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
        if isinstance(result, complex):  # (-8) ** 0.5
            raise ValueError("the result is not a real number")
        return result
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"not arithmetic: {type(node).__name__}")


def _number(value: float) -> str:
    """The result as the rollouts show it: 12 significant digits, no float noise
    (``22.368``, not ``22.368000000000002``), an integer without ``.0``."""
    return format(value, ".12g")
