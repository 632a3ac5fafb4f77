"""What runs inside a task child after confinement (the candidate program, or the
program and one test), and how the zygote reads a test child's outcome.

Program mode runs the source as ``__main__`` in the task child.  In test mode the zygote
forks one child per test (program, then the test statements) and judges it from outside,
by its exit, a per-test token written only after the test statements completed, and a
per-test timeout: no process that judges ever runs candidate code.  The token stops
``sys.exit(0)``/``os._exit(0)`` shortcuts; a program that deliberately searches its own
memory for the token can still forge a pass (see docs/sandbox.md, threat model).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import linecache
import os
import signal
import sys
import traceback
import types

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from typing import Any, NoReturn

SETUP_FAILED_EXIT_CODE = 117
_ERROR_TEXT_LIMIT = 1000


def write_report(fd: int, record: dict[str, Any]) -> None:
    """Append one JSON line to the report pipe (best effort: the reader may be gone)."""
    with contextlib.suppress(OSError):
        os.write(fd, (json.dumps(record) + "\n").encode())


SETUP_DONE_RECORD = json.dumps({"setup": "ok"}).encode() + b"\n"


def report_setup_done(fd: int) -> None:
    """The first record of every task: confinement is complete."""
    with contextlib.suppress(OSError):
        os.write(fd, SETUP_DONE_RECORD)


def warm_up() -> None:
    """Run, once in the zygote, the lazy first-use paths of a task (see Zygote)."""
    import ast  # noqa: F401 - traceback imports it lazily for every exception it prints
    import unicodedata  # noqa: F401 - likewise, for wide characters in source lines

    namespace: dict[str, Any] = {}
    source = "def f():\n    return 1 / 0\nf()\n"
    try:
        exec(_compile(source, "<warm-up>"), namespace)  # compile() creates the AST types
    except ZeroDivisionError as error:
        traceback.format_exception(type(error), error, error.__traceback__)
    linecache.cache.pop("<warm-up>", None)
    json.loads(json.dumps({"test": {"status": "ok", "error": None, "index": 0}}))
    for mode in ("r", "w"):  # the codec and error-handler look-ups of the task's stdio
        open(os.devnull, mode, encoding="utf-8", errors="backslashreplace").close()
    global _prepared_main
    _prepared_main = _new_main_module()


def _new_main_module() -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = __builtins__
    return module


# Built in the zygote (warm_up); each process that runs candidate code (the program child,
# or one test's child) takes it once, in its own copy-on-write memory.
_prepared_main: types.ModuleType | None = None


def _fresh_main_namespace() -> dict[str, Any]:
    global _prepared_main
    module, _prepared_main = _prepared_main or _new_main_module(), None
    sys.modules["__main__"] = module
    return module.__dict__


def _compile(source: str, filename: str) -> types.CodeType:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec", dont_inherit=True)


def _print_exception(error: BaseException) -> None:
    # Drop this module's own frame from the traceback.
    trace = error.__traceback__.tb_next if error.__traceback__ else None
    with contextlib.suppress(Exception):
        traceback.print_exception(type(error), error, trace)


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return text[:_ERROR_TEXT_LIMIT]


def _exit_code_of(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code & 0xFF
    with contextlib.suppress(Exception):
        print(stop.code, file=sys.stderr)
    return 1


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _finish(exit_code: int) -> NoReturn:
    """End like an interpreter would (threads joined, atexit run, stdio flushed), fast."""
    with contextlib.suppress(BaseException):
        # Like the interpreter, only when the program imported threading: the zygote does
        # not, so that its at-fork hook does not run in every child.
        threading = sys.modules.get("threading")
        if threading is not None:
            for thread in threading.enumerate():
                if thread is not threading.main_thread() and not thread.daemon:
                    thread.join()
        atexit._run_exitfuncs()
    _flush_stdio()
    os._exit(exit_code)


def run_program(source: str, report_fd: int) -> NoReturn:
    """Run ``source`` as ``__main__``; exit with its exit code."""
    namespace = _fresh_main_namespace()
    try:
        exec(_compile(source, "main.py"), namespace)
        exit_code = 0
    except SystemExit as stop:
        exit_code = _exit_code_of(stop)
    except MemoryError as error:
        write_report(report_fd, {"memory": True})
        _print_exception(error)
        exit_code = 1
    except BaseException as error:
        _print_exception(error)
        exit_code = 1
    _finish(exit_code)


def run_test(source: str, test: str, index: int, report_fd: int, token: str) -> NoReturn:
    """Run the program, then one test's statements, in this process; exit.

    The record carrying ``token`` is written only once the test statements completed, so
    an exit before them (``sys.exit(0)``, ``os._exit(0)``) is no pass; the zygote judges
    the process from outside (:func:`test_outcome`).
    """
    namespace = _fresh_main_namespace()
    record: dict[str, Any]
    try:
        exec(_compile(source, "main.py"), namespace)
        exec(_compile(test, f"test_{index}.py"), namespace)
        record = {"status": "ok"}
    except MemoryError:
        record = {"status": "memory", "error": "MemoryError"}
    except AssertionError as error:
        record = {"status": "failed", "error": _describe(error)}
    except SystemExit as stop:
        record = {"status": "failed", "error": f"SystemExit({stop.code!r}) before the test ended"}
    except BaseException as error:
        _print_exception(error)
        record = {"status": "failed", "error": _describe(error)}
    _flush_stdio()
    record["token"] = token
    write_report(report_fd, record)
    os._exit(0 if record["status"] == "ok" else 1)


def test_outcome(
    status: int, report: bytes, token: str, timeout_s: float | None
) -> dict[str, Any]:
    """One test's outcome, judged from outside its process.

    ``status``: the process's wait status; ``report``: what it wrote to its report pipe;
    ``timeout_s``: set when it was killed at its own time limit.
    """
    if timeout_s is not None:
        return {"status": "timeout", "error": f"test exceeded {timeout_s:g}s"}
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return {"status": "timeout", "error": "CPU time limit exceeded"}
        if number == signal.SIGXFSZ:
            return {"status": "output_limit", "error": "file size limit exceeded"}
        return {"status": "crashed", "error": f"killed by {signal.Signals(number).name}"}
    record: dict[str, Any] = {}
    for line in report.splitlines():
        try:
            candidate = json.loads(line)
        except ValueError:
            continue
        if isinstance(candidate, dict) and candidate.get("token") == token:
            record = candidate
            break
    exit_code = os.WEXITSTATUS(status)
    if not record:
        return {"status": "failed", "error": f"exited with code {exit_code} before the test ended"}
    if record.get("status") == "ok" and exit_code != 0:
        return {"status": "failed", "error": f"exited with code {exit_code}"}
    allowed = {"ok", "failed", "memory"}
    status_name = record.get("status") if record.get("status") in allowed else "failed"
    return {"status": status_name, "error": record.get("error")}
