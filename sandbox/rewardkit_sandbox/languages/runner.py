"""C, C++, Java, JavaScript (Node), Go and Rust in the local sandbox.

A program is compiled and run as two tasks of the same ``SandboxPool``, both under every
layer a Python task has (rlimits, seccomp, no network, private work directory, the slot
uid): a *build* task (the compiler, with :data:`COMPILE_LIMITS`: compilers need more
memory, processes and threads than a candidate program) whose artifacts come back as
data, and a *run* task that writes them into a fresh work directory and executes them
with the run limits. The trusted driver of both is :mod:`._driver`. Files travel raw both
ways, after a framed JSON header that lists them (name, mode, size): the sources to the
build task, the artifacts back from it (its stdout read as bytes) and on to the run task.

Builds are cached by what was compiled (language, toolchain, flags, every source file):
the G completions of a prompt that are the same program, every stdin/stdout case of one
program, and a program re-graded in a later epoch compile once. Compile errors and
compile timeouts (wrong answers) are cached too; a failed build task is not.

Assert-style tests are whole test programs in the language's usual shape (a C/C++
``main`` with ``assert``, a Java ``Main`` class, JavaScript statements with
``console.assert``/``assert``, Rust ``#[test]`` functions, Go ``TestX(t *testing.T)``
functions), each compiled with the candidate around a harness the candidate cannot
rewrite (:mod:`._harnesses`).

>>> from rewardkit_sandbox import SandboxPool
>>> with SandboxPool(size=1) as pool:
...     runner = CompiledRunner(pool, "c")
...     runner.run('#include <stdio.h>\\nint main(){puts("hi");}').stdout
'hi\\n'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import stat
import struct
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardkit_sandbox.languages import _go_imports as go_imports
from rewardkit_sandbox.languages import _harnesses as harnesses
from rewardkit_sandbox.languages._node_modules import node_modules_of, node_path_in
from rewardkit_sandbox.limits import SandboxLimits
from rewardkit_sandbox.pool import SandboxPool
from rewardkit_sandbox.result import SandboxResult, Status, TestResult

if TYPE_CHECKING:  # imported when used: `python -m rewardkit_sandbox.languages.rust_crates` runs it
    from rewardkit_sandbox.languages.rust_crates import RustCrates

_MIB = 1024 * 1024
_GIB = 1024 * _MIB
#: the task's PATH (see the zygote): a toolchain must be found there
TASK_PATH = "/usr/local/bin:/usr/bin:/bin"
_DRIVER = (Path(__file__).parent / "_driver.py").read_text()
_HEADER = struct.Struct("!Q")

#: the build task's limits: more memory, processes/threads and time than a program (the
#: work directory's size is the pool's ``disk_bytes``, set when the pool starts)
COMPILE_LIMITS = SandboxLimits(
    wall_time_s=60.0,
    cpu_time_s=60.0,
    memory_bytes=4 * _GIB,
    file_size_bytes=256 * _MIB,
    open_files=512,
    processes=256,
    stdout_bytes=192 * _MIB,
    stderr_bytes=64 * 1024,
)
#: compiler output kept (the rest is dropped in the sandbox)
COMPILER_OUTPUT_BYTES = 16 * 1024
#: address space a runtime reserves beyond what its program uses (JVM, V8, Go): their
#: address-space limit is the task's memory limit plus this. The least address space a
#: program started in (OpenJDK 17, Node 20, Go 1.19; docs/sandbox.md, Memory): java
#: 1,460-1,909 MiB at -Xmx 64-512 MiB; node 720 MiB for a hello world, 1,069 and 1,372
#: MiB holding 100 and 400 MiB of arrays; go 695 MiB, and 827, 1,158 and 1,554 MiB
#: touching 100, 400 and 800 MiB.
RUNTIME_RESERVE_BYTES = {"java": 2 * _GIB, "javascript": 3 * _GIB // 2, "go": 1 * _GIB}
#: the least memory limit a runtime is run under: below it a run is a sandbox_error,
#: never a wrong answer (java with the flags below starts at 56 MiB, not at 48 MiB,
#: a hello world and a HumanEval-X test alike; docs/sandbox.md, Memory)
MEMORY_FLOOR_BYTES = {"java": 64 * _MIB}


@dataclass(frozen=True)
class Language:
    """How one language is built and run. ``tools``: executables it needs on the task
    PATH; ``heap_limited``: a runtime that reserves far more address space than it
    uses, so its memory limit is RLIMIT_DATA under a high address-space ceiling."""

    name: str
    tools: tuple[str, ...]
    heap_limited: bool = False
    default_flags: tuple[str, ...] = ()


LANGUAGES: dict[str, Language] = {
    "c": Language("c", ("gcc",), default_flags=("-O2", "-std=gnu11", "-w")),
    "cpp": Language("cpp", ("g++",), default_flags=("-O2", "-std=gnu++17", "-w")),
    "java": Language("java", ("javac", "java"), heap_limited=True),
    "javascript": Language("javascript", ("node",), heap_limited=True),
    # stripped (no symbol table, no DWARF; panics still name functions): a cached test
    # build of 2.8 MB instead of 4.1 MB, so HumanEval-X's 164 fit the default cache
    "go": Language("go", ("go",), heap_limited=True, default_flags=("-ldflags=-s -w",)),
    "rust": Language(
        "rust", ("rustc",), default_flags=("-C", "opt-level=1", "-C", "strip=symbols")
    ),
}
#: other names users write (fenced-block tags, dataset fields)
ALIASES = {"c++": "cpp", "cc": "cpp", "cxx": "cpp", "js": "javascript", "node": "javascript",
           "golang": "go", "rs": "rust"}


def language_named(name: str) -> Language:
    """The language ``name`` (or an alias); ``ValueError`` listing the known ones."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in LANGUAGES:
        known = ", ".join(sorted([*LANGUAGES, *ALIASES]))
        raise ValueError(f"unknown language {name!r} (known: {known}; python: PythonRunner)")
    return LANGUAGES[key]


def find_toolchain(language: Language) -> tuple[dict[str, str], str | None]:
    """(tool -> absolute path, problem): each tool on the task PATH and executable by
    any uid (the sandbox's slot uids are not the pool's), else why not."""
    found: dict[str, str] = {}
    for tool in language.tools:
        path = shutil.which(tool, path=TASK_PATH)
        if path is None:
            where = shutil.which(tool)
            hint = f" (found at {where}, outside the sandbox's PATH)" if where else ""
            return found, (
                f"{tool} not found on the sandbox PATH {TASK_PATH}{hint}; install the "
                f"{language.name} toolchain (see docs/sandbox.md, Languages)"
            )
        real = os.path.realpath(path)
        if not os.stat(real).st_mode & stat.S_IXOTH:
            return found, f"{real} is not executable by other users (the sandbox's slot uids)"
        found[tool] = path
    return found, None


@dataclass
class Build:
    """One compile: ``ok``, the capped compiler output, and the artifacts (path ->
    (mode, bytes))."""

    ok: bool
    log: str
    files: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    status: Status = Status.OK
    error: str | None = None
    seconds: float = 0.0

    def size(self) -> int:
        return len(self.log) + sum(len(data) for _, data in self.files.values())


class CompileCache:
    """Builds by key, least recently used dropped past ``max_bytes``; thread-safe.
    ``hits``/``misses`` count look-ups (a miss is a compile)."""

    def __init__(self, max_bytes: int = 512 * _MIB) -> None:
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._builds: OrderedDict[str, Build] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._building: dict[str, threading.Event] = {}

    def get_or_build(self, key: str, build: Any) -> tuple[Build, bool]:
        """(the build of ``key``, whether it came from the cache); one compile per key
        even when several threads ask at once."""
        while True:
            with self._lock:
                cached = self._builds.get(key)
                if cached is not None:
                    self._builds.move_to_end(key)
                    self.hits += 1
                    return cached, True
                waiting = self._building.get(key)
                if waiting is None:
                    self._building[key] = threading.Event()
                    self.misses += 1
                    break
            waiting.wait()
        try:
            made: Build = build()
            # a compile timeout is the source's verdict like a compile error (a wrong
            # answer): compiling it again for each case and identical completion would
            # cost the compile limit each time, one after the other
            if made.status is not Status.SANDBOX_ERROR:
                self._store(key, made)
            return made, False
        finally:
            with self._lock:
                self._building.pop(key).set()

    def _store(self, key: str, made: Build) -> None:
        with self._lock:
            self._builds[key] = made
            self._bytes += made.size()
            while self._bytes > self.max_bytes and len(self._builds) > 1:
                _, dropped = self._builds.popitem(last=False)
                self._bytes -= dropped.size()


_shared_cache = CompileCache()


def shared_compile_cache() -> CompileCache:
    """The process's compile cache (every ``CompiledRunner`` uses it unless given one)."""
    return _shared_cache


@dataclass(frozen=True)
class _Plan:
    """What to compile and how to run it."""

    sources: dict[str, str]
    steps: list[dict[str, Any]]
    collect: list[str]
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    #: artifacts made execute-only before the run (they start non-dumpable)
    exec_only: tuple[str, ...] = ()
    #: the runtime (java, node) started by an execute-only copy of its dynamic loader
    private_loader: bool = False
    #: a Go test build: its empty GOCACHE starts as a copy of the runner's seed
    go_seed: bool = False
    #: environment of the build task only (over ``env``): never the program's
    build_env: dict[str, str] = field(default_factory=dict)


class CompiledRunner:
    """Programs of one compiled (or non-Python) language in a local ``SandboxPool``.

    ``run(code, stdin=...)`` compiles ``code`` as a whole program and feeds it stdin;
    ``run(code, tests=[...])`` compiles each test program with ``code`` and runs it
    (``SandboxResult.tests``: one per test program). Statuses beside the run ones:
    ``compile_error``, ``compile_timeout`` (the build task's limits) and
    ``toolchain_missing`` (an infrastructure problem, like ``sandbox_error``).
    ``metadata`` says whether the build was cached and how long it took.
    ``node_modules``: a ``node_modules`` directory whose packages JavaScript programs may
    ``require`` (``NODE_PATH``); the pool's tasks must see it (one of its ``import_paths``,
    mounted read-only, or a directory outside the folders the sandbox hides).
    ``rust_crates``: a directory of prebuilt crates (:mod:`.rust_crates`) offered to
    every Rust compile; part of the build's cache key.
    """

    def __init__(
        self,
        pool: SandboxPool,
        language: str,
        *,
        limits: SandboxLimits | None = None,
        compile_limits: SandboxLimits = COMPILE_LIMITS,
        test_timeout_s: float | None = None,
        stop_on_first_failure: bool = False,
        flags: Sequence[str] | None = None,
        cache: CompileCache | None = None,
        rust_crates: str | os.PathLike[str] | RustCrates | None = None,
        node_modules: str | os.PathLike[str] | None = None,
    ) -> None:
        self.pool = pool
        self.spec = language_named(language)
        self.language = self.spec.name
        self.limits = limits or pool.limits
        self.compile_limits = compile_limits
        self.test_timeout_s = test_timeout_s
        self.stop_on_first_failure = stop_on_first_failure
        self.flags = tuple(self.spec.default_flags if flags is None else flags)
        self.cache = cache or _shared_cache
        self.tools, self.toolchain_problem = find_toolchain(self.spec)
        self.node_modules = node_modules_of(node_modules, self.language)
        self._node_path: str | None = None
        self.rust_crates: RustCrates | None = None
        if rust_crates is not None:
            self._offer_crates(rust_crates)

    # -- public -----------------------------------------------------------------------

    def run(
        self, code: str, *, stdin: str | None = None, tests: Sequence[str] | None = None
    ) -> SandboxResult:
        """Compile and run ``code`` (see the class)."""
        if self.toolchain_problem is None and self.node_modules and self._node_path is None:
            self._node_path, self.toolchain_problem = node_path_in(self.pool, self.node_modules)
        if self.toolchain_problem is None and self.rust_crates is not None:
            self.toolchain_problem = _crates_visible(self.pool, self.rust_crates)
        if self.toolchain_problem is not None:
            return SandboxResult(Status.TOOLCHAIN_MISSING, error=self.toolchain_problem)
        floor = MEMORY_FLOOR_BYTES.get(self.language, 0)
        if self.limits.memory_bytes < floor:  # never a 0 for a program that could not start
            return SandboxResult(Status.SANDBOX_ERROR, error=(
                f"{self.language} needs at least {floor // _MIB} MiB of memory to start; "
                f"the limit is {self.limits.memory_bytes // _MIB} MiB (docs/sandbox.md, Memory)"
            ))
        if tests is None:
            return self._execute_plan(self._program_plan(code), stdin or "", self.limits)
        return self._execute_tests(code, tests)

    # -- test programs ----------------------------------------------------------------

    def _execute_tests(self, code: str, tests: Sequence[str]) -> SandboxResult:
        outcomes: list[TestResult] = []
        first: SandboxResult | None = None
        limits = self.limits
        if self.test_timeout_s is not None:
            limits = dataclasses.replace(
                limits, wall_time_s=self.test_timeout_s, cpu_time_s=self.test_timeout_s
            )
        refusal = harnesses.refused(self.language, code)  # the candidate's, every test
        for index, test in enumerate(tests):
            nonce = secrets.token_hex(16)
            if refusal is not None:
                result = SandboxResult(Status.COMPILE_ERROR, error=f"compile error ({refusal})")
            elif harnesses.count_tests(self.language, test) == 0:
                result = SandboxResult(Status.FAILED, error="the test program declares no tests")
            else:
                result = self._execute_plan(self._test_plan(code, test), nonce + "\n", limits)
            records = result.metadata.get("harness", ())
            if result.status is Status.OK and not (isinstance(records, tuple)
                                                   and nonce in records):
                result = dataclasses.replace(
                    result,
                    status=Status.FAILED,
                    error="the test harness did not finish: the program exited before its "
                    "tests ended (or a test failed)",
                )
            outcomes.append(TestResult(index, result.status, result.error, result.wall_time_s))
            if first is None or (first.ok and not result.ok):
                first = result
            if result.status is Status.SANDBOX_ERROR:
                break
            if not result.ok and self.stop_on_first_failure:
                break
        outcomes += [TestResult(i, None) for i in range(len(outcomes), len(tests))]
        assert first is not None or not tests
        base = first or SandboxResult(Status.OK)
        failed = next((t for t in outcomes if t.status is not None and not t.passed), None)
        status = base.status if failed is None else failed.status or Status.FAILED
        error = None if failed is None else f"test {failed.index}: {failed.error}"
        return dataclasses.replace(base, status=status, error=error, tests=tuple(outcomes))

    # -- build and run ----------------------------------------------------------------

    def _execute_plan(self, plan: _Plan, stdin: str, limits: SandboxLimits) -> SandboxResult:
        build, cached = self.cache.get_or_build(self._key(plan), lambda: self._build(plan))
        facts: dict[str, object] = {"compile_cached": cached, "compile_s": round(build.seconds, 4)}
        if not build.ok:
            return SandboxResult(
                build.status, stderr=build.log, error=build.error, metadata=facts
            )
        # the files travel raw after the header, not base64 in it: a Go binary (1.3 MB)
        # costs the run task a third less to receive, and no decoding
        files = [(name, mode, data) for name, (mode, data) in build.files.items()]
        files += [(name, 0o644, _encoded(text))
                  for name, text in plan.sources.items() if name.endswith(".js")]
        header: dict[str, Any] = {"raw_files": _listed(files),
                                  "argv": plan.argv, "env": plan.env,
                                  "exec_only": list(plan.exec_only),
                                  "private_loader": plan.private_loader}
        run_limits = limits
        if self.spec.heap_limited:
            header["data_bytes"] = limits.memory_bytes
            reserve = RUNTIME_RESERVE_BYTES[self.language]
            run_limits = dataclasses.replace(
                limits, address_space_bytes=limits.memory_bytes + reserve
            )
        raw = b"".join(data for _, _, data in files)
        result = self.pool.run(
            _DRIVER + "\nexecute()\n", stdin=b"".join([_framed(header), raw, stdin.encode()]),
            limits=run_limits,
        )
        metadata = {**result.metadata, **facts}
        return dataclasses.replace(result, metadata=metadata)

    def _build(self, plan: _Plan) -> Build:
        if not plan.steps:
            return Build(True, "")
        files = [(name, 0o644, _encoded(text)) for name, text in plan.sources.items()]
        if plan.go_seed:
            seed = self._go_cache_seed()
            files += [(name, mode, data) for name, (mode, data) in seed.items()
                      if name not in plan.sources]
        header: dict[str, Any] = {
            "raw_files": _listed(files),
            "steps": plan.steps,
            "collect": plan.collect,
            "env": {**plan.env, **plan.build_env},
            "log_bytes": COMPILER_OUTPUT_BYTES,
            "artifact_bytes": self.compile_limits.stdout_bytes // 2,
            "data_bytes": 2 * _GIB,
        }
        started = time.monotonic()
        result = self.pool.run(
            _DRIVER + "\nbuild()\n",
            stdin=b"".join([_framed(header), *(data for _, _, data in files)]),
            limits=self.compile_limits,
            raw_stdout=True,
        )
        seconds = time.monotonic() - started
        if result.status is Status.TIMEOUT:
            why = f"compile timeout: {result.error}"
            return Build(False, "", status=Status.COMPILE_TIMEOUT, error=why, seconds=seconds)
        answer = _build_answer(result.stdout_bytes or b"", header["artifact_bytes"])
        verdict, artifacts = answer if result.ok and answer else (None, {})
        if verdict is None:
            detail = result.error or result.stderr[-300:] or result.status
            error = f"the build task failed ({result.status}): {detail}"
            return Build(False, "", status=Status.SANDBOX_ERROR, error=error, seconds=seconds)
        log = str(verdict.get("log", ""))
        if not verdict.get("ok"):
            first = next((line for line in log.splitlines() if "error" in line.lower()), "")
            error = f"compile error ({verdict.get('step')}): {first[:300] or log[-300:]}"
            return Build(False, log, status=Status.COMPILE_ERROR, error=error, seconds=seconds)
        return Build(True, log, files=artifacts, seconds=seconds)

    def _key(self, plan: _Plan) -> str:
        crates = self.rust_crates.digest if self.rust_crates else None  # the crate set
        identity = [self.language, self.flags, crates, sorted(plan.sources.items()), plan.steps,
                    [(path, os.stat(path).st_mtime_ns) for path in self.tools.values()]]
        return hashlib.sha256(json.dumps(identity, default=str).encode()).hexdigest()

    def _go_cache_seed(self) -> dict[str, tuple[int, bytes]]:
        """The files of a Go build cache seeded with what every test build repeats (the
        standard library's module index, the vendored assert package), as build files:
        each test build writes them into its own empty ``gocache``, so a build reads them
        there instead of making them again. Made once per process and toolchain, by a
        build task of this runner's pool that compiles only :data:`GO_SEED_CODE` and
        :data:`GO_SEED_TEST` (no candidate's code), and kept here, in the pool's process:
        no task can write to it, each build has its own copy in its own work directory,
        gone with it. Empty (builds start cold, as before) if that build failed."""
        go = self.tools["go"]
        key = json.dumps([go, os.stat(go).st_mtime_ns, self.flags])
        with _go_seed_lock:
            seed = _go_seeds.get(key)
            if seed is None:
                plan = dataclasses.replace(self._test_plan(GO_SEED_CODE, GO_SEED_TEST),
                                           collect=["gocache"], go_seed=False)
                made = self._build(plan)
                seed = {name: (0o644, data) for name, (_, data) in made.files.items()
                        if made.ok and name.startswith("gocache/")}
                _go_seeds[key] = seed
            return seed

    # -- per language -----------------------------------------------------------------

    def _program_plan(self, code: str) -> _Plan:
        """``code`` as a whole program (stdin/stdout cases)."""
        tool = self.tools
        flags = list(self.flags)
        if self.language in ("c", "cpp"):
            compiler = tool["gcc" if self.language == "c" else "g++"]
            source = "main.c" if self.language == "c" else "main.cpp"
            step = {"argv": [compiler, *flags, source, "-o", "prog", "-lm"], "name": "compile"}
            return _Plan({source: code}, [step], ["prog"], ["./prog"])
        if self.language == "java":
            name = harnesses.java_public_class(code) or "Main"
            return self._java_plan({f"{name}.java": code}, name)
        if self.language == "javascript":
            return self._js_plan({"main.js": code}, ["main.js"])
        if self.language == "rust":
            return self._rust_plan(code)
        return self._go_plan({"main.go": go_imports.merged_file("main", [code])}, test=False)

    def _test_plan(self, code: str, test: str) -> _Plan:
        """``code`` with test program ``test`` around the language's harness."""
        tool = self.tools
        flags = list(self.flags)
        if self.language in ("c", "cpp"):
            c = self.language == "c"
            compiler = tool["gcc" if c else "g++"]
            suffix = "c" if c else "cpp"
            renames = ["-D__assert_fail=rewardkit_assert_fail"]
            # flowing off the end of a non-void function traps instead of being undefined
            # behaviour the optimiser may use to drop the tests' main (C++ only: in C it
            # is defined unless the value is used)
            strict = [] if c else ["-fsanitize=return", "-fsanitize-undefined-trap-on-error"]
            checks = "" if c else (
                '#include "rewardkit_plain.h"\n'
                + harnesses.cpp_plain_checks(harnesses.cpp_checked_functions(code, test)))
            sources = {
                f"candidate.{suffix}": code,
                f"program.{suffix}": f'#include "candidate.{suffix}"\n'
                f'#include "rewardkit_undef.h"\n{checks}#line 1 "tests.{suffix}"\n{test}\n',
                f"harness.{suffix}": harnesses.C_HARNESS,
                **({} if c else {"rewardkit_plain.h": harnesses.CPP_PLAIN}),
            }
            steps: list[dict[str, Any]] = [
                {"argv": [compiler, *flags, "-E", "-dD", f"candidate.{suffix}", "-o", "cpp.i"],
                 "name": "preprocess", "undef_of": f"candidate.{suffix}",
                 "preprocessed": "cpp.i", "undef_into": "rewardkit_undef.h",
                 "refuse": harnesses.C_REFUSED},
                {"argv": [compiler, *flags, *strict, *renames, "-c", f"program.{suffix}", "-o",
                          "program.o"],
                 "name": "compile"},
                {"argv": [compiler, *flags, "-c", f"harness.{suffix}", "-o", "harness.o"],
                 "name": "compile harness"},
                {"argv": [compiler, "program.o", "harness.o", "-Wl,--wrap=main", "-o", "prog",
                          "-lm", "-lcrypto"],
                 "name": "link"},
            ]
            return _Plan(sources, steps, ["prog"], ["./prog"], exec_only=("prog",))
        if self.language == "java":
            sources = {
                "Solution.java": code,
                "Main.java": harnesses.java_tests_source(test),
                "RewardkitHarness.java": harnesses.JAVA_HARNESS,
            }
            return dataclasses.replace(self._java_plan(sources, "RewardkitHarness"),
                                       private_loader=True)
        if self.language == "javascript":
            sources = {"main.js": code, "tests.js": test, "harness.js": harnesses.JS_HARNESS}
            plan = self._js_plan(sources, ["--disallow-code-generation-from-strings",
                                           "harness.js"], check=["main.js", "tests.js"])
            return dataclasses.replace(plan, private_loader=True)
        if self.language == "rust":
            plan = self._rust_plan(f"{code}\n\n{harnesses.rust_tests_source(test, code)}")
            return dataclasses.replace(plan, exec_only=("prog",))
        sources = {
            **harnesses.go_test_sources(code, test),
            "go.mod": harnesses.GO_MOD,
            "vendor/modules.txt": harnesses.GO_VENDOR_MODULES,
            "vendor/github.com/stretchr/testify/assert/assert.go": harnesses.GO_ASSERT_SHIM,
        }
        return dataclasses.replace(self._go_plan(sources, test=True), exec_only=("prog",),
                                   go_seed=True)

    def _java_plan(self, sources: dict[str, str], main_class: str) -> _Plan:
        # -Xss sizes the main thread (the launcher's), -XX:ThreadStackSize every other
        # thread: the JVM's own ~8 threads at 16 MiB each were ~128 MiB of RLIMIT_DATA,
        # and java needed 176 MiB to start (now 56 MiB)
        jvm = ["-Xss16m", "-XX:ThreadStackSize=1024", "-XX:+UseSerialGC",
               "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:CICompilerCount=1",
               "-XX:-UsePerfData"]
        step = {"argv": [self.tools["javac"], *(f"-J{flag}" for flag in [*jvm, "-Xmx1g"]),
                         "-encoding", "UTF-8", "-nowarn", "-d", "classes", *self.flags,
                         *sorted(sources)], "name": "javac"}
        heap = f"-Xmx{max(32, self.limits.memory_bytes // _MIB // 2)}m"
        opens = ["--add-opens", "java.base/java.io=ALL-UNNAMED"]  # the harness's fd 3
        argv = [self.tools["java"], *jvm, heap, *opens, "-cp", "classes", main_class]
        return _Plan(sources, [step], ["classes"], argv)

    def _js_plan(
        self, sources: dict[str, str], entry: list[str], check: Sequence[str] = ()
    ) -> _Plan:
        node = self.tools["node"]
        steps = [{"argv": [node, "--check", name], "name": f"node --check {name}"}
                 for name in (check or entry)]
        heap = f"--max-old-space-size={max(16, self.limits.memory_bytes // _MIB // 2)}"
        env = {"NODE_PATH": self._node_path} if self._node_path else {}
        return _Plan(sources, steps, [], [node, heap, *self.flags, *entry], env=env)

    def _rust_plan(self, source: str) -> _Plan:
        crates = self.rust_crates.rustc_flags() if self.rust_crates else []
        step = {"argv": [self.tools["rustc"], "--edition", "2021", "--cap-lints", "allow",
                         *self.flags, *crates, "main.rs", "-o", "prog"], "name": "rustc"}
        return _Plan({"main.rs": source}, [step], ["prog"], ["./prog"])

    def _offer_crates(self, crates: str | os.PathLike[str] | RustCrates) -> None:
        """Compile Rust with the prebuilt ``crates`` (:mod:`.rust_crates`); a set that
        cannot serve (unreadable, another rustc's) is this runner's toolchain problem."""
        from rewardkit_sandbox.languages.rust_crates import CrateSetError, RustCrates, crates_at

        if self.language != "rust":
            raise ValueError(f"rust_crates is for language rust, not {self.language}")
        try:
            self.rust_crates = crates if isinstance(crates, RustCrates) else crates_at(crates)
        except CrateSetError as error:
            self.toolchain_problem = self.toolchain_problem or str(error)
            return
        if self.toolchain_problem is None:
            self.toolchain_problem = self.rust_crates.problem_with(self.tools["rustc"])

    def _go_plan(self, sources: dict[str, str], test: bool) -> _Plan:
        go = self.tools["go"]
        env = {"GOCACHE": "{cwd}/gocache", "GOPATH": "{cwd}/gopath",
               "GOFLAGS": "-mod=vendor" if test else "",
               "GO111MODULE": "on" if test else "off", "GOPROXY": "off", "CGO_ENABLED": "0",
               "GOTOOLCHAIN": "local", "GOMAXPROCS": "2",
               # go ignores a go.mod in the temp root, which TMPDIR (the work dir) is
               "TMPDIR": "{cwd}/gotmp"}
        sources = {**sources, "gotmp/.keep": ""}
        if test:
            # no vet pass: it took ~75% of a build, and a vet finding (a Printf verb that
            # does not match) is for the tests to judge, as with `go build`
            argv = [go, "test", "-c", "-vet=off", "-o", "prog", *self.flags]
        else:
            argv = [go, "build", "-o", "prog", *self.flags, "main.go"]
        run = ["./prog", "-test.count=1"] if test else ["./prog"]
        return _Plan(sources, [{"argv": argv, "name": "go build"}], ["prog"], run, env=env,
                     build_env=GO_BUILD_ENV)


#: the go command, compiler and linker of a Go build collect no garbage until a process
#: holds 512 MiB (then they do, as the limit asks): Go 1.19's toolchain otherwise starts
#: collecting at a 4 MB heap, ~10-15% of a small program's build CPU in the sandbox
#: (docs/performance.md, item 5). The build's only: the program runs with Go's defaults.
GO_BUILD_ENV = {"GOGC": "off", "GOMEMLIMIT": "512MiB"}

#: what the Go build cache seed is made from (``CompiledRunner._go_cache_seed``): a test
#: program importing the standard packages candidates use most, and the assert package
GO_SEED_CODE = (
    'package main\nimport (\n\t"bufio"\n\t"bytes"\n\t"container/heap"\n'
    '\t"container/list"\n\t"errors"\n\t"fmt"\n\t"math"\n\t"math/big"\n\t"math/bits"\n'
    '\t"os"\n\t"reflect"\n\t"regexp"\n\t"sort"\n\t"strconv"\n\t"strings"\n\t"time"\n'
    '\t"unicode"\n\t"unicode/utf8"\n)\n'
    "var _ = []any{bufio.NewReader, bytes.Compare, heap.Init, list.New, errors.New, "
    "fmt.Sprint, math.Abs, big.NewInt, bits.Len, os.Exit, reflect.DeepEqual, "
    "regexp.MustCompile, sort.Ints, strconv.Itoa, strings.Fields, time.Now, unicode.IsDigit, "
    "utf8.RuneLen}\n"
    "func rewardkitSeed() int { return 1 }\n"
)
GO_SEED_TEST = (
    'package main\nimport (\n\t"testing"\n\t"github.com/stretchr/testify/assert"\n)\n'
    "func TestSeed(t *testing.T) { assert.Equal(t, 1, rewardkitSeed()) }\n"
)
#: toolchain key -> the Go build cache seed's files (``CompiledRunner._go_cache_seed``)
_go_seeds: dict[str, dict[str, tuple[int, bytes]]] = {}
_go_seed_lock = threading.Lock()


def go_cache_seed(pool: SandboxPool, go: str) -> dict[str, bytes]:
    """The Go build cache seed (``CompiledRunner._go_cache_seed``) for another Go build
    in a task of ``pool``: path inside the build's empty ``GOCACHE`` -> bytes. Empty
    unless ``go`` is the toolchain the sandbox runs (the ``go`` on :data:`TASK_PATH`,
    links followed): another toolchain's cache entries would not match. Made once per
    process and toolchain; every caller gets the same files, theirs to copy, not
    change."""
    runner = CompiledRunner(pool, "go")
    if runner.toolchain_problem is not None:
        return {}
    if os.path.realpath(go) != os.path.realpath(runner.tools["go"]):
        return {}
    prefix = "gocache/"
    return {name[len(prefix):]: data for name, (_, data) in runner._go_cache_seed().items()}


#: pool -> (crate directory, digest) -> why the pool's tasks cannot read the crates, or None
_visible: weakref.WeakKeyDictionary[SandboxPool, dict[str, str | None]] = (
    weakref.WeakKeyDictionary()
)


def _crates_visible(pool: SandboxPool, crates: RustCrates) -> str | None:
    """Whether a task of ``pool`` (the slot uid, in the sandbox's mounts, where /tmp,
    home folders and the repository are not the host's) reads every crate file; asked
    once per pool and crate set."""
    known = _visible.setdefault(pool, {})
    key = f"{crates.directory}\0{crates.digest}"
    if key not in known:
        files = [os.path.join(crates.directory, name) for name in crates.externs.values()]
        probe = f"import os\nprint(all(os.access(p, os.R_OK) for p in {files!r}))\n"
        result = pool.run(probe)
        seen = result.ok and result.stdout.strip() == "True"
        known[key] = None if seen else (
            f"the crate directory {crates.directory} is not visible inside the sandbox "
            f"({result.status}: {result.error or result.stdout.strip()}): put it outside "
            "/tmp, /var/tmp, home folders and the working directory (docs/sandbox.md)"
        )
    return known[key]


def _framed(header: dict[str, Any]) -> bytes:
    body = json.dumps(header).encode()
    return _HEADER.pack(len(body)) + body


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _listed(files: list[tuple[str, int, bytes]]) -> list[list[Any]]:
    """The header's ``raw_files``: [name, mode, size] of each file whose bytes follow it."""
    return [[name, mode, len(data)] for name, mode, data in files]


def _build_answer(
    answer: bytes, limit: int
) -> tuple[dict[str, Any], dict[str, tuple[int, bytes]]] | None:
    """A build task's stdout read: (its JSON verdict, its artifacts: path -> (mode,
    bytes)), or None unless it is exactly one framed verdict and the bytes of the files
    it lists, each a relative path without ``..`` (under the build's work directory, as
    the run task writes it), at most ``limit`` bytes in all."""
    if len(answer) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack_from(answer)
    start = _HEADER.size + size
    if start > len(answer):
        return None
    try:
        verdict = json.loads(answer[_HEADER.size:start])
    except ValueError:
        return None
    listed = verdict.get("raw_files") if isinstance(verdict, dict) else None
    if not isinstance(listed, list):
        return None
    artifacts: dict[str, tuple[int, bytes]] = {}
    offset = start
    for entry in listed:
        if not (isinstance(entry, list) and len(entry) == 3):
            return None
        name, mode, length = entry
        if not (isinstance(name, str) and type(mode) is int and type(length) is int):
            return None
        parts = name.split("/")
        if (not name or name.startswith("/") or "\0" in name or ".." in parts
                or name in artifacts or mode & ~0o755 or length < 0
                or offset + length > len(answer) or offset + length - start > limit):
            return None
        artifacts[name] = (mode, answer[offset:offset + length])
        offset += length
    return (verdict, artifacts) if offset == len(answer) else None
