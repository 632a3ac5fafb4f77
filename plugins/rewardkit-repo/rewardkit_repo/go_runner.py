"""``repo_tests`` with ``runner: go``: a Go module's tests (``go test``), tamper-proof.

Test ids are Go test function names, ``TestParse`` for the module's root package or
``pkg/path.TestParse`` for the package in folder ``pkg/path`` (subtests are not ids).
Protected (put back to the base, then the test patch applied): ``*_test.go``, anything
under a ``testdata`` folder, ``go.mod``, ``go.sum``, ``go.work``, ``go.work.sum`` and a
``vendor`` folder: tasks build with the standard library only.

In Go the code under test runs in the tests' process, so neither the exit code nor
``go test -json`` output says anything the code could not have printed. What is trusted:

* a static rule on the files the patch changed or added (:func:`forbidden`): no
  ``unsafe``, ``syscall``, ``os/exec``, ``net/http/cgi``, ``go/build``, ``plugin``,
  ``runtime/cgo`` or ``C`` import, no
  ``//go:linkname`` or cgo directive, no ``os.NewFile`` / ``os.StartProcess``, no assembly,
  C or object file: the ways Go code reaches a raw descriptor, another process or memory it
  was not given. A patch that uses one pays 0 as tampering.
* each wanted test runs in its own process through a wrapper test the harness writes
  after the patch (a random name per run, unknown to the patch), which calls the test
  function inside ``t.Run`` and, once it and its parallel subtests and cleanups have
  ended, reads a per-test nonce from an inherited socket and writes its record there.
* the test binary is execute-only, so its process is non-dumpable: ``/proc/self/mem``,
  ``/proc/self/fd`` and the executable are root's, not the sandbox uid's.
* the record pays only when the kernel says the test's own process sent it (``SO_PASSCRED``
  on the driver's end: not a child that inherited the socket), with the nonce, the
  test's name, a test function that returned, not failed, not skipped, exactly one
  record, and a process that exited 0.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
from collections.abc import Mapping
from importlib import resources
from typing import Any

from rewardkit_sandbox import SandboxLimits, SandboxPool
from rewardkit_sandbox.languages import go_cache_seed
from rewardkit_sandbox.languages.runner import GO_BUILD_ENV

from rewardkit import Score
from rewardkit_repo.sandboxed import run_driver
from rewardkit_repo.workspace import TaskError, Workspace

#: the Go toolchain the tests build with (GOROOT), exposed read-only in the sandbox
GOROOT = os.environ.get("REWARDKIT_GOROOT") or "/usr/lib/go"

_PROTECTED_NAMES = frozenset({"go.mod", "go.sum", "go.work", "go.work.sum"})
_NATIVE = (".s", ".S", ".sx", ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx",
           ".m", ".f", ".F", ".for", ".f90", ".syso", ".swig", ".swigcxx")
#: the standard library's ways to raw descriptors, memory and child processes (a child
#: inherits the result socket: net/http/cgi runs any program, go/build runs the go command)
_FORBIDDEN_IMPORTS = frozenset({"unsafe", "syscall", "os/exec", "plugin", "runtime/cgo", "C",
                                "net/http/cgi", "go/build"})
_FORBIDDEN_NAMES = frozenset({"NewFile", "StartProcess"})
_TEST_ID = re.compile(r"^(?:([\w.\-/]+)\.)?(Test\w*)$")


def goroot() -> str:
    """The real GOROOT (``/usr/lib/go`` is a link on Debian)."""
    return os.path.realpath(GOROOT)


def is_protected(relative: str) -> bool:
    """Whether ``relative`` is a Go test file or test configuration the patch may not change."""
    parts = relative.split("/")
    return (parts[-1].endswith("_test.go") or parts[-1] in _PROTECTED_NAMES
            or "testdata" in parts[:-1] or "vendor" in parts[:-1])


def _tokens(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Go source as (kind, text) tokens (``ident``, ``string``, ``punct``) and its comments;
    strings are unquoted (imports may use either quote)."""
    tokens: list[tuple[str, str]] = []
    comments: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            comments.append(text[i:end])
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            comments.append(text[i:end])
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            tokens.append(("string" if c == '"' else "rune", text[i + 1:j]))
            i = j + 1
        elif c == "`":
            end = text.find("`", i + 1)
            end = n if end < 0 else end
            tokens.append(("string", text[i + 1:end]))
            i = end + 1
        elif c.isalnum() or c == "_" or ord(c) > 127:
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_" or ord(text[j]) > 127):
                j += 1
            tokens.append(("ident", text[i:j]))
            i = j
        elif c.isspace():
            i += 1
        else:
            tokens.append(("punct", c))
            i += 1
    return tokens, comments


def _imports(tokens: list[tuple[str, str]]) -> list[str]:
    """The import paths of a tokenized Go file (every form: grouped, named, dot, blank,
    several on one line)."""
    found: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] == ("ident", "import"):
            depth = 0
            j = i + 1
            while j < len(tokens):
                kind, value = tokens[j]
                if (kind, value) == ("punct", "("):
                    depth += 1
                elif (kind, value) == ("punct", ")"):
                    depth -= 1
                elif kind == "string":
                    found.append(value)
                    if depth == 0:
                        break
                elif kind == "ident" and value in {"func", "var", "const", "type"}:
                    break
                if depth <= 0 and (kind, value) == ("punct", ")"):
                    break
                j += 1
            i = j
        i += 1
    return found


def forbidden(workspace: Workspace) -> list[str]:
    """What the candidate's files do that a Go patch may not (empty: nothing)."""
    found: list[str] = []
    for relative in workspace.candidate_files:
        if relative.endswith(_NATIVE):
            found.append(f"{relative}: a native source or object file")
            continue
        if not relative.endswith(".go"):
            continue
        try:
            with open(os.path.join(workspace.folder, relative), encoding="utf-8",
                      errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        tokens, comments = _tokens(text)
        for imported in _imports(tokens):
            if imported in _FORBIDDEN_IMPORTS or imported.startswith(("internal/",
                                                                      "golang.org/x/sys")):
                found.append(f"{relative}: imports {imported!r}")
        for comment in comments:
            if re.search(r"go:(linkname|cgo_)", comment):
                found.append(f"{relative}: a {comment.strip()[:40]!r} directive")
        for kind, value in tokens:
            if kind == "ident" and value in _FORBIDDEN_NAMES:
                found.append(f"{relative}: uses {value}")
    return found


def _split(test_id: str) -> tuple[str, str]:
    match = _TEST_ID.match(test_id)
    if match is None:
        raise TaskError(f"test id {test_id!r} is not a Go test name (TestX or pkg/path.TestX)")
    package = (match.group(1) or "").strip("/")
    if any(part in {"", ".", ".."} for part in package.split("/")) and package:
        raise TaskError(f"test id {test_id!r} names a package outside the repository")
    return package, match.group(2)


def _declaring_clause(folder: str, package: str, name: str) -> str | None:
    """The package clause of the ``_test.go`` file of ``package`` that declares test
    function ``name`` (None: no such test)."""
    directory = os.path.join(folder, package)
    if not os.path.isdir(directory):
        return None
    declaration = re.compile(rf"^func\s+{re.escape(name)}\s*\(\s*\w+\s+\*testing\.T\s*\)",
                             re.MULTILINE)
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith("_test.go"):
            continue
        with open(os.path.join(directory, entry), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        if declaration.search(text):
            clause = re.search(r"^package\s+(\w+)", text, re.MULTILINE)
            return clause.group(1) if clause else None
    return None


_WRAPPER = """\
package {package}

import (
	rkjson{r} "encoding/json"
	rkos{r} "os"
	rkstrconv{r} "strconv"
	rkstrings{r} "strings"
	rktesting{r} "testing"
)

func rkRun{r}(t *rktesting{r}.T, name string, test func(*rktesting{r}.T)) {{
	returned, failed, skipped := false, false, false
	t.Cleanup(func() {{
		fd, _ := rkstrconv{r}.Atoi(rkos{r}.Getenv("REWARDKIT_GO_FD"))
		channel := rkos{r}.NewFile(uintptr(fd), "rewardkit")
		buffer := make([]byte, 128)
		n, _ := channel.Read(buffer)
		record, _ := rkjson{r}.Marshal(map[string]interface{{}}{{
			"nonce": rkstrings{r}.TrimSpace(string(buffer[:n])), "test": name,
			"returned": returned, "failed": failed || t.Failed(), "skipped": skipped,
		}})
		channel.Write(append(record, '\\n'))
	}})
	t.Run(name, func(t *rktesting{r}.T) {{
		defer func() {{ failed, skipped = t.Failed(), t.Skipped() }}()
		test(t)
		returned = true
	}})
}}
"""


def build_header(workspace: Workspace, wanted: list[str], budget_s: float
                 ) -> dict[str, Any]:
    """The driver's header: files, harness wrappers, the tests with their nonces."""
    if not os.path.isfile(os.path.join(workspace.folder, "go.mod")):
        raise TaskError("runner go needs a Go module: no go.mod at the repository's root")
    by_file: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    tests = []
    for index, test_id in enumerate(wanted):
        package, name = _split(test_id)
        clause = _declaring_clause(workspace.folder, package, name)
        if clause is None:
            raise TaskError(f"test id {test_id!r} names no test of the repository")
        wrapper = f"TestRewardkit{secrets.token_hex(8).upper()}N{index}"
        by_file.setdefault((package, clause), []).append((wrapper, name, test_id))
        tests.append({"id": test_id, "package": package, "wrapper": wrapper,
                      "nonce": secrets.token_hex(24)})
    harness: dict[str, list[Any]] = {}
    for (package, clause), entries in by_file.items():
        r = secrets.token_hex(6)
        source = _WRAPPER.format(package=clause, r=r)
        for wrapper, name, _ in entries:
            source += (f"\nfunc {wrapper}(t *rktesting{r}.T) {{ "
                       f"rkRun{r}(t, {json.dumps(name)}, {name}) }}\n")
        path = os.path.join(package, f"zz_rewardkit_{r}_test.go") if package \
            else f"zz_rewardkit_{r}_test.go"
        harness[path] = [0o644, base64.b64encode(source.encode()).decode()]
    files = {}
    for relative in [*workspace.candidate_files, *workspace.test_files, *_others(workspace)]:
        full = os.path.join(workspace.folder, relative)
        if os.path.isfile(full) and not os.path.islink(full):
            files[relative] = workspace.payload(relative)
    # the go command, compiler and linker build as the code reward's Go builds do
    # (GO_BUILD_ENV: no garbage collection below 512 MiB); the tests run with Go's defaults
    return {"files": files, "harness": harness, "goroot": goroot(), "budget_s": budget_s,
            "packages": sorted({test["package"] for test in tests}), "tests": tests,
            "build_env": dict(GO_BUILD_ENV)}


def _others(workspace: Workspace) -> list[str]:
    known = set(workspace.candidate_files) | set(workspace.test_files)
    found = []
    for root, _, names in os.walk(workspace.folder):
        for name in names:
            relative = os.path.relpath(os.path.join(root, name), workspace.folder)
            if relative not in known:
                found.append(relative)
    return found


def run(workspace: Workspace, wanted: list[str], params: Any) -> Score:
    """Run the Go tests of ``wanted`` in ``workspace`` and judge their records."""
    details: dict[str, Any] = {"discarded": workspace.discarded}
    header = build_header(workspace, wanted, params.time_budget_s)
    problems = forbidden(workspace)
    if problems:
        details["tampered"] = problems[:5]
        details["tests"] = {test_id: "tampered" for test_id in wanted}
        return Score.ok(0.0, f"the patch reaches past Go's safe surface: {problems[0]}",
                        **details)
    if not os.path.isfile(os.path.join(goroot(), "bin", "go")):
        return Score.error(f"no Go toolchain at {goroot()} (set REWARDKIT_GOROOT)")
    driver = resources.files("rewardkit_repo").joinpath("_go_driver.py").read_text()
    limits = SandboxLimits(wall_time_s=params.time_budget_s + 5,
                           cpu_time_s=params.time_budget_s * 4,
                           memory_bytes=max(params.memory_mb, 2048) * 1024 * 1024,
                           file_size_bytes=256 * 1024 * 1024, open_files=512,
                           disk_bytes=1024 * 1024 * 1024, processes=256)
    report = run_driver(driver, header, limits, (goroot(),), params.concurrency,
                        params.time_budget_s, "Go driver", prepare=_seeded, **details)
    if isinstance(report, Score):
        return report
    if isinstance(report.get("gocache"), dict):
        details["go_build_cache"] = report["gocache"]
    return _verdict(report, header["tests"], details, params)


def _seeded(pool: SandboxPool, header: dict[str, Any]) -> None:
    """The build's empty GOCACHE starts as a copy of the sandbox's Go build cache seed
    (``rewardkit_sandbox.languages.go_cache_seed``: the standard library's module index,
    made once per process by a build task that compiles no candidate's code), as the
    code reward's Go test builds do; none when the tests build with another toolchain."""
    seed = go_cache_seed(pool, os.path.join(header["goroot"], "bin", "go"))
    header["gocache"] = {name: base64.b64encode(data).decode() for name, data in seed.items()}


def _outcome(result: Mapping[str, Any] | None, test: Mapping[str, Any]) -> tuple[str, str | None]:
    """(outcome, tampering seen or None) of one test's run."""
    if result is None:
        return "not run", None
    if not result.get("built"):
        return "build failed", None
    if result.get("timed_out"):
        return "timeout", None
    if result.get("raw") and result.get("senders") != [result.get("pid")]:
        return "tampered", "a record written by another process than the test's"
    lines = [line for line in str(result.get("raw", "")).splitlines() if line.strip()]
    if not lines:
        return f"no record (exit {result.get('exit')})", None
    if len(lines) > 1:
        return "tampered", "more than one record on the result channel"
    try:
        record = json.loads(lines[0])
    except ValueError:
        return "tampered", "a record that is not JSON on the result channel"
    if not isinstance(record, dict) or record.get("nonce") != test["nonce"]:
        return "tampered", "a record without the test's nonce on the result channel"
    if record.get("test") != _split(test["id"])[1]:
        return "tampered", "a record for another test"
    if record.get("failed"):
        return "failed", None
    if record.get("skipped"):
        return "skipped", None
    if not record.get("returned"):
        return "did not return", None
    if result.get("exit") != 0:
        return f"passed, then the process exited {result.get('exit')}", None
    return "passed", None


def _verdict(report: Mapping[str, Any], tests: list[dict[str, Any]], details: dict[str, Any],
             params: Any) -> Score:
    results = report.get("results") or {}
    outcomes: dict[str, str] = {}
    tampered: list[str] = []
    for test in tests:
        outcome, seen = _outcome(results.get(test["id"]), test)
        outcomes[test["id"]] = outcome
        if seen:
            tampered.append(f"{test['id']}: {seen}")
    details["tests"] = outcomes
    details["log"] = str(report.get("log", ""))[-1500:]
    if report.get("timed_out") or any(result.get("timed_out") for result in results.values()):
        return Score.timeout(f"the tests ran past {params.time_budget_s:g} s")
    if tampered:
        details["tampered"] = tampered[:5]
        return Score.ok(0.0, f"the test run was tampered with: {tampered[0]}", **details)
    passed = sum(outcome == "passed" for outcome in outcomes.values())
    value = passed / len(tests) if params.partial else float(passed == len(tests))
    failing = [test_id for test_id, outcome in outcomes.items() if outcome != "passed"]
    reason = (f"{passed}/{len(tests)} tests passed" +
              (f"; first not passing: {failing[0]} ({outcomes[failing[0]]})" if failing else ""))
    return Score.ok(value, reason, **details)
