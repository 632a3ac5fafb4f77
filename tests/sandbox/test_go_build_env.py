"""A Go build's own environment (``GO_BUILD_ENV``, issue 42 item 5): the go command,
compiler and linker run with it; the program they build runs with Go's defaults."""

from __future__ import annotations

import dataclasses

import pytest
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxPool
from rewardkit_sandbox.languages import LANGUAGES, find_toolchain
from rewardkit_sandbox.languages.runner import GO_BUILD_ENV

pytestmark = pytest.mark.skipif(
    find_toolchain(LANGUAGES["go"])[1] is not None, reason="no go on the sandbox PATH"
)

#: prints what its process was given: the variables and the collector's percentage
PROGRAM = """package main
import ("fmt"; "os"; "runtime/debug")
func main() {
	fmt.Printf("GOGC=%q GOMEMLIMIT=%q percent=%d\\n", os.Getenv("GOGC"),
		os.Getenv("GOMEMLIMIT"), debug.SetGCPercent(-1))
}
"""


@pytest.fixture
def runner(contained: SandboxPool) -> CompiledRunner:
    # the shared pool's limits are a Python task's: a Go binary is 1.3 MB
    limits = dataclasses.replace(contained.limits, wall_time_s=10.0, cpu_time_s=10.0,
                                 memory_bytes=1 << 30, file_size_bytes=64 << 20)
    return CompiledRunner(contained, "go", limits=limits, cache=CompileCache())


def test_the_program_runs_with_gos_defaults(runner: CompiledRunner) -> None:
    result = runner.run(PROGRAM)
    assert result.ok, result
    assert result.stdout.strip() == 'GOGC="" GOMEMLIMIT="" percent=100'


def test_the_build_steps_run_with_the_build_environment(runner: CompiledRunner) -> None:
    plan = runner._program_plan(PROGRAM)
    shell = {"argv": ["/bin/sh", "-c", 'echo "GOGC=$GOGC GOMEMLIMIT=$GOMEMLIMIT" && '
                      'cp /bin/true prog'], "name": "env"}
    build = runner._build(dataclasses.replace(plan, steps=[shell]))
    assert build.ok, build
    expected = f"GOGC={GO_BUILD_ENV['GOGC']} GOMEMLIMIT={GO_BUILD_ENV['GOMEMLIMIT']}"
    assert build.log.strip() == expected
