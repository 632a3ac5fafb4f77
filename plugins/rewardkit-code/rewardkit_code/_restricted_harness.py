"""Runs inside a sandbox child: a restricted reward function over a chunk of samples.

Sent as the program text of a sandbox task (it imports nothing of rewardkit, only the
standard library and RestrictedPython's guards). Reads one JSON request on stdin::

    {"token": str, "code": base64 of the marshalled code object,
     "allowed": [module names], "timeout_s": float,
     "samples": [[completion, reference, metadata], ...]}

and writes one line per sample, in order: the token, a space, then JSON, one of
``{"value": float}``, ``{"skip": reason}``, ``{"error": reason}``,
``{"timeout": seconds}``. The restricted code cannot reach stdout (``print`` goes to
a collector), so it cannot forge these lines. A call that overruns ``timeout_s`` is
stopped by SIGALRM (this is a sandbox child of its own, not the trainer): its timeout
is written and the child exits; the parent re-runs the samples after it.
"""

from __future__ import annotations

import base64
import importlib
import json
import marshal
import math
import operator
import os
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

from RestrictedPython.Guards import (
    full_write_guard,
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
    safer_getattr,
    safer_getattr_raise,
)
from RestrictedPython.PrintCollector import PrintCollector

SOURCE_FILENAME = "<reward>"
#: public names of allowed modules that still reach unrestricted attribute access or a
#: function's globals (``update_wrapper(g, f, updated=("__globals__",))``)
_DENIED = {
    "string": {"Formatter"},
    "functools": {"update_wrapper", "wraps", "WRAPPER_ASSIGNMENTS", "WRAPPER_UPDATES"},
}
_IN_PLACE = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "^=": operator.ixor,
    "|=": operator.ior,
    "@=": operator.imatmul,
}
#: builtins beyond RestrictedPython's safe set: plain data handling. (RestrictedPython
#: leaves out the ones that iterate in C past ``_getiter_``; the data here is plain
#: JSON, so there is nothing for an iteration guard to protect.)
_EXTRA_BUILTINS = (
    "all",
    "any",
    "dict",
    "enumerate",
    "filter",
    "frozenset",
    "iter",
    "list",
    "map",
    "max",
    "min",
    "next",
    "reversed",
    "set",
    "sorted",
    "sum",
    "tuple",
    "zip",
)


def _module_view(name: str, allowed: frozenset[str]) -> types.SimpleNamespace:
    """A read-only-by-guard namespace of the public, non-module attributes of ``name``."""
    module = importlib.import_module(name)
    denied = _DENIED.get(name, set())
    attributes = {
        key: value
        for key, value in vars(module).items()
        if not key.startswith("_") and not isinstance(value, types.ModuleType)
        and key not in denied
    }
    for other in allowed:
        if other.startswith(name + ".") and "." not in other[len(name) + 1 :]:
            attributes[other[len(name) + 1 :]] = _module_view(other, allowed)
    return types.SimpleNamespace(**attributes)


def _guarded_import(allowed: frozenset[str]) -> Callable[..., Any]:
    views: dict[str, types.SimpleNamespace] = {}

    def view(name: str) -> types.SimpleNamespace:
        if name not in views:
            views[name] = _module_view(name, allowed)
        return views[name]

    def guarded_import(
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> types.SimpleNamespace:
        top = name.split(".")[0]
        if level or name not in allowed or (not fromlist and top not in allowed):
            raise ImportError(f"import of {name!r} is not allowed")
        return view(name) if fromlist else view(top)

    return guarded_import


def _in_place(op: str, target: Any, value: Any) -> Any:
    return _IN_PLACE[op](target, value)


def _guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    """``getattr`` through RestrictedPython's ``safer_getattr``; a missing attribute
    raises AttributeError (``safer_getattr`` alone would answer None)."""
    if default:
        return safer_getattr(obj, name, default[0])
    return safer_getattr_raise(obj, name)


def _guarded_hasattr(obj: Any, name: str) -> bool:
    try:
        safer_getattr_raise(obj, name)
    except (AttributeError, NotImplementedError):
        return False
    return True


def restricted_globals(allowed: frozenset[str]) -> dict[str, Any]:
    """The globals the restricted code runs with: guards, safe builtins, guarded import."""
    import builtins

    names = dict(safe_builtins)
    names.update({name: getattr(builtins, name) for name in _EXTRA_BUILTINS})
    names["getattr"] = _guarded_getattr
    names["hasattr"] = _guarded_hasattr
    names["__import__"] = _guarded_import(allowed)
    return {
        "__builtins__": names,
        "__name__": "reward_source",
        "__metaclass__": type,
        "_getattr_": _guarded_getattr,
        "_getitem_": operator.getitem,
        "_getiter_": iter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_write_": full_write_guard,
        "_inplacevar_": _in_place,
        "_apply_": lambda function, *args, **kwargs: function(*args, **kwargs),
        "_print_": PrintCollector,
    }


def describe(error: BaseException) -> str:
    """``line N: Type: message`` with N the line of the reward source that raised."""
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == SOURCE_FILENAME:
            line = frame.lineno
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    text = text[:500]
    return f"line {line}: {text}" if line else text


def judge(value: Any) -> dict[str, Any]:
    """The record for what ``reward`` returned."""
    if value is None:
        return {"skip": "reward returned None"}
    if type(value) not in (int, float, bool):
        return {"error": f"reward returned {type(value).__name__}, expected a number"}
    number = float(value)
    if not math.isfinite(number):
        return {"error": f"reward returned {number}"}
    return {"value": number}


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    token: str = request["token"]
    timeout_s = float(request["timeout_s"])
    samples = request["samples"]
    out = sys.stdout

    def emit(record: dict[str, Any]) -> None:
        out.write(f"{token} {json.dumps(record)}\n")
        out.flush()

    def load_overran(signum: int, frame: Any) -> None:
        for _ in samples:
            emit({"error": f"the source took longer than {timeout_s:g}s to load"})
        os._exit(0)

    def call_overran(signum: int, frame: Any) -> None:
        # cannot be caught by the restricted code: the child ends here, and the samples
        # after this one are re-run by the parent, one per child
        emit({"timeout": timeout_s})
        os._exit(0)

    code = marshal.loads(base64.b64decode(request["code"]))
    namespace = restricted_globals(frozenset(request["allowed"]))
    signal.signal(signal.SIGALRM, load_overran)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        exec(code, namespace)
        function = namespace["reward"]
    except BaseException as error:
        failure = {"error": f"the source failed to load: {describe(error)}"}
        for _ in samples:
            emit(failure)
        return
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

    signal.signal(signal.SIGALRM, call_overran)
    for completion, reference, metadata in samples:
        started = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            record = judge(function(completion, reference, metadata))
        except MemoryError:
            record = {"error": "memory limit exceeded"}
        except BaseException as error:
            record = {"error": describe(error)}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        elapsed = time.monotonic() - started
        if elapsed > timeout_s:
            record = {"timeout": round(elapsed, 3)}
        emit(record)


if __name__ == "__main__":
    main()
