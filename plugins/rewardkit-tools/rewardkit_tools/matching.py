"""Tool calls compared with reference calls, by the Berkeley Function Calling
Leaderboard's tolerant rules (its AST checker).

A reference lists, per expected call, each argument's allowed values: BFCL's own shape
``[{"get_weather": {"city": ["Paris", "paris, fr"], "unit": ["celsius", ""]}}]``, where
``""`` among the allowed values marks an argument that may be left out, or plain calls
``[{"name": "get_weather", "arguments": {"city": "Paris"}}]`` (each value the one allowed,
every argument expected). A call matches a reference call when the function name is the
same, every required argument (from the offered schema) and every non-optional reference
argument is there, no other argument is, each value has the schema's type (an integer
where a number is declared is coerced, a text where the reference holds a text that
stands for a variable is accepted, as BFCL does) and is one of the allowed values:
texts compared without case, spaces and ``,./-_*^`` (``"April 1, 2024"`` is
``"april 1 2024"``), lists item by item (an empty list is an optional argument left
out), objects key by key. Parallel calls match in any
order (``order: any``), as a one-to-one assignment, or position by position.

>>> ref = parse_reference([{"add": {"a": [2], "b": [2, 2.0], "note": ["", "sum"]}}])
>>> mismatch("add", {"a": 2, "b": 2.0}, ref[0], None) is None
True
>>> mismatch("add", {"a": 2}, ref[0], None)
"add: argument 'b' is missing"
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit_tools.schema import TYPE_ALIASES, json_type_matches
from rewardkit_tools.source_values import LANGUAGE_NAMES, UndecodableError, source_mismatch

_STANDARDIZE = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class ReferenceCall:
    """One expected call: the function name and each argument's allowed values (an
    allowed value of ``""`` means the argument may be left out)."""

    name: str
    allowed: Mapping[str, list[Any]]


class ReferenceError_(ValueError):
    """A reference that is not a list of calls in either accepted shape."""


def parse_reference(raw: Any) -> list[ReferenceCall]:
    """Reference calls from BFCL's shape, plain ``{name, arguments}`` calls, OpenAI
    ``tool_calls`` entries, or the JSON text of any of them; ReferenceError_ otherwise."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ReferenceError_("the reference calls are text that is not JSON") from None
    if isinstance(raw, Mapping):
        raw = [raw]
    if not isinstance(raw, list):
        raise ReferenceError_(f"the reference calls are {type(raw).__name__}, not a list")
    calls = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ReferenceError_(f"reference call {i} is not an object")
        inner = item.get("function")
        plain = inner if isinstance(inner, Mapping) else item
        if isinstance(plain.get("name"), str):
            arguments = plain.get("arguments", {})
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    raise ReferenceError_(f"reference call {i}: arguments are not JSON"
                                          ) from None
            if not isinstance(arguments, Mapping):
                raise ReferenceError_(f"reference call {i}: arguments are not an object")
            calls.append(ReferenceCall(plain["name"],
                                       {k: [_allowed_form(v)] for k, v in arguments.items()}))
        elif len(item) == 1 and isinstance(next(iter(item.values())), Mapping):
            name, allowed = next(iter(item.items()))
            if not all(isinstance(v, list) for v in allowed.values()):
                raise ReferenceError_(f"reference call {i} ({name}): each argument needs a "
                                      "list of allowed values")
            calls.append(ReferenceCall(str(name), dict(allowed)))
        else:
            raise ReferenceError_(f"reference call {i} is neither {{name, arguments}} nor "
                                  "{function_name: {argument: [allowed values]}}")
    return calls


def _allowed_form(value: Any) -> Any:
    """A plain reference value in BFCL's form: an object's values (and those of a list of
    objects) become one-value lists, as BFCL writes nested objects."""
    if isinstance(value, Mapping):
        return {k: [v] for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return [{k: [v] for k, v in item.items()} for item in value]
    return value


def standardize(text: str) -> str:
    """A text as BFCL compares it: no spaces or ``,./-_*^``, lower case, ' as "."""
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def _spaces(text: str) -> str:
    return "".join(text.split()).lower()


#: how texts are compared: ``bfcl`` as BFCL does (no case, spaces or ``,./-_*^``: right
#: for names and dates, blind to operators, so ``3*4`` is ``3/4``); ``spaces`` without
#: case and white space only (expressions, code); ``exact`` as written
TEXT_RULES: dict[str, Callable[[str], str]] = {
    "bfcl": standardize, "spaces": _spaces, "exact": lambda text: text}


def _std(value: Any, norm: Callable[[str], str]) -> Any:
    return norm(value) if isinstance(value, str) else value


def _same(value: Any, allowed: Any) -> bool:
    """Equality that keeps true apart from 1 (JSON booleans are not numbers)."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return isinstance(value, bool) and isinstance(allowed, bool) and value == allowed
    return bool(value == allowed)


def _in(value: Any, allowed: Sequence[Any]) -> bool:
    return any(_same(value, a) for a in allowed)


def _dict_matches(value: Mapping[str, Any], options: Sequence[Any],
                  norm: Callable[[str], str]) -> bool:
    for option in options:
        if not isinstance(option, Mapping):
            continue
        fits = all(k in option and isinstance(option[k], list)
                   and _in(_std(v, norm), [_std(a, norm) for a in option[k]])
                   for k, v in value.items())
        missing = any(k not in value and "" not in (vals if isinstance(vals, list) else [vals])
                      for k, vals in option.items())
        if fits and not missing:
            return True
    return False


def _value_matches(value: Any, allowed: list[Any], norm: Callable[[str], str]) -> bool:
    present = [a for a in allowed if not (isinstance(a, str) and a == "")]
    if isinstance(value, str):
        return norm(value) in [norm(a) for a in present if isinstance(a, str)]
    if isinstance(value, list | tuple):
        if not value and len(present) < len(allowed):
            return True  # an empty list for an argument that may be left out (as BFCL)
        items = [_std(v, norm) for v in value]
        if items and all(isinstance(v, Mapping) for v in value):
            return any(isinstance(option, list) and len(option) == len(value)
                       and all(_dict_matches(v, [o], norm)
                           for v, o in zip(value, option, strict=True))
                       for option in present)
        return any(isinstance(option, list) and len(option) == len(items)
                   and all(_same(v, _std(o, norm)) for v, o in zip(items, option, strict=True))
                   for option in present)
    if isinstance(value, Mapping):
        return _dict_matches(value, present, norm)
    return _in(value, present)


def mismatch(name: str, arguments: Mapping[str, Any], ref: ReferenceCall,
             function: Mapping[str, Any] | None, texts: str = "bfcl",
             language: str = "python") -> str | None:
    """Why a call of ``name`` with ``arguments`` is not ``ref`` (``function``, the offered
    schema, gives required arguments and types; None = compare values only; ``texts``
    one of :data:`TEXT_RULES`), or None. ``language`` ``java`` / ``javascript``: each
    value is source text read by its declared type first (BFCL's Java and JavaScript
    categories, ``rewardkit_tools.source_values``); UndecodableError when it cannot be."""
    norm = TEXT_RULES[texts]
    if language != "python" and function is None:
        raise UndecodableError(f"{name}: reading {LANGUAGE_NAMES[language]} source needs "
                               "the offered function schemas (a tools column, use_schema)")
    if name != ref.name:
        return f"called {name}, expected {ref.name}"
    parameters = function.get("parameters") if function else None
    parameters = parameters if isinstance(parameters, Mapping) else {}
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for key in parameters.get("required") or ():
        if key not in arguments:
            return f"{name}: required argument {key!r} is missing"
    for key, value in arguments.items():
        if key not in ref.allowed or (function is not None and key not in properties):
            return f"{name}: unexpected argument {key!r}"
        allowed = ref.allowed[key]
        schema = properties.get(key)
        if language != "python":
            problem = source_mismatch(name, key, value, allowed, schema, language, norm)
            if problem:
                return problem
            continue
        type_name = schema.get("type") if isinstance(schema, Mapping) else None
        type_name = TYPE_ALIASES.get(type_name, type_name) if isinstance(type_name, str) \
            else None
        if type_name == "number" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # an integer where a number is declared
        if type_name and not json_type_matches(value, type_name):
            # a value of the reference's own type stands for a variable (BFCL's rule)
            ref_type = next((type(a) for a in allowed if a != ""), None)
            if ref_type is None or type(value) is not ref_type:
                return f"{name}: argument {key!r} is {type(value).__name__}, " \
                    f"expected {type_name}"
        if not _value_matches(value, allowed, norm):
            return f"{name}: argument {key!r} is {value!r}, expected one of {allowed}"
    for key, allowed in ref.allowed.items():
        if key not in arguments and "" not in allowed:
            return f"{name}: argument {key!r} is missing"
    return None


def assign(n_calls: int, n_refs: int, fits: Callable[[int, int], bool]) -> dict[int, int]:
    """A largest one-to-one assignment of calls to reference calls (reference -> call),
    ``fits(call, ref)`` saying which pairs match (Kuhn's augmenting paths; a handful of
    calls, so the quadratic search is nothing)."""
    table = [[fits(c, r) for r in range(n_refs)] for c in range(n_calls)]
    owner: dict[int, int] = {}

    def place(call: int, seen: set[int]) -> bool:
        for ref in range(n_refs):
            if table[call][ref] and ref not in seen:
                seen.add(ref)
                if ref not in owner or place(owner[ref], seen):
                    owner[ref] = call
                    return True
        return False

    for call in range(n_calls):
        place(call, set())
    return owner
