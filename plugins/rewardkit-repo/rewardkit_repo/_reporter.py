"""The pytest plugin of a ``repo_tests`` run, loaded inside the sandboxed pytest before any
project code (no conftest, no test module, no module under test is imported yet).

It decides each wanted test's outcome itself, from the exceptions of the test's setup,
call and teardown (not from pytest's report objects, which project code could rewrite),
and writes one JSON line per event, each carrying the run's token, to its descriptor.
Before every line it checks that nothing the verdict rests on was replaced since it
loaded: pytest's and pluggy's runner functions, the builtins, ``sys.exit``/``os._exit``,
the import machinery, the trace and profile functions. A replacement marks the run
``tampered``. A profile function watches values returned into the test files: one whose
class was written by the candidate and that equals a fresh ``object()`` (an
always-equal object) fails its test as ``tampered``.

A ``unittest.TestCase`` test does not raise out of pytest's call phase: unittest catches
the failure and hands it to pytest's result object, which keeps it for the report. The
reporter wraps that hand-over (``TestCaseFunction._addexcinfo``, watched like the rest)
and counts such a test failed, or skipped, from what was handed over.

Standard library and pytest only: it is sent to the sandbox as source.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import threading

import _pytest.python
import _pytest.reports
import _pytest.runner
import _pytest.unittest
import pluggy
import pytest

_WATCHED = (
    (_pytest.runner, ("runtestprotocol", "call_and_report", "call_runtest_hook",
                      "pytest_runtest_protocol", "check_interactive_exception")),
    (_pytest.runner.CallInfo, ("from_call",)),
    (_pytest.python.Function, ("runtest", "setup")),
    (_pytest.python, ("pytest_pyfunc_call",)),
    (_pytest.reports.TestReport, ("from_item_and_call", "__init__")),
    (pluggy.HookCaller if hasattr(pluggy, "HookCaller") else pluggy._hooks._HookCaller,
     ("__call__",)),
    (pluggy.PluginManager, ("_hookexec",)),
    (_pytest.unittest.TestCaseFunction, ("_addexcinfo", "runtest", "addError", "addFailure",
                                         "addSkip", "addExpectedFailure",
                                         "addUnexpectedSuccess")),
    (sys, ("exit", "settrace", "setprofile", "meta_path", "path_hooks")),
    (os, ("_exit", "write", "fork")),
    (threading, ("settrace", "setprofile")),
)


def _hand_over_to(handed: dict[str, list[object]]) -> None:
    """Record, per test id, the exception type of each failure, error or skip unittest
    hands to pytest's ``TestCaseFunction`` (then let pytest keep it as before)."""
    original = vars(_pytest.unittest.TestCaseFunction)["_addexcinfo"]

    def _addexcinfo(item: _pytest.unittest.TestCaseFunction, rawexcinfo: object) -> None:
        kind = rawexcinfo[0] if isinstance(rawexcinfo, tuple) and rawexcinfo else Exception
        handed.setdefault(item.nodeid, []).append(kind)
        return original(item, rawexcinfo)

    _pytest.unittest.TestCaseFunction._addexcinfo = _addexcinfo  # type: ignore[method-assign,assignment]


def _snapshot() -> dict[str, int]:
    ids = {f"builtins.{name}": id(value) for name, value in vars(builtins).items()}
    for owner, names in _WATCHED:
        for name in names:
            # a class's own dict: a classmethod read by getattr is a new object each time
            value = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name, None)
            ids[f"{getattr(owner, '__name__', owner)}.{name}"] = id(value)
    ids["meta_path.items"] = hash(tuple(id(finder) for finder in sys.meta_path))
    ids["sys.gettrace()"] = id(sys.gettrace())
    ids["threading.gettrace()"] = id(threading.gettrace())
    return ids


class Reporter:
    def __init__(self, fd: int, token: str, wanted: list[str], test_files: list[str],
                 candidate_files: list[str]) -> None:
        self._fd = fd
        self._token = token
        self._write = os.write
        self._dumps = json.dumps
        self._wanted = set(wanted)
        self._test_files = frozenset(os.path.realpath(path) for path in test_files)
        self._candidate_files = frozenset(os.path.realpath(path) for path in candidate_files)
        self._baseline = _snapshot()
        self._phases: dict[str, list[str]] = {}
        self._tainted: dict[str, str] = {}
        self._current: str | None = None
        self._sentinel_type = object
        self._config: pytest.Config | None = None
        self._plugins: set[int] = set()
        self._handed: dict[str, list[object]] = {}
        _hand_over_to(self._handed)
        self._baseline = _snapshot()

    # -- the channel -----------------------------------------------------------------

    def _send(self, record: dict[str, object]) -> None:
        changed = [name for name, value in _snapshot().items()
                   if self._baseline.get(name, value) != value] + self._foreign_plugins()
        if changed:
            record = {"kind": "tampered", "what": changed[:5]}
        record["token"] = self._token
        self._write(self._fd, (self._dumps(record) + "\n").encode())

    def _foreign_plugins(self) -> list[str]:
        """Plugins registered since the baseline that are neither pytest's own objects nor
        the restored conftest files (project code registering a hook wrapper)."""
        if self._config is None:
            return []
        foreign = []
        for plugin in self._config.pluginmanager.get_plugins():
            if id(plugin) in self._plugins:
                continue
            module = getattr(plugin, "__file__", None)
            if module is not None and os.path.realpath(module) in self._test_files:
                continue
            owner = getattr(plugin, "__name__", None) if module else None
            owner = owner or getattr(type(plugin), "__module__", "") or ""
            if owner.split(".")[0] in ("_pytest", "pytest", "pluggy"):
                continue
            foreign.append(f"plugin {getattr(plugin, '__name__', owner)}")
        return foreign

    # -- always-equal values ---------------------------------------------------------

    def _profile(self, frame: object, event: str, arg: object) -> None:
        if event != "return" or self._current is None or arg is None:
            return
        code = frame.f_code  # type: ignore[attr-defined]
        caller = frame.f_back  # type: ignore[attr-defined]
        if caller is None or caller.f_code.co_filename not in self._test_files:
            return
        if code.co_filename in self._test_files:
            return
        equals = getattr(type(arg), "__eq__", None)
        source = getattr(getattr(equals, "__code__", None), "co_filename", None)
        if source is None or os.path.realpath(source) not in self._candidate_files:
            return
        sys.setprofile(None)
        try:
            always = arg == self._sentinel_type()
        except Exception:
            always = False
        finally:
            sys.setprofile(self._profile)
        if always is True:
            self._tainted[self._current] = "a value that equals anything"

    # -- hooks -----------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config: pytest.Config) -> None:
        # pytest has installed its assertion rewriter: no conftest is loaded yet
        self._baseline = _snapshot()
        self._config = early_config
        self._plugins = {id(plugin) for plugin in early_config.pluginmanager.get_plugins()}

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._send({"kind": "collect_error", "nodeid": report.nodeid})

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        self._send({"kind": "collected", "ids": [item.nodeid for item in items]})
        keep = [item for item in items if item.nodeid in self._wanted]
        deselected = [item for item in items if item.nodeid not in self._wanted]
        items[:] = keep
        if deselected:
            config.hook.pytest_deselected(items=deselected)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: object):
        self._phases[item.nodeid] = []
        self._current = item.nodeid
        function = getattr(item, "function", None)
        filename = getattr(getattr(function, "__code__", None), "co_filename", None)
        if filename is not None and os.path.realpath(filename) not in self._test_files:
            self._tainted[item.nodeid] = "the test function was replaced"
        yield
        self._current = None
        phases = self._phases.pop(item.nodeid, [])
        if item.nodeid in self._tainted:
            outcome = "tampered"
        elif phases == ["setup:ok", "call:ok", "teardown:ok"]:
            outcome = "passed"
        elif any(phase.endswith(":skipped") for phase in phases):
            outcome = "skipped"
        else:
            outcome = "failed"
        self._send({"kind": "test", "nodeid": item.nodeid, "outcome": outcome,
                    "why": self._tainted.get(item.nodeid, ",".join(phases))})

    def _phase(self, item: pytest.Item, when: str):
        if when == "call":
            sys.setprofile(self._profile)
        result = yield
        if when == "call":
            if sys.getprofile() != self._profile:
                self._tainted[item.nodeid] = "the profile function was removed"
            sys.setprofile(None)
        excinfo = result.excinfo
        handed = self._handed.pop(item.nodeid, []) if when == "call" else []
        if excinfo is None and not handed:
            state = "ok"
        elif excinfo is None:
            # a unittest test: what unittest handed to pytest instead of raising
            skips = [isinstance(kind, type) and issubclass(kind, pytest.skip.Exception)
                     for kind in handed]
            state = "skipped" if all(skips) else "error"
        elif issubclass(excinfo[0], pytest.skip.Exception):
            state = "skipped"
        else:
            state = "error"
        phases = self._phases.get(item.nodeid)
        if phases is not None:
            phases.append(f"{when}:{state}")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item):
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item):
        yield from self._phase(item, "teardown")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self._send({"kind": "end"})
