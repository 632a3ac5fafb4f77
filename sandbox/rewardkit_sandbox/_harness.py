"""What runs inside a task child after confinement: the candidate program, or its tests.

Program mode runs the source as ``__main__`` in this process.  Test mode keeps this
process (the harness) free of candidate code: every test runs in its own forked
process (program, then the test statements), and the harness judges it from outside,
by its exit, a per-task token written only after the test statements completed, and a
per-test timeout.  The token stops ``sys.exit(0)``/``os._exit(0)`` shortcuts; a program
that deliberately searches its own memory for the token can still forge a pass (see
docs/sandbox.md, threat model).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import linecache
import os
import select
import signal
import sys
import time
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


def _compile_ahead(source: str, filename: str) -> types.CodeType | None:
    """Compile in the harness (compiling runs no candidate code), once for every test.

    None when it fails: the test child then compiles it itself and fails exactly as
    before (its traceback on stderr, its error in the test's record).
    """
    try:
        return _compile(source, filename)
    except Exception:
        return None


def _run_one_test(
    source: str,
    test: str,
    index: int,
    result_fd: int,
    token: str,
    compiled: tuple[types.CodeType | None, types.CodeType | None] = (None, None),
) -> NoReturn:
    namespace = _fresh_main_namespace()
    program_code, test_code = compiled
    record: dict[str, Any]
    try:
        exec(program_code or _compile(source, "main.py"), namespace)
        exec(test_code or _compile(test, f"test_{index}.py"), namespace)
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
    write_report(result_fd, record)
    os._exit(0 if record["status"] == "ok" else 1)


def _await_test(pid: int, result_fd: int, timeout_s: float, token: str) -> dict[str, Any]:
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], max(timeout_s, 0.0))
    finally:
        os.close(pidfd)
    timed_out = not ready
    if timed_out:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.set_blocking(result_fd, False)
    try:
        raw = os.read(result_fd, 65536)
    except OSError:
        raw = b""
    if timed_out:
        return {"status": "timeout", "error": f"test exceeded {timeout_s:g}s"}
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return {"status": "timeout", "error": "CPU time limit exceeded"}
        if number == signal.SIGXFSZ:
            return {"status": "output_limit", "error": "file size limit exceeded"}
        return {"status": "crashed", "error": f"killed by {signal.Signals(number).name}"}
    record: dict[str, Any] = {}
    for line in raw.splitlines():
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


def run_tests(
    source: str,
    tests: list[str],
    test_timeout_s: float,
    stop_on_first_failure: bool,
    report_fd: int,
) -> NoReturn:
    """Run each test in its own process after the program; report one line per test."""
    token = os.urandom(16).hex()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - tests do not read the task's stdin
    program_code = _compile_ahead(source, "main.py")
    for index, test in enumerate(tests):
        compiled = (program_code, _compile_ahead(test, f"test_{index}.py"))
        read_fd, write_fd = os.pipe()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            os.close(report_fd)
            os.setpgid(0, 0)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            _run_one_test(source, test, index, write_fd, token, compiled)
        os.close(write_fd)
        try:
            outcome = _await_test(pid, read_fd, test_timeout_s, token)
        finally:
            os.close(read_fd)
        outcome["index"] = index
        outcome["wall_time_s"] = round(time.monotonic() - started, 6)
        write_report(report_fd, {"test": outcome})
        if outcome["status"] != "ok" and stop_on_first_failure:
            break
    _finish(0)
