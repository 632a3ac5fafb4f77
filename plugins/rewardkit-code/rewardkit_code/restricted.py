"""Compiling a reward function written in the config, with RestrictedPython.

The source must define ``def reward(completion, reference, metadata)`` at top level.
It is compiled here (at config load, so ``rewardkit validate`` reports a bad source
with line numbers) and the code object is run only inside a sandbox child, by
``_restricted_harness``: RestrictedPython narrows what the code can say, the sandbox
bounds what it can do.

Rejected when compiling: syntax errors; names and attributes starting with ``_``
(``().__class__``, ``e.__traceback__``); frame, generator and traceback internals
(``gi_frame``, ``f_back``, ``f_globals``, ``tb_frame``...); ``exec``/``eval`` calls;
``try/except*``, ``match``, ``async``; imports of modules outside the allow-list.

>>> source = "def reward(completion, reference, metadata):\\n    return 1.0"
>>> compile_reward_source(source).co_filename
'<reward>'
>>> compile_reward_source("import os\\ndef reward(c, r, m):\\n    return 0.0")
Traceback (most recent call last):
...
rewardkit_code.restricted.RewardSourceError: line 1: import of 'os' is not allowed ...
"""

from __future__ import annotations

import ast
import functools
import os
import types
from collections.abc import Iterable

import RestrictedPython
from RestrictedPython import compile_restricted_exec

#: modules a reward source may import (the ``allowed_modules`` param narrows this)
SAFE_MODULES: tuple[str, ...] = (
    "re",
    "math",
    "json",
    "string",
    "collections",
    "collections.abc",
    "itertools",
    "functools",
    "statistics",
    "unicodedata",
    "difflib",
    "fractions",
    "decimal",
    "heapq",
    "bisect",
    "textwrap",
)
#: the default allow-list
DEFAULT_MODULES: tuple[str, ...] = SAFE_MODULES
REWARD_FUNCTION = "reward"
SOURCE_FILENAME = "<reward>"


class RewardSourceError(ValueError):
    """The source cannot be used; the message has one ``line N: ...`` per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = sorted(problems, key=_line_number)
        super().__init__("; ".join(problem.rstrip(".") for problem in self.problems))


def _line_number(problem: str) -> int:
    number = problem.removeprefix("line ").split(":", 1)[0]
    return int(number) if number.isdigit() else 0


def _line_of(message: str) -> str:
    """RestrictedPython says ``Line 3: ...``; rewardkit says ``line 3: ...``."""
    if message.startswith("Line ") and ":" in message:
        number, rest = message[5:].split(":", 1)
        if number.strip().isdigit():
            return f"line {number.strip()}:{rest}"
    return message


def _import_problems(tree: ast.AST, allowed: frozenset[str]) -> list[str]:
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                problems.append(f"line {node.lineno}: relative imports are not allowed")
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            if name not in allowed:
                problems.append(
                    f"line {node.lineno}: import of {name!r} is not allowed "
                    f"(allowed: {', '.join(sorted(allowed))})"
                )
    return problems


def _signature_problems(tree: ast.Module) -> list[str]:
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == REWARD_FUNCTION
    ]
    if not found:
        return [
            "line 1: the source must define `def reward(completion, reference, metadata)` "
            "at top level"
        ]
    function = found[-1]
    arguments = function.args
    positional = len(arguments.posonlyargs) + len(arguments.args)
    required_keywords = [
        arg.arg
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if default is None
    ]
    if (positional < 3 and arguments.vararg is None) or required_keywords:
        return [
            f"line {function.lineno}: reward must accept three positional arguments "
            "(completion, reference, metadata)"
        ]
    return []


@functools.lru_cache(maxsize=64)
def _compile(source: str, allowed: frozenset[str]) -> types.CodeType:
    try:
        tree = ast.parse(source, SOURCE_FILENAME)
    except SyntaxError as error:
        raise RewardSourceError([f"line {error.lineno}: SyntaxError: {error.msg}"]) from None
    except ValueError as error:  # null bytes
        raise RewardSourceError([f"line 1: {error}"]) from None
    result = compile_restricted_exec(source, filename=SOURCE_FILENAME)
    problems = [_line_of(message) for message in result.errors]
    problems += _import_problems(tree, allowed) + _signature_problems(tree)
    if problems or result.code is None:
        raise RewardSourceError(problems or ["line 1: the source did not compile"])
    return result.code


def compile_reward_source(
    source: str, allowed_modules: Iterable[str] = DEFAULT_MODULES
) -> types.CodeType:
    """The restricted code object of ``source``; :class:`RewardSourceError` lists problems.

    Cached: the same source is compiled once per process.
    """
    return _compile(source, frozenset(allowed_modules))


def restricted_python_path() -> str:
    """The directory that holds the ``RestrictedPython`` package (an import path)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(RestrictedPython.__file__)))
