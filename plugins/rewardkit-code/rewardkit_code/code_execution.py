"""``code_execution``: run the model's program against tests in the sandbox.

The program is taken from the completion (a fenced block, the last block, or the whole
text), then run against the reference: assert-style tests (each in its own process,
after the program) or stdin/stdout cases (one run per case). What a run costs the
candidate (a timeout, the memory limit, a crash) is a wrong answer with the reason;
what the infrastructure fails to do (``sandbox_error``, an unreachable SandboxFusion)
is an error score, never a 0.

Modes: ``binary`` (1 when everything passes), ``pass_fraction`` (passed / total) and
``partial`` (SEEDS B: ``compiles_value`` for a program that compiles, ``runs_value`` for
one that also runs clean, ``pass_value`` when every test passes).

>>> from rewardkit import Sample
>>> grader = CodeExecution({"mode": "binary"})
>>> answer = "```python\\ndef add(a, b):\\n    return a + b\\n```"
>>> grader.grade(Sample(completion=answer, reference=["assert add(1, 2) == 3"]))
Score(value=1.0, status=<Status.OK: 'ok'>, reason='all 1 tests passed', ...)
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import secrets
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field, model_validator
from rewardkit_sandbox import (
    CompiledRunner,
    PythonRunner,
    Runner,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailableError,
    Status,
    language_named,
)
from rewardkit_sandbox.languages import COMPILE_LIMITS
from rewardkit_sandbox.remote.factory import build_remote_runner, check_remote_settings

from rewardkit import ExecutionMode, Params, Reward, Sample, Score, graded_text
from rewardkit_code.extraction import ExtractMode, extract_code
from rewardkit_code.references import IOCase, ReferenceFormatError, TestSuite, parse_reference
from rewardkit_code.sandboxes import (
    MOST_CONCURRENCY,
    MOST_LOCAL_SLOTS,
    default_slots,
    local_budget,
    shared_call_threads,
    shared_sandbox_pool,
)

_MIB = 1024 * 1024
#: time a test batch may take beyond its tests' own limits (harness start, forks)
_BATCH_OVERHEAD_S = 1.0
_REMOTE_CONCURRENCY = 16

# Compiles the candidate first, says so on stderr (with a per-run token), then runs it
# as __main__: tells "does not compile" from "compiles but fails" without parsing
# tracebacks. Faking the token only moves a program from 0 to its true stage.
_STAGE_PROBE = """\
import sys as _rewardkit_sys
try:
    _rewardkit_code = compile({source!r}, "main.py", "exec", dont_inherit=True)
except (SyntaxError, ValueError) as _rewardkit_error:
    print(f"{{type(_rewardkit_error).__name__}}: {{_rewardkit_error}}", file=_rewardkit_sys.stderr)
    raise SystemExit(1)
print({token!r}, file=_rewardkit_sys.stderr, flush=True)
exec(_rewardkit_code, globals())
"""


#: C and C++ tests run in the candidate's process, where raw pointers reach everything
_IN_PROCESS_VERDICT = ("C/C++ tests share the candidate's process: hardened, but raw memory "
                       "access could reach the harness (docs/sandbox.md, Test verdicts; "
                       "cases: have no in-process verdict)")


def _in_process(language: str) -> bool:
    """C or C++ (any alias the sandbox knows): tests that share the candidate's process."""
    return not _is_python(language) and language_named(language).name in ("c", "cpp")


class CodeExecutionParams(Params):
    """Parameters of ``code_execution``."""

    language: str = Field(
        "python",
        description="language of the program: the fenced-block tag looked for, and what the "
        "runner runs (local: python, c, cpp, java, javascript, go, rust; tests are then "
        "test programs in the language's own shape, see docs/plugins/code.md)",
    )
    extract: ExtractMode = Field(
        "fenced",
        description="fenced: the last block tagged with the language (else the last "
        "untagged one); last_block: the last fenced block; whole: the whole completion; "
        "all read after the reasoning (rewardkit.graded_text)",
    )
    mode: Literal["binary", "pass_fraction", "partial"] = Field(
        "pass_fraction",
        description="binary: 1 when every test passes; pass_fraction: passed / total; "
        "partial: compiles_value / runs_value / pass_value by the stage reached",
    )
    compiles_value: float = Field(0.1, ge=0, description="partial: the program compiles")
    runs_value: float = Field(
        0.2, ge=0, description="partial: it also runs clean (exit 0, no exception)"
    )
    pass_value: float = Field(1.0, ge=0, description="partial: every test passes")
    batch_size: int | None = Field(
        None,
        ge=1,
        description="tests run in batches of this many; after the first batch with a "
        "failure the rest are not run (and count as failed); null: one batch",
    )
    timeout_s: float = Field(5.0, gt=0, le=600, description="limit per test / per case run")
    memory_mb: int = Field(512, ge=32, description="address-space limit of the program")
    compile_timeout_s: float = Field(
        COMPILE_LIMITS.wall_time_s,
        gt=0,
        le=600,
        description="local compiled languages: wall and CPU limit of one build (a build "
        "past it is a wrong answer, compile_timeout, cached like a compile error)",
    )
    compare: Literal["exact", "rstrip", "whitespace"] = Field(
        "rstrip",
        description="stdout comparison: exact; rstrip: trailing whitespace of each line and "
        "trailing blank lines ignored; whitespace: the whitespace-separated tokens",
    )
    runner: Literal["local", "sandboxfusion", "piston", "judge0", "e2b"] = Field(
        "local",
        description="local: this machine's SandboxPool; sandboxfusion, piston, judge0, e2b: "
        "that service's HTTP API (see docs/plugins/code.md, Runners)",
    )
    endpoint: str | None = Field(
        None,
        description="the remote runner's base URL: sandboxfusion http://host:8080, piston "
        "http://host:2000/api/v2, judge0 http://host:2358, e2b (default) https://api.e2b.app",
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=MOST_CONCURRENCY,
        description="programs run at once on this node, shared by every process and rank: "
        "local, this process's sandbox slots and the node's local runs (default: the "
        "node's CPU count); a remote runner, runs in flight to the same endpoint "
        f"(default {_REMOTE_CONCURRENCY}); at most {MOST_CONCURRENCY} (each run in "
        "flight holds descriptors of a process limited to 1,024 by default); runner local, "
        f"at most {MOST_LOCAL_SLOTS} (the sandbox slots of one pool)",
    )
    requests_per_s: float | None = Field(
        None,
        gt=0,
        description="remote runners: at most this many requests a second from this node "
        "(every process together); null: no rate limit",
    )
    api_key_env: str | None = Field(
        None,
        description="remote runners: the environment variable holding the API key (e2b: "
        "E2B_API_KEY by default); never the key itself",
    )
    runner_options: dict[str, bool | str | int | float] = Field(
        default_factory=dict,
        description="remote runners: provider options (piston: version, compile_timeout_s; "
        "judge0: language_id; e2b: template, sandbox_url, domain, internet; all: "
        "request_timeout_s, max_retry_wait_s, max_wait_s, api_key_header)",
    )
    rust_crates: str | None = Field(
        None,
        description="local rust: a directory of prebuilt crates offered to every program "
        "(python -m rewardkit_sandbox.languages.rust_crates; see docs/sandbox.md, Rust crates)",
    )
    node_modules: str | None = Field(
        None,
        description="local javascript: a node_modules directory (npm install --prefix DIR "
        "PACKAGE) whose packages programs may require; mounted read-only in the sandbox",
    )

    @model_validator(mode="after")
    def _consistent(self) -> CodeExecutionParams:
        if self.runner != "local":
            check_remote_settings(self.runner, self.endpoint, self.language, self.runner_options)
        elif not _is_python(self.language):
            language_named(self.language)  # ValueError naming the languages run locally
        if self.runner == "local" and (self.concurrency or 0) > MOST_LOCAL_SLOTS:
            raise ValueError(
                f"concurrency: runner local has at most {MOST_LOCAL_SLOTS} sandbox slots "
                f"(got {self.concurrency}); up to {MOST_CONCURRENCY} is for a remote runner"
            )
        # a changed value only: a worker re-validates every field's value, defaults too
        if self.compile_timeout_s != COMPILE_LIMITS.wall_time_s and (
            self.runner != "local" or _is_python(self.language)
        ):
            raise ValueError(
                "compile_timeout_s limits a local build (c, cpp, java, javascript, go, rust); "
                "a remote runner takes its own (piston: runner_options.compile_timeout_s)"
            )
        if self.rust_crates is not None and (
            self.runner != "local" or _is_python(self.language)
            or language_named(self.language).name != "rust"
        ):
            raise ValueError("rust_crates needs language rust and runner local")
        if self.node_modules is not None and (
            self.runner != "local" or _is_python(self.language)
            or language_named(self.language).name != "javascript"
        ):
            raise ValueError("node_modules needs language javascript and runner local")
        if self.mode == "partial":
            if not _is_python(self.language):
                raise ValueError("mode partial needs language python (its compile check)")
            if not self.compiles_value <= self.runs_value <= self.pass_value:
                raise ValueError(
                    "partial values must rise: compiles_value <= runs_value <= pass_value"
                )
        return self


@dataclass
class _Tally:
    passed: int = 0
    failure: str | None = None
    error: str | None = None  # infrastructure failure: the score is an error
    queued_s: float = 0.0  # waited for the node's execution budget

    def count(self, result: SandboxResult) -> None:
        """Add ``result``'s wait for a budget slot (and request tokens) to the tally."""
        queued = result.metadata.get("queued_s")
        if isinstance(queued, (int, float)):
            self.queued_s += queued


class CodeExecution(Reward):
    """Run the answer's program against unit tests or stdin/stdout cases in the sandbox.

    Async: each sample is graded in a thread of a shared executor sized to the sandbox,
    so a batch keeps every sandbox slot busy (``grade`` is the blocking form). The
    sandbox enforces ``timeout_s`` per test; the reward's own ``timeout`` (600 s) is a
    backstop that also counts the wait for a free slot.
    """

    name: ClassVar[str] = "code_execution"
    Params: ClassVar[type[CodeExecutionParams]] = CodeExecutionParams
    mode: ClassVar[ExecutionMode] = ExecutionMode.ASYNC
    sandboxed: ClassVar[bool] = True
    timeout: ClassVar[float | None] = 600.0
    description: ClassVar[str] = (
        "Run the answer's code against assert tests or stdin/stdout cases in the sandbox"
    )

    params: CodeExecutionParams

    def score(self, sample: Sample) -> Score | asyncio.Future[Score]:
        """Grade ``sample``: on the shared executor when called from an event loop (async
        mode: the engine awaits the future), else right here (inline or process mode)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self.grade(sample)
        return loop.run_in_executor(self._executor(), self.grade, sample)

    def grade(self, sample: Sample) -> Score:
        """Grade one sample, blocking until its runs are done."""
        params = self.params
        try:
            suite = parse_reference(sample.reference)
        except ReferenceFormatError as error:
            return Score.error(str(error))
        answer = graded_text(sample.text)  # a program inside the reasoning is not the answer
        if answer is None:
            return Score.ok(0.0, "the reasoning never closes", passed=0, total=len(suite))
        code = extract_code(answer, params.extract, params.language)
        if code is None:
            return Score.ok(
                0.0,
                f"no {params.language} code found (extract: {params.extract})",
                passed=0,
                total=len(suite),
            )
        try:
            runner = self._runner_for(0)
        except SandboxUnavailableError as error:
            return Score.error(f"sandbox unavailable: {error}")
        except ValueError as error:  # a remote runner's missing API key
            return Score.error(str(error))
        first_case: SandboxResult | None = None
        stage_value = 0.0
        if params.mode == "partial":
            probe, compiled = self._probe(runner, code, suite)
            if probe.status is Status.SANDBOX_ERROR:
                return Score.error(f"sandbox error: {probe.error}")
            stage_value, verdict = self._stage(probe, compiled)
            if verdict is not None:
                return Score.ok(stage_value, verdict, passed=0, total=len(suite))
            if suite.cases:
                first_case = probe
        tally = (
            self._judge_tests(f"{code}\n\n{suite.setup}\n" if suite.setup else code, suite.tests)
            if suite.tests
            else self._judge_cases(runner, code, suite.cases, first_case)
        )
        if tally.error is not None:
            return Score.error(tally.error)
        return self._verdict(tally, len(suite), "tests" if suite.tests else "cases", stage_value)

    # -- running ----------------------------------------------------------------------

    def _executor(self) -> ThreadPoolExecutor:
        params = self.params
        if params.runner != "local":
            threads = params.concurrency or _REMOTE_CONCURRENCY
            return shared_call_threads("rewardkit-code-remote", threads)
        return shared_call_threads("rewardkit-code-sandbox", params.concurrency or default_slots())

    def _runner_for(self, n_tests: int) -> Runner:
        """A runner whose wall limit fits ``n_tests`` tests (0: one program run)."""
        params = self.params
        stop_early = params.mode == "binary"
        if params.runner != "local":
            return build_remote_runner(
                params.runner,
                endpoint=params.endpoint,
                language=params.language,
                run_timeout_s=params.timeout_s,
                memory_limit_mb=params.memory_mb,
                stop_on_first_failure=stop_early,
                slots=params.concurrency or _REMOTE_CONCURRENCY,
                requests_per_s=params.requests_per_s,
                api_key_env=params.api_key_env,
                options=params.runner_options,
            )
        if not _is_python(params.language):
            # each test is a whole test program: its limits are the test's own
            offered = [params.node_modules] if params.node_modules else []
            return CompiledRunner(
                shared_sandbox_pool(params.concurrency, offered),
                params.language,
                limits=_limits(params.timeout_s, params.timeout_s, params.memory_mb),
                compile_limits=_compile_limits(params.compile_timeout_s),
                test_timeout_s=params.timeout_s,
                stop_on_first_failure=stop_early,
                rust_crates=params.rust_crates,
                node_modules=params.node_modules,
            )
        wall = params.timeout_s if n_tests == 0 else params.timeout_s * n_tests
        limits = _limits(
            wall + (_BATCH_OVERHEAD_S if n_tests else 0.0), params.timeout_s, params.memory_mb
        )
        return PythonRunner(
            shared_sandbox_pool(params.concurrency),
            limits=limits,
            test_timeout_s=params.timeout_s,
            stop_on_first_failure=stop_early,
        )

    def _execute(
        self,
        runner: Runner,
        code: str,
        *,
        stdin: str | None = None,
        tests: Sequence[str] | None = None,
    ) -> SandboxResult:
        """One execution. Local runs hold a slot of the node's budget (remote runners hold
        their endpoint's themselves), so ranks with their own pools do not run G x batch
        programs at once; the wait is ``metadata["queued_s"]``."""
        if self.params.runner != "local":
            return runner.run(code, stdin=stdin, tests=tests)
        with local_budget(self.params.concurrency).acquire() as ticket:
            result = runner.run(code, stdin=stdin, tests=tests)
        metadata = {**result.metadata, "queued_s": round(ticket.queued_s, 6)}
        return dataclasses.replace(result, metadata=metadata)

    def _probe(self, runner: Runner, code: str, suite: TestSuite) -> tuple[SandboxResult, bool]:
        """Run the program once (on the first case's stdin): (result, did it compile)."""
        token = f"rewardkit-compiled-{secrets.token_hex(8)}"
        program = _STAGE_PROBE.format(source=code, token=token)
        stdin = suite.cases[0].stdin if suite.cases else None
        result = self._execute(runner, program, stdin=stdin)
        return result, token in result.stderr

    def _stage(self, probe: SandboxResult, compiled: bool) -> tuple[float, str | None]:
        """(value so far, final verdict or None when the tests should run)."""
        params = self.params
        if not compiled:
            return 0.0, f"does not compile: {_last_line(probe.stderr) or probe.status}"
        if probe.status is not Status.OK:
            why = _failure_reason(probe)
            return params.compiles_value, f"compiles but does not run clean: {why}"
        return params.runs_value, None

    def _judge_tests(self, code: str, tests: Sequence[str]) -> _Tally:
        tally = _Tally()
        for start in range(0, len(tests), self.params.batch_size or len(tests)):
            batch = list(tests[start : start + (self.params.batch_size or len(tests))])
            result = self._execute(self._runner_for(len(batch)), code, tests=batch)
            tally.count(result)
            if result.status in _INFRASTRUCTURE:
                tally.error = f"{result.status.replace('_', ' ')}: {result.error}"
                return tally
            outcomes = result.tests or ()
            tally.passed += sum(test.passed for test in outcomes)
            failed = next((test for test in outcomes if not test.passed), None)
            if failed is None and len(outcomes) < len(batch):
                tally.failure = f"test {start + len(outcomes)}: not run ({result.status})"
            elif failed is not None:
                what = failed.status or "not run"
                detail = f": {failed.error}" if failed.error else ""
                if failed.status is None and result.error:
                    detail = f" ({result.error})"
                tally.failure = f"test {start + failed.index} {what}{detail}"
            if tally.failure is not None:
                break
        return tally

    def _judge_cases(
        self,
        runner: Runner,
        code: str,
        cases: Sequence[IOCase],
        first: SandboxResult | None,
    ) -> _Tally:
        tally = _Tally()
        size = self.params.batch_size or len(cases)
        binary = self.params.mode == "binary"
        for start in range(0, len(cases), size):
            for index in range(start, min(start + size, len(cases))):
                case = cases[index]
                if index == 0 and first is not None:
                    result = first
                else:
                    result = self._execute(runner, code, stdin=case.stdin)
                tally.count(result)
                if result.status in _INFRASTRUCTURE:
                    tally.error = f"{result.status.replace('_', ' ')}: {result.error}"
                    return tally
                problem = self._case_problem(result, case)
                if problem is None:
                    tally.passed += 1
                    continue
                if tally.failure is None:
                    tally.failure = f"case {index} {problem}"
                if binary:
                    return tally
            if tally.failure is not None:
                break
        return tally

    def _case_problem(self, result: SandboxResult, case: IOCase) -> str | None:
        if result.status is not Status.OK:
            return _failure_reason(result)
        if _normalised(result.stdout, self.params.compare) == _normalised(
            case.stdout, self.params.compare
        ):
            return None
        return f"wrong output: expected {_clip(case.stdout)}, got {_clip(result.stdout)}"

    def _verdict(self, tally: _Tally, total: int, kind: str, stage_value: float) -> Score:
        params = self.params
        all_passed = tally.passed == total
        if params.mode == "binary":
            value = 1.0 if all_passed else 0.0
        elif params.mode == "pass_fraction":
            value = tally.passed / total
        else:
            value = params.pass_value if all_passed else stage_value
        if all_passed:
            reason = f"all {total} {kind} passed"
        else:
            reason = f"{tally.passed}/{total} {kind} passed; {tally.failure}"
        queued = round(tally.queued_s, 4)  # the queueing metric of the node's budget
        extra = {}
        if kind == "tests" and params.runner == "local" and _in_process(params.language):
            # the residue docs/sandbox.md ("Test verdicts") names: said where it is paid
            extra["verdict"] = _IN_PROCESS_VERDICT
            if all_passed:
                reason += f" ({_IN_PROCESS_VERDICT})"
        return Score.ok(value, reason, passed=tally.passed, total=total, queued_s=queued,
                        **extra)


#: statuses that are the machine's fault, not the program's: an error score, never a 0
_INFRASTRUCTURE = (Status.SANDBOX_ERROR, Status.TOOLCHAIN_MISSING)


def _is_python(language: str) -> bool:
    return language.lower() in ("python", "py", "python3")


@functools.lru_cache(maxsize=256)
def _limits(wall_time_s: float, cpu_time_s: float, memory_mb: int) -> SandboxLimits:
    """The sandbox limits of one run (made once per distinct value: runs are many)."""
    return SandboxLimits(
        wall_time_s=wall_time_s, cpu_time_s=cpu_time_s, memory_bytes=memory_mb * _MIB
    )


@functools.lru_cache(maxsize=64)
def _compile_limits(seconds: float) -> SandboxLimits:
    """The build task's limits with ``seconds`` of wall and CPU time."""
    return dataclasses.replace(COMPILE_LIMITS, wall_time_s=seconds, cpu_time_s=seconds)


def _normalised(text: str, compare: str) -> object:
    if compare == "exact":
        return text
    if compare == "whitespace":
        return text.split()
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _failure_reason(result: SandboxResult) -> str:
    """Why a run was not clean, for people: the status and its last error line."""
    if result.status is Status.COMPILE_ERROR:
        return f"{result.status}: {result.error or 'no detail'}"
    detail = _last_line(result.stderr) if result.status is Status.FAILED else None
    return f"{result.status}: {detail or result.error or 'no detail'}"


def _last_line(text: str) -> str | None:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else None


def _clip(text: str, limit: int = 60) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
