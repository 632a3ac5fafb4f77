"""``repo_tests``: the model's patch makes a repository's tests pass (SWE-bench fields).

The reference carries ``repo`` (a local git repository, or a ``git bundle`` file named
``*.bundle``), ``base_commit``, ``test_patch``,
``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (pytest node ids, a list or a JSON list) and an
optional ``test_command`` (extra pytest arguments, e.g. ``-x``; the test files and
reporter are always ours). The completion carries the patch: a unified diff, in a
```diff block or bare. See docs/agentic.md for what it reads and the tamper rules.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from importlib import resources
from typing import Any, ClassVar, Literal

import pytest
from pydantic import Field
from rewardkit_sandbox import SandboxLimits

from rewardkit import ExecutionMode, Params, Reward, Sample, Score
from rewardkit_repo import go_runner
from rewardkit_repo.sandboxed import run_driver
from rewardkit_repo.workspace import TaskError, Workspace, extract_patch, is_protected, prepare

#: the folder pytest (and pluggy, iniconfig, packaging) is imported from in the sandbox
_PYTEST_PATH = os.path.dirname(os.path.dirname(os.path.abspath(pytest.__file__)))
#: the interpreter that runs pytest there (the real file: a virtualenv's link is hidden)
_PYTHON = os.path.realpath(sys.executable)


class RepoTestsParams(Params):
    partial: bool = Field(False, description="pay the share of FAIL_TO_PASS and PASS_TO_PASS "
                                             "tests that passed instead of all-or-nothing")
    time_budget_s: float = Field(60.0, gt=0, le=3600,
                                 description="wall and CPU seconds for the whole test run")
    memory_mb: int = Field(1024, ge=128, description="memory of the test run, MiB")
    concurrency: int | None = Field(None, ge=1, le=128,
                                    description="sandbox slots (default: the CPU count)")
    runner: Literal["pytest", "go"] = Field(
        "pytest", description="the test runner: pytest node ids, or go (Go test names, "
                              "TestX or pkg/path.TestX, standard library only)")


def _ids(reference: Mapping[str, Any], key: str) -> list[str]:
    value = reference.get(key) or []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise TaskError(f"`{key}` is neither a list nor a JSON list") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TaskError(f"`{key}` must be a list of pytest node ids")
    return value


def _row(reference: Mapping[str, Any]) -> str:
    name = reference.get("instance_id")
    if name:
        return f"row {name!r}"
    return f"row of {reference.get('repo')!r}@{reference.get('base_commit')!r}"


class RepoTests(Reward):
    """Every FAIL_TO_PASS and PASS_TO_PASS test passes after the model's patch.

    Status error for a row without a repository or commit, a test patch that does not
    apply, or a test id that names no test; 0 with the reason for a completion without a
    diff or a patch that does not apply; timeout for a run past its budget. Details:
    ``tests`` (each id's outcome), ``discarded`` (test and configuration files of the
    patch that were put back), ``tampered`` (what the reporter saw replaced).
    Example: the honest fix of a one-line bug -> 1.0; ``sys.exit(0)`` at import -> 0.0.
    """

    name: ClassVar[str] = "repo_tests"
    Params: ClassVar[type[Params]] = RepoTestsParams
    mode: ClassVar[ExecutionMode] = ExecutionMode.INLINE

    def score(self, sample: Sample) -> Score:
        params: RepoTestsParams = self.params  # type: ignore[assignment]
        reference = sample.reference
        if not isinstance(reference, Mapping):
            return Score.error("repo_tests needs a reference with repo, base_commit, "
                               "FAIL_TO_PASS and PASS_TO_PASS")
        try:
            wanted = _ids(reference, "FAIL_TO_PASS") + _ids(reference, "PASS_TO_PASS")
            if not wanted:
                raise TaskError("no FAIL_TO_PASS or PASS_TO_PASS test ids")
            patch = extract_patch(sample.text)
            if patch is None:
                return Score.ok(0.0, "the completion holds no unified diff")
            prepared = prepare(str(reference.get("repo") or ""),
                               str(reference.get("base_commit") or ""), patch,
                               str(reference.get("test_patch") or ""),
                               go_runner.is_protected if params.runner == "go"
                               else is_protected)
            if isinstance(prepared, str):
                return Score.ok(0.0, f"the patch does not apply: {prepared}")
            try:
                if params.runner == "go":
                    return go_runner.run(prepared, wanted, params)
                return self._run(prepared, wanted, reference, params)
            finally:
                prepared.close()
        except TaskError as error:
            return Score.error(f"{_row(reference)}: {error}")

    def _run(self, workspace: Workspace, wanted: list[str], reference: Mapping[str, Any],
             params: RepoTestsParams) -> Score:
        for test_id in wanted:
            path = test_id.split("::")[0]
            if not os.path.isfile(os.path.join(workspace.folder, path)):
                raise TaskError(f"test id {test_id!r} names no file of the repository")
        files = {}
        for relative in [*workspace.candidate_files, *workspace.test_files, *_others(workspace)]:
            full = os.path.join(workspace.folder, relative)
            if os.path.isfile(full) and not os.path.islink(full):
                files[relative] = workspace.payload(relative)
            elif os.path.islink(full):
                # a link of the base tree (the patch's own were removed) to a file of the
                # tree goes over as that file's bytes; one that leads out is dropped
                target = os.path.realpath(full)
                inside = os.path.relpath(target, os.path.realpath(workspace.folder))
                if not inside.startswith("..") and os.path.isfile(target):
                    files[relative] = workspace.payload(inside)
        extra = shlex.split(str(reference.get("test_command") or ""))
        header = {
            "files": files,
            "paths": [_PYTEST_PATH],
            "python": _PYTHON,
            "reporter": resources.files("rewardkit_repo").joinpath("_reporter.py").read_text(),
            "wanted": wanted,
            "test_files": workspace.test_files,
            "candidate_files": workspace.candidate_files,
            "args": [*_options(extra), *sorted({test_id.split("::")[0] for test_id in wanted})],
        }
        driver = resources.files("rewardkit_repo").joinpath("_driver.py").read_text()
        limits = SandboxLimits(wall_time_s=params.time_budget_s, cpu_time_s=params.time_budget_s,
                               memory_bytes=params.memory_mb * 1024 * 1024,
                               file_size_bytes=64 * 1024 * 1024, open_files=256,
                               disk_bytes=256 * 1024 * 1024)
        run = run_driver(driver, header, limits, (_PYTEST_PATH, os.path.dirname(_PYTHON)),
                         params.concurrency, params.time_budget_s, "sandbox driver")
        if isinstance(run, Score):
            return run
        return _verdict(run, wanted, workspace, params)


#: pytest options whose value is the next argument
_VALUED = frozenset({"-k", "-m", "--tb", "-W", "-o", "--deselect", "--maxfail", "-n"})


def _options(command: list[str]) -> list[str]:
    """The pytest options of a row's ``test_command`` (``pytest -rA --tb=short``): the
    program named first is dropped, and so are ``-p NAME`` (plugins are ours to load) and
    the folders or files it names (the ids' files are the ones run)."""
    while command and not command[0].startswith("-"):
        command = command[1:]
        if command[:2] == ["-m", "pytest"]:
            command = command[2:]
    options: list[str] = []
    skip = keep = False
    for arg in command:
        if skip or keep:
            if keep:
                options.append(arg)
            skip = keep = False
        elif arg == "-p":
            skip = True
        elif arg.startswith("-") and not arg.startswith("-p"):
            options.append(arg)
            keep = arg in _VALUED
    return options


def _others(workspace: Workspace) -> list[str]:
    """The workspace's files that are neither the candidate's nor tests."""
    known = set(workspace.candidate_files) | set(workspace.test_files)
    found = []
    for root, _, names in os.walk(workspace.folder):
        for name in names:
            relative = os.path.relpath(os.path.join(root, name), workspace.folder)
            if relative not in known:
                found.append(relative)
    return found


def _verdict(run: Mapping[str, Any], wanted: list[str], workspace: Workspace,
             params: RepoTestsParams) -> Score:
    token = run["token"]
    outcomes: dict[str, str] = {}
    collected: list[str] | None = None
    broken: list[str] = []
    tampered: list[str] = []
    ended = False
    for line in run["lines"]:
        try:
            record = json.loads(line)
        except ValueError:
            tampered.append("a line that is not JSON on the result channel")
            continue
        if not isinstance(record, dict) or record.get("token") != token:
            tampered.append("a line without the run's token on the result channel")
        elif ended:
            tampered.append("a line after the run's end")
        elif record.get("kind") == "tampered":
            tampered.append(f"replaced: {', '.join(map(str, record.get('what', [])))}")
        elif record.get("kind") == "collect_error":
            broken.append(str(record.get("nodeid")))
        elif record.get("kind") == "collected" and collected is None:
            collected = list(record.get("ids") or [])
        elif record.get("kind") == "test" and record.get("nodeid") not in outcomes:
            outcomes[str(record["nodeid"])] = str(record.get("outcome"))
        elif record.get("kind") == "end":
            ended = True
        else:
            tampered.append(f"an unexpected record {str(record.get('kind'))[:40]!r}")
    details: dict[str, Any] = {"discarded": workspace.discarded, "log": run.get("log", "")[-1500:]}
    if tampered:
        details["tampered"] = tampered[:5]
        details["tests"] = {test_id: "tampered" for test_id in wanted}
        return Score.ok(0.0, f"the test run was tampered with: {tampered[0]}", **details)
    if collected is not None and not broken:
        unknown = [test_id for test_id in wanted if test_id not in collected]
        if unknown:
            raise TaskError(f"test id {unknown[0]!r} names no test of the repository")
    tests = {test_id: outcomes.get(test_id, "not run") for test_id in wanted}
    details["tests"] = tests
    if not ended:
        details["exit"] = run.get("exit")
    passed = sum(outcome == "passed" for outcome in tests.values())
    value = passed / len(wanted) if params.partial else float(passed == len(wanted))
    if passed == len(wanted) and not ended:
        return Score.ok(0.0, "pytest never finished its session", **details)
    failing = [test_id for test_id, outcome in tests.items() if outcome != "passed"]
    reason = (f"{passed}/{len(wanted)} tests passed" +
              (f"; first not passing: {failing[0]} ({tests[failing[0]]})" if failing else ""))
    return Score.ok(value, reason, **details)
