"""What runs inside a task child after confinement, and how the zygote reads a test's
outcome.

Program mode runs the source as ``__main__`` in the task child.  In test mode each test
gets two children: a *candidate* that runs the program and serves calls of its
top-level names (:func:`run_candidate`), and a *judge* that runs the test's statements
with those names bound to handles on the candidate (:func:`run_judge`); values cross
between them as plain data (:mod:`._calls`).  Only the judge holds the test's source and
the pipe its verdict is written to; the zygote reads that verdict, the judge's exit and
the candidate's, and enforces the test's timeout (:func:`test_outcome`).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import json
import linecache
import marshal
import os
import signal
import struct
import sys
import traceback
import types

from rewardkit_sandbox._calls import (
    CandidateGone,
    CandidateObject,
    CandidateServer,
    JudgeClient,
    Link,
    checked_plain,
)

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


#: a trusted program compiled once, in the zygote: (its code, its source's lines)
Precompiled = tuple[types.CodeType, list[str]]


def precompile(source: str) -> Precompiled:
    """``source`` compiled as :func:`run_program` compiles it (``main.py``), once."""
    return compile(source, "main.py", "exec", dont_inherit=True), source.splitlines(True)


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


def run_program(source: str, report_fd: int, compiled: Precompiled | None = None) -> NoReturn:
    """Run ``source`` as ``__main__``; exit with its exit code. ``compiled``: ``source``
    as :func:`precompile` made it (not compiled again here)."""
    namespace = _fresh_main_namespace()
    try:
        if compiled is None:
            code = _compile(source, "main.py")
        else:
            code, lines = compiled
            linecache.cache["main.py"] = (len(source), None, lines, "main.py")
        exec(code, namespace)
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


def run_candidate(source: str, report_fd: int, link: Link) -> NoReturn:
    """The candidate side of one test: run the program, send its top-level names over
    ``link``, then serve the judge's calls until it is done (see :mod:`._calls`).

    Nothing of the test is in this process: not its source, not its verdict.
    """
    namespace = _fresh_main_namespace()
    failure: tuple[Any, ...] | None = None
    try:
        exec(_compile(source, "main.py"), namespace)
    except SystemExit as stop:
        failure = ("failed", f"SystemExit({stop.code!r}) before the test ran", False)
    except MemoryError:
        failure = ("failed", "MemoryError", True)
    except BaseException as error:
        _print_exception(error)
        failure = ("failed", _describe(error), False)
    if failure is not None:
        with contextlib.suppress(OSError):
            link.send(failure)
        _flush_stdio()
        os._exit(1)
    server = CandidateServer(link, namespace)
    with contextlib.suppress(OSError):
        link.send(("names", server.names()))
        server.serve()
    _flush_stdio()
    os._exit(0)


#: the descriptors sent with each test to the judge: tests file, link read, link write
TEST_FDS = struct.Struct("3i")


def serve_judge(socket_fd: int, report_fd: int) -> NoReturn:
    """The slot's judge (see :mod:`.zygote.judge`): run each test the zygote sends on
    ``socket_fd`` against its candidate, and write one JSON verdict per test on
    ``report_fd``, which only this process holds.  Exits when the zygote goes."""
    import _socket

    sock = _socket.socket(fileno=socket_fd)
    while True:
        try:
            message, ancillary, _, _ = sock.recvmsg(4096, _socket.CMSG_SPACE(TEST_FDS.size))
        except OSError:
            os._exit(1)
        if not message:
            os._exit(0)
        fds: list[int] = []
        for level, kind, data in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += struct.unpack(f"{len(data) // 4}i", data[: len(data) // 4 * 4])
        if len(fds) != 3:
            os._exit(1)
        tests_fd, link_read, link_write = fds
        offset, length, index = marshal.loads(message)
        try:
            source = os.pread(tests_fd, length, offset).decode("utf-8", errors="surrogatepass")
        finally:
            os.close(tests_fd)
        try:
            record = judge_test(source, index, Link(link_read, link_write))
        finally:
            os.close(link_read)
            os.close(link_write)
        write_report(report_fd, record)


def judge_test(test: str, index: int, link: Link) -> dict[str, Any]:
    """Run one test's statements with the program's names bound to handles on the
    candidate process at the other end of ``link``; the verdict record."""
    client = JudgeClient(link)
    record: dict[str, Any]
    try:
        code = compile(test, f"test_{index}.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        record = {"status": "failed", "error": f"the test does not compile: {_describe(error)}"}
    else:
        record = _judge(code, client)
    if client.violation is not None and record["status"] == "ok":
        record = {"status": "failed", "error": _describe(client.violation)}
    if client.gone:
        record["candidate_gone"] = True
    if record["status"] == "memory":
        record["restart"] = True  # a fresh judge for the next test
    return record


def _judge(code: types.CodeType, client: JudgeClient) -> dict[str, Any]:
    try:
        first = client.program_names()
        namespace = _test_namespace(first, client)
        if isinstance(namespace, dict) and "status" in namespace:
            return namespace
        exec(code, namespace)
    except MemoryError:
        return {"status": "memory", "error": "MemoryError"}
    except AssertionError as error:
        return {"status": "failed", "error": _describe(error)}
    except SystemExit as stop:
        return {"status": "failed", "error": f"SystemExit({stop.code!r}) before the test ended"}
    except BaseException as error:
        return {"status": "failed", "error": _describe(error)}
    return {"status": "ok"}


def _test_namespace(first: Any, client: JudgeClient) -> dict[str, Any]:
    """The test's globals: the program's names as the judge sees them, or (with a
    ``status``) why the test cannot run.

    A module of the program is the judge's own import of that module; a plain value is
    a copy; anything else is a :class:`CandidateObject`.  A name of the judge's builtins
    (``abs``, ``sorted``, ``AssertionError``...) always stays the builtin.
    """
    kind = first[0] if type(first) is tuple and first else None
    if kind == "failed" and len(first) == 3:
        if first[2] is True:
            return {"status": "memory", "error": "MemoryError"}
        return {"status": "failed", "error": str(first[1])[:_ERROR_TEXT_LIMIT]}
    if kind != "names" or len(first) != 2 or type(first[1]) is not list:
        raise client.fail(CandidateGone("the program's process sent no names"))
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    for entry in first[1]:
        if type(entry) is not tuple or len(entry) != 3 or type(entry[0]) is not str:
            continue
        name, what, payload = entry
        if hasattr(builtins, name) or not name.isidentifier():
            continue
        if what == "data":
            namespace[name] = checked_plain(payload)
        elif what == "module" and type(payload) is str and _own_module(payload) is not None:
            namespace[name] = _own_module(payload)
        else:
            namespace[name] = CandidateObject(client, name, f"{str(payload)[:80]} {name!r}")
    return namespace


def _own_module(name: str) -> types.ModuleType | None:
    """The judge's own import of module ``name`` (None when it cannot import it)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    try:
        __import__(name)
    except BaseException:
        return None
    return sys.modules.get(name)


def test_outcome(
    verdict: dict[str, Any] | int | None,
    candidate_status: int | None,
    timeout_s: float | None,
) -> dict[str, Any]:
    """One test's outcome, judged from outside both of its processes.

    ``verdict``: the judge's record, or (the judge died) its wait status or None;
    ``candidate_status``: the candidate's wait status (None when it was still running at
    the end); ``timeout_s``: set when the test was killed at its own time limit.
    """
    if timeout_s is not None:
        return {"status": "timeout", "error": f"test exceeded {timeout_s:g}s"}
    if not isinstance(verdict, dict):
        if verdict is not None and os.WIFSIGNALED(verdict):
            return _signal_outcome(os.WTERMSIG(verdict), "the judge")
        return {"status": "crashed", "error": "the judge ended during the test"}
    if verdict.get("candidate_gone") and candidate_status is not None:
        if os.WIFSIGNALED(candidate_status):
            return _signal_outcome(os.WTERMSIG(candidate_status), "the program")
        code = os.WEXITSTATUS(candidate_status)
        return {"status": "failed", "error": f"the program exited with code {code} during the test"}
    allowed = {"ok", "failed", "memory"}
    status_name = verdict.get("status") if verdict.get("status") in allowed else "failed"
    return {"status": status_name, "error": verdict.get("error")}


def _signal_outcome(number: int, who: str) -> dict[str, Any]:
    if number == signal.SIGXCPU:
        return {"status": "timeout", "error": f"CPU time limit exceeded ({who})"}
    if number == signal.SIGXFSZ:
        return {"status": "output_limit", "error": f"file size limit exceeded ({who})"}
    return {"status": "crashed", "error": f"{who} was killed by {signal.Signals(number).name}"}
