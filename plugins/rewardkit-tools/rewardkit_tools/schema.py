"""A tool call checked against the function schema it names (JSON Schema parameters).

What function-calling APIs enforce: the function exists, every required argument is
there, no argument the schema does not name, each value of its declared type (an integer
is a number; true is not a number), within its ``enum``, nested ``items`` and
``properties`` checked the same way. The type names of the Berkeley Function Calling
Leaderboard's schemas (``dict``, ``float``, ``tuple``, ``any``) are read as their JSON
Schema equivalents (object, number, array, anything).

>>> add = {"name": "add", "parameters": {"type": "object", "required": ["a"],
...        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}
>>> call_problem("add", {"a": 1}, add) is None
True
>>> call_problem("add", {"a": "1"}, add)
"add: argument 'a' is str, expected integer"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: schema type names as spelled in the wild -> the JSON Schema type they mean
TYPE_ALIASES = {"dict": "object", "float": "number", "tuple": "array", "int": "integer",
                "bool": "boolean", "str": "string", "list": "array", "double": "number"}


def json_type_matches(value: Any, type_name: str) -> bool:
    """Whether ``value`` (decoded JSON) is of JSON Schema type ``type_name``; unknown
    names and ``any`` accept everything (the schema says nothing we can check)."""
    name = TYPE_ALIASES.get(type_name, type_name)
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "object":
        return isinstance(value, Mapping)
    if name == "null":
        return value is None
    return True


def value_problem(value: Any, schema: Mapping[str, Any], where: str) -> str | None:
    """Why ``value`` does not fit ``schema`` (one property's schema), or None."""
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared] if declared else []
    if types and not any(json_type_matches(value, str(t)) for t in types):
        expected = " or ".join(str(t) for t in types)
        return f"{where} is {type(value).__name__}, expected {expected}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{where} is {value!r}, not one of {enum}"
    items = schema.get("items")
    if isinstance(items, Mapping) and isinstance(value, list | tuple):
        for i, item in enumerate(value):
            problem = value_problem(item, items, f"{where}[{i}]")
            if problem:
                return problem
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and isinstance(value, Mapping):
        for key in schema.get("required") or ():
            if key not in value:
                return f"{where} lacks required key {key!r}"
        for key, item in value.items():
            sub = properties.get(key)
            if isinstance(sub, Mapping):
                problem = value_problem(item, sub, f"{where}.{key}")
                if problem:
                    return problem
    return None


def call_problem(name: str, arguments: Mapping[str, Any], function: Mapping[str, Any],
                 allow_extra: bool = False) -> str | None:
    """Why a call of ``name`` with ``arguments`` does not fit ``function`` (an offered
    function schema: ``name``, ``parameters``), or None when it does."""
    parameters = function.get("parameters")
    if not isinstance(parameters, Mapping):
        parameters = {}
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    for key in parameters.get("required") or ():
        if key not in arguments:
            return f"{name}: required argument {key!r} is missing"
    for key, value in arguments.items():
        schema = properties.get(key)
        if not isinstance(schema, Mapping):
            if allow_extra:
                continue
            return f"{name}: argument {key!r} is not in its schema"
        problem = value_problem(value, schema, f"{name}: argument {key!r}")
        if problem:
            return problem
    return None
