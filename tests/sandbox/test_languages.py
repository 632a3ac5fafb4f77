"""Compiled languages in the sandbox: the build and the run are confined tasks of the pool.

C stands for the compiled languages here (it compiles fastest); JavaScript for the
runtimes whose memory limit is their heap. The golden cases of every language are in
tests/plugins/code/test_code_languages.py.
"""

from __future__ import annotations

import dataclasses
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxPool, Status
from rewardkit_sandbox.languages import (
    COMPILE_LIMITS,
    COMPILER_OUTPUT_BYTES,
    LANGUAGES,
    find_toolchain,
)

pytestmark = pytest.mark.skipif(
    find_toolchain(LANGUAGES["c"])[1] is not None, reason="no C compiler on the sandbox PATH"
)

PROBE = r"""
#define REPO_FILE "%s"
#include <stdio.h>
#include <unistd.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
int main(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET; a.sin_port = htons(53);
    inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
    int c = s < 0 ? -1 : connect(s, (struct sockaddr *)&a, sizeof a);
    printf("uid=%d net=%s repo=%s\n", (int)getuid(), c == 0 ? "open" : "closed",
           access(REPO_FILE, F_OK) == 0 ? "visible" : "hidden");
    return 0;
}
"""


@pytest.fixture
def runner(contained: SandboxPool) -> CompiledRunner:
    return CompiledRunner(contained, "c", cache=CompileCache())


def test_a_compiled_program_runs_as_the_slot_uid_without_network(
    runner: CompiledRunner, contained: SandboxPool
) -> None:
    result = runner.run(PROBE.replace("%s", str(Path.cwd() / "pyproject.toml"), 1))
    assert result.status is Status.OK, (result.error, result.stderr)
    uid = int(result.stdout.split()[0].split("=")[1])
    if contained.layers["uid_isolation"].active:
        assert uid in contained.slot_uids
    assert "net=closed" in result.stdout
    if contained.layers["mount_namespace"].active:
        assert "repo=hidden" in result.stdout


def test_runtime_failures_keep_the_run_statuses(runner: CompiledRunner) -> None:
    crash = runner.run("int main(void){ volatile int *p = 0; return *p; }")
    loop = runner.run("int main(void){ for(;;); }")
    failed = runner.run("int main(void){ return 3; }")
    assert (crash.status, loop.status, failed.status) == (
        Status.CRASHED, Status.TIMEOUT, Status.FAILED)


def test_a_compile_error_is_its_own_status_with_capped_compiler_output(
    runner: CompiledRunner,
) -> None:
    flood = "int main(void){\n" + "undeclared_name_here;\n" * 4000 + "}\n"
    result = runner.run(flood)
    assert result.status is Status.COMPILE_ERROR
    assert "undeclared_name_here" in (result.error or "")
    assert 0 < len(result.stderr) <= COMPILER_OUTPUT_BYTES


def test_a_compile_timeout_is_its_own_status(contained: SandboxPool) -> None:
    limits = dataclasses.replace(COMPILE_LIMITS, wall_time_s=0.3)
    slow = CompiledRunner(contained, "c", compile_limits=limits, cache=CompileCache())
    table = "int t[] = {" + ",".join(str(i) for i in range(300000)) + "};\n"
    result = slow.run(table + "int main(void){ return t[7] - 7; }")
    assert result.status is Status.COMPILE_TIMEOUT, (result.status, result.error)


def test_a_compile_timeout_is_cached_for_every_run_of_the_same_source(
    contained: SandboxPool,
) -> None:
    # issue 37.7: a timed-out build was compiled again for each case and each identical
    # completion (each waited for the compile before it, then started its own)
    limits = dataclasses.replace(COMPILE_LIMITS, wall_time_s=0.3)
    slow = CompiledRunner(contained, "c", compile_limits=limits, cache=CompileCache())
    table = "int t[] = {" + ",".join(str(i) for i in range(300000)) + "};\n"
    program = table + "int main(void){ return t[7] - 7; }"
    with ThreadPoolExecutor(3) as threads:
        results = list(threads.map(lambda stdin: slow.run(program, stdin=stdin), "123"))
    assert [result.status for result in results] == [Status.COMPILE_TIMEOUT] * 3
    assert sorted(result.metadata["compile_cached"] for result in results) == [False, True, True]
    assert (slow.cache.misses, slow.cache.hits) == (1, 2)


def test_a_build_is_compiled_once_per_source(runner: CompiledRunner) -> None:
    program = '#include <stdio.h>\nint main(void){int n; scanf("%d",&n); printf("%d\\n", 2*n);}'
    first = runner.run(program, stdin="4\n")
    second = runner.run(program, stdin="5\n")
    assert (first.stdout, second.stdout) == ("8\n", "10\n")
    assert (first.metadata["compile_cached"], second.metadata["compile_cached"]) == (False, True)
    assert (runner.cache.misses, runner.cache.hits) == (1, 1)
    broken = "int main(void){ return }"
    assert runner.run(broken).status is Status.COMPILE_ERROR
    assert runner.run(broken).metadata["compile_cached"] is True  # errors are cached too


def test_a_test_program_that_exits_early_fails(runner: CompiledRunner) -> None:
    candidate = "#include <stdlib.h>\nint twice(int x){ exit(0); }"
    tests = "#include <assert.h>\nint main(void){ assert(twice(2) == 4); return 0; }"
    result = runner.run(candidate, tests=[tests])
    assert result.status is Status.FAILED
    assert "did not finish" in (result.error or "")
    honest = runner.run("int twice(int x){ return 2 * x; }", tests=[tests])
    assert honest.status is Status.OK and honest.tests_passed == 1


@pytest.mark.skipif(find_toolchain(LANGUAGES["javascript"])[1] is not None, reason="no node")
def test_a_heap_limited_runtime_gets_its_memory_limit_as_its_heap(contained: SandboxPool) -> None:
    node = CompiledRunner(contained, "javascript", cache=CompileCache())
    limits = node.run("console.log(require('fs').readFileSync('/proc/self/limits', 'utf8'))")
    assert limits.status is Status.OK, (limits.error, limits.stderr[-300:])
    data = next(line for line in limits.stdout.splitlines() if line.startswith("Max data size"))
    assert str(contained.limits.memory_bytes) in data
    hog = node.run("const a = []; for (;;) a.push(new Array(1e6).fill(1.5));")
    assert hog.status is not Status.OK


def test_the_languages_example_of_the_docs_runs(capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).parents[2] / "docs" / "sandbox.md").read_text()
    section = page[page.index("## Languages"):]
    snippet = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert snippet is not None
    exec(compile(snippet.group(1), "docs/sandbox.md", "exec"), {})
    assert capsys.readouterr().out.split() == ["hi", "ok", "1", "False"]
