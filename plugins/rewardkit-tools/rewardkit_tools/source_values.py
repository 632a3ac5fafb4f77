"""Argument values written as Java or JavaScript source, read as the Berkeley Function
Calling Leaderboard reads them (its Java and JavaScript categories).

In those categories every argument a model passes is a string of source text: ``"3"``
for a Java ``integer``, ``"7L"`` for a ``long``, ``"3.5f"`` for a ``float``, ``"true"``
for a ``boolean`` / ``Boolean``, ``"new ArrayList<>(Arrays.asList(101L, 202L))"`` for an
``ArrayList``, ``"[1, 2]"`` for a JavaScript ``array``, ``"{limit: 50}"`` for a ``dict``.
BFCL's checker turns each into a value by the type its schema declares, then compares as
for Python. Its reading is lenient and these functions keep it, quirks included, so the
verdicts are BFCL's: text that does not have the declared form stays text (and can then
only match a reference text, BFCL's "variable"), collections are split on commas (a
comma inside a string element splits it), a Java ``char`` and the items of a Java
``String[]`` keep their quotes (its pattern for a char never matches), a JavaScript
object's values lose their quotes before they are read (``'5'`` is the number 5).

A type BFCL does not decode (Java ``Set``, ``Hashtable``, ``Queue``, ``Stack``), a name
the language does not have, or a collection text longer than
:data:`MAX_COLLECTION_SOURCE` raises :class:`UndecodableError`: the reward reports an
error, never a silent 0.

>>> decode("new ArrayList<>(Arrays.asList(101L, 202L))", "ArrayList", "java", "long")
[101, 202]
>>> decode("{limit: 50, mode: 'fast'}", "dict", "javascript", None)
{'limit': 50, 'mode': 'fast'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: each language's type names -> the Python type a decoded value of it has
JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "long": int, "float": float, "double": float,
    "boolean": bool, "char": str, "String": str, "any": str, "Array": list, "ArrayList": list,
    "Queue": list, "Stack": list, "Set": set, "HashMap": dict, "Hashtable": dict}
JAVASCRIPT_TYPES: dict[str, type] = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
    "dict": dict, "array": list, "any": str}
LANGUAGE_TYPES = {"java": JAVA_TYPES, "javascript": JAVASCRIPT_TYPES}
LANGUAGE_NAMES = {"java": "Java", "javascript": "JavaScript"}
#: names only one language's schemas use (``language: auto`` reads the language from them)
ONLY_JAVA = frozenset(JAVA_TYPES) - {"integer", "float", "boolean", "String", "any", "double"}
ONLY_JAVASCRIPT = frozenset({"Bigint", "Boolean"})
#: declared types whose items' type (``items.type``) is read too
COLLECTIONS = frozenset({"Array", "ArrayList", "array"})
MAPS = frozenset({"HashMap", "dict"})
#: the longest collection text read (BFCL's patterns are quadratic on some texts; its
#: arguments are a few hundred characters): a longer one is an error, not a guess
MAX_COLLECTION_SOURCE = 1000


class UndecodableError(ValueError):
    """A declared type that BFCL's checker does not decode in that language."""


def decode(text: str, type_name: str, language: str, item: str | None) -> Any:
    """``text`` (source of ``language``) as BFCL reads a value declared ``type_name``
    (``item``: the declared type of a collection's items, or None)."""
    if type_name not in LANGUAGE_TYPES[language]:
        raise UndecodableError(f"{type_name!r} is not a {LANGUAGE_NAMES[language]} type "
                               "BFCL reads")
    if type_name in COLLECTIONS | MAPS and len(text) > MAX_COLLECTION_SOURCE:
        raise UndecodableError(f"a {type_name} of {len(text):,} characters: longer than "
                               f"the {MAX_COLLECTION_SOURCE:,} read as BFCL reads them")
    if language == "java":
        return _java(text, type_name, item)
    return _javascript(text, type_name, item)


# -- Java -------------------------------------------------------------------------------

_INTEGER = re.compile(r"^-?\d+$")
_JAVA_FLOAT = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JAVA_LONG = re.compile(r"^-?\d+[lL]$")
_JAVA_ARRAY = re.compile(r"new\s+\w+\[\]\s*\{(.*?)\}")
_JAVA_AS_LIST = re.compile(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
_JAVA_ADDS = re.compile(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.DOTALL)
_JAVA_ADD = re.compile(r"add\((.+?)\)")
_JAVA_EMPTY_LIST = re.compile(r"new\s+ArrayList<\w*>\(\)")
_JAVA_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.DOTALL)
_JAVA_PUT = re.compile(r"put\(\"(.*?)\",\s*(.*?)\)")
_JAVA_EMPTY_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)")
_SUFFIX = re.compile(r"[fFlL]$")


def _java(text: str, type_name: str, item: str | None) -> Any:
    if type_name in ("byte", "short", "integer"):
        return int(text) if _INTEGER.match(text) else text
    if type_name == "float":
        return float(_SUFFIX.sub("", text)) if _JAVA_FLOAT.match(text) else text
    if type_name == "double":
        return float(text) if _JAVA_DOUBLE.match(text) else text
    if type_name == "long":
        return int(_SUFFIX.sub("", text)) if _JAVA_LONG.match(text) else text
    if type_name == "boolean":
        return text == "true" if text in ("true", "false") else text
    if type_name in ("char", "String", "any"):
        return text
    if type_name == "Array":
        found = _JAVA_ARRAY.search(text)
        if not found:
            return text
        parts = [part.strip() for part in found.group(1).split(",") if part.strip()]
        return [_java(p, item, None) if item else _java_literal(p) for p in parts]
    if type_name == "ArrayList":
        return _java_array_list(text, item)
    if type_name == "HashMap":
        found = _JAVA_MAP.search(text)
        if found:
            body = found.group(1)
            return {key: _java_literal(value.strip())
                    for key, value in _JAVA_PUT.findall(body)} if body.strip() else {}
        return {} if _JAVA_EMPTY_MAP.search(text) else text
    raise UndecodableError(f"BFCL does not decode Java {type_name} values")


def _java_array_list(text: str, item: str | None) -> Any:
    found = _JAVA_AS_LIST.search(text)
    if found:
        parts = [part.strip() for part in found.group(1).split(",")]
    else:
        found = _JAVA_ADDS.search(text)
        if not found:
            return [] if _JAVA_EMPTY_LIST.search(text) else text
        parts = [part.strip() for part in _JAVA_ADD.findall(found.group(1))]
    if item in ("char", "String"):
        return [part[1:-1] for part in parts]  # the quotes dropped, whatever they are
    return [_java(p, item, None) if item else _java_literal(p) for p in parts]


def _java_literal(text: str) -> Any:
    """A Java literal of no declared type: boolean, "string", long, float, int, double,
    else the text."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _JAVA_LONG.match(text) or _JAVA_FLOAT.match(text):
        number = _SUFFIX.sub("", text)
        return int(number) if _JAVA_LONG.match(text) else float(number)
    return _number_or_text(text)


def _number_or_text(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


# -- JavaScript -------------------------------------------------------------------------

_JS_FLOAT = re.compile(r"^-?\d+(\.\d+)?$")
_JS_BIGINT = re.compile(r"^-?\d+n$")
_JS_NEW_ARRAY = re.compile(r"new\s+Array\(\s*\[")
_JS_ARRAY = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
_JS_BRACKETS = re.compile(r"\[(.*?)\]")
_JS_OBJECT = re.compile(r"\{(.*?)\}")
_JS_PAIR = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")


def _javascript(text: str, type_name: str, item: str | None) -> Any:
    if type_name == "String":
        quoted = (text.startswith('"') and text.endswith('"')) or \
            (text.startswith("'") and text.endswith("'"))
        return text[1:-1] if quoted else text
    if type_name == "integer":
        return int(text) if _INTEGER.match(text) else text
    if type_name == "float":
        return float(text) if _JS_FLOAT.match(text) else text
    if type_name == "Bigint":
        return int(text[:-1]) if _JS_BIGINT.match(text) else text
    if type_name == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if type_name == "array":
        return _js_array(text.strip(), item)
    if type_name == "dict":
        return _js_object(text.strip())
    return text  # any


def _js_array(code: str, item: str | None) -> Any:
    """An array literal (``[...]``, ``new Array(...)``, one level of nesting); anything
    that fails to read stays the text."""
    try:
        end = _nested_array_end(code)
        if end is not None:
            rows = []
            for i, inner in enumerate(_JS_BRACKETS.findall(code[:end])):
                inner = inner.strip()
                if i == 0 and inner.startswith("["):
                    inner = inner[1:]
                rows.append([_js_literal(part) for part in inner.split(",")])
            return rows
        flat = _JS_ARRAY.match(code)
        if not flat:
            return code
        body = flat.group(1) if flat.group(1) is not None else flat.group(2) or ""
        parts = body.strip().split(",") if body.strip() else []
        if item:
            return [_javascript(part.strip(), item, None) for part in parts]
        return [_js_literal(part) for part in parts]
    except (ValueError, TypeError, IndexError, RecursionError):
        return code


def _nested_array_end(code: str) -> int | None:
    """Where an array of arrays at the start of ``code`` ends, as BFCL's pattern reads it
    (``[`` then rows ``[...]`` separated by commas, then ``]``; or ``new Array([...],
    ...)``; a row's content is any text on one line up to a ``]``), or None. The first
    reading a backtracking regex engine finds, found without its exponential search:
    BFCL's regex takes seconds on ``[[1],[1],...`` of two dozen rows and does not end on
    longer ones. Each position is tried once (memoised), so the cost is quadratic in the
    number of ``]`` at most."""
    if code.startswith("["):
        start, close = _skip_space(code, 1), "]"
    else:
        opened = _JS_NEW_ARRAY.match(code)
        if opened is None:
            return None
        start, close = opened.end() - 1, ")"
    if not code.startswith("[", start):
        return None
    rests: dict[int, int | None] = {}

    def rows_then_close(pos: int) -> int | None:
        """After a row: more rows (as many as fit), then the closing character."""
        if pos not in rests:
            rests[pos] = None
            if code.startswith(",", pos):
                opener = _skip_space(code, pos + 1)
                if code.startswith("[", opener):
                    rests[pos] = row_ends(opener + 1)
            if rests[pos] is None and code.startswith(close, pos):
                rests[pos] = pos + 1
        return rests[pos]

    def row_ends(pos: int) -> int | None:
        """A row's content (shortest first, one line) and what follows it."""
        end = pos
        while True:
            end = code.find("]", end)
            newline = code.find("\n", pos, end) if end >= 0 else -1
            if end < 0 or newline >= 0:
                return None
            found = rows_then_close(_skip_space(code, end + 1))
            if found is not None:
                return found
            end += 1

    return row_ends(start + 1)


def _skip_space(code: str, pos: int) -> int:
    while pos < len(code) and code[pos].isspace():
        pos += 1
    return pos


def _js_object(code: str) -> Any:
    """An object literal, one level (values that are arrays or objects read again);
    anything else stays the text."""
    if code == "{}":
        return {}
    found = _JS_OBJECT.match(code)
    if not found:
        return code
    try:
        result: dict[str, Any] = {}
        for key, value in _JS_PAIR.findall(found.group(1)):
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                result[key.strip().strip("'\"")] = _js_array(value, None)
            elif value.startswith("{") and value.endswith("}"):
                result[key.strip().strip("'\"")] = _js_object(value)
            else:
                result[key.strip().strip("'\"")] = _js_literal(value.strip("'\""))
        return result
    except (ValueError, TypeError, IndexError, RecursionError):
        return code


def _js_literal(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 1 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return _number_or_text(text)


# -- the checker's rules on a decoded value ----------------------------------------------


def source_mismatch(name: str, key: str, value: Any, allowed: list[Any],
                    schema: Any, language: str, norm: Any) -> str | None:
    """Why ``value`` (an argument of ``name``, Java/JavaScript source) is not one of
    ``allowed``, by BFCL's rules for that language, or None. ``schema`` is the argument's
    schema, ``norm`` the text rule. UndecodableError when BFCL cannot read the declared
    type."""
    types = LANGUAGE_TYPES[language]
    label = LANGUAGE_NAMES[language]
    declared = schema.get("type") if isinstance(schema, Mapping) else None
    if not isinstance(declared, str) or declared not in types:
        raise UndecodableError(f"{name}: argument {key!r} is declared {declared!r}, not a "
                               f"{label} type BFCL reads")
    if not isinstance(value, str):
        return f"{name}: argument {key!r} is {type(value).__name__}, expected {label} " \
            "source text (a string)"
    item = None
    if declared in COLLECTIONS:
        items = schema.get("items")
        item = items.get("type") if isinstance(items, Mapping) else None
        if not isinstance(item, str) or item not in types:
            raise UndecodableError(f"{name}: argument {key!r} is a {declared} whose items "
                                   f"are declared {item!r}, not a {label} type BFCL reads")
    try:
        decoded = decode(value, declared, language, item)
    except UndecodableError as error:
        raise UndecodableError(f"{name}: argument {key!r}: {error}") from None
    expected = types[declared]
    present = [a for a in allowed if not (isinstance(a, str) and a == "")]
    reference_type = type(present[0]) if present else None
    # a reference of another type than declared is a variable's name (BFCL's rule)
    variable = reference_type is not None and reference_type is not expected
    if type(decoded) is expected:
        if item is not None and not _items_typed(decoded, allowed, types[item]):
            return f"{name}: argument {key!r} reads as {decoded!r}, items not {item}"
    elif reference_type is not None and type(decoded) is reference_type:
        variable = True
    else:
        return f"{name}: argument {key!r} reads as {type(decoded).__name__} {decoded!r}, " \
            f"expected {declared}"
    if variable:
        fits = _exactly_in(decoded, allowed)
    elif expected is dict:
        fits = _dict_fits(decoded, present, norm)
    elif expected is list and item is not None and types[item] is dict:
        fits = any(_dicts_fit(decoded, option, norm) for option in allowed)
    elif expected is str:
        fits = norm(decoded) in [norm(a) for a in allowed if isinstance(a, str)]
    elif expected is list:
        fits = any(_list_fits(decoded, option, norm) for option in allowed)
    else:
        fits = _exactly_in(decoded, allowed)
    if fits:
        return None
    return f"{name}: argument {key!r} is {value!r} (read as {decoded!r}), expected one of " \
        f"{allowed}"


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps true apart from 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _exactly_in(value: Any, allowed: list[Any]) -> bool:
    return any(_same(value, a) for a in allowed)


def _items_typed(values: list[Any], allowed: list[Any], item_type: type) -> bool:
    """BFCL's one-level item check: some allowed value (an optional marker included)
    whose items each value item fits, by the declared item type or the option's own."""
    for option in allowed:
        if not isinstance(option, list):
            return True
        first = next((o for o in option if not (isinstance(o, str) and o == "")), None)
        if all(type(v) is item_type or (first is not None and type(v) is type(first))
               for v in values):
            return True
    return False


def _std(value: Any, norm: Any) -> Any:
    return norm(value) if isinstance(value, str) else value


def _list_fits(values: list[Any], option: Any, norm: Any) -> bool:
    if not isinstance(option, list | str):  # "" (left out) is an empty list here
        return False
    expected = [_std(o, norm) for o in option]
    return len(expected) == len(values) and all(
        _same(_std(v, norm), o) for v, o in zip(values, expected, strict=True))


def _dict_fits(value: Mapping[str, Any], options: list[Any], norm: Any) -> bool:
    for option in options:
        if not isinstance(option, Mapping):
            continue
        fits = all(k in option and isinstance(option[k], list)
                   and _exactly_in(_std(v, norm), [_std(a, norm) for a in option[k]])
                   for k, v in value.items())
        missing = any(k not in value and "" not in (vals if isinstance(vals, list) else [])
                      for k, vals in option.items())
        if fits and not missing:
            return True
    return False


def _dicts_fit(values: list[Any], option: Any, norm: Any) -> bool:
    if isinstance(option, str) and option == "":
        return not values
    return isinstance(option, list) and len(option) == len(values) and all(
        isinstance(v, Mapping) and _dict_fits(v, [o], norm)
        for v, o in zip(values, option, strict=True))


def schema_language(functions: list[Mapping[str, Any]]) -> str | None:
    """The language the offered functions' type names say: None when they name no Java or
    JavaScript type (``String``, ``long``, ``Boolean`` ...: JSON/Python schemas), else
    ``java`` or ``javascript`` when every name is one only that language has,
    ``"java or javascript"`` when both have them all (``String``, ``integer``, ``any``),
    ``"both"`` when neither has them all (a mix)."""
    names: set[str] = set()
    for function in functions:
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        for schema in properties.values() if isinstance(properties, Mapping) else ():
            if isinstance(schema, Mapping):
                for found in (schema.get("type"), (schema.get("items") or {}).get("type")
                              if isinstance(schema.get("items"), Mapping) else None):
                    if isinstance(found, str):
                        names.add(found)
    if not names & (ONLY_JAVA | ONLY_JAVASCRIPT | {"String"}):
        return None
    java, javascript = names <= set(JAVA_TYPES), names <= set(JAVASCRIPT_TYPES)
    if java and javascript:
        return "java or javascript"
    if java or javascript:
        return "java" if java else "javascript"
    return "both"
