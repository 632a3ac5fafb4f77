"""A task's memory limit counts all of its memory, in every language (issue 37, items 5, 6, 15).

Where the machine has a memory cgroup the pool can use (cgroup v2 with the memory
controller delegated, or a writable cgroup v1 memory hierarchy, as root here), each slot's
tasks run in their own cgroup whose limit is the task's ``memory_bytes``: shared mappings,
tmpfs files and every process of the task count. Elsewhere the runtimes that reserve far
more address space than they use (JVM, V8, Go) get an address-space limit of their limit
plus what the runtime itself reserves, not 16 GiB.
"""

from __future__ import annotations

import dataclasses

import pytest
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxLimits, SandboxPool, Status
from rewardkit_sandbox.languages import LANGUAGES, RUNTIME_RESERVE_BYTES, find_toolchain
from sandbox_audit import TEST_LIMITS

_MIB = 1024 * 1024
#: room for a Go binary (RLIMIT_FSIZE) and a JVM's start
RUN_LIMITS = dataclasses.replace(
    TEST_LIMITS, file_size_bytes=32 * _MIB, wall_time_s=10.0, cpu_time_s=10.0
)

GO_SHARED_GIB = """
package main

import (
    "fmt"
    "syscall"
)

func main() {
    size := 1 << 30
    data, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE,
        syscall.MAP_SHARED|syscall.MAP_ANON)
    if err != nil {
        fmt.Println("refused:", err)
        return
    }
    for i := 0; i < size; i += 4096 {
        data[i] = 1
    }
    fmt.Println("touched 1 GiB")
}
"""

# Four processes, each under the per-process address-space limit, 640 MiB together.
C_FOUR_CHILDREN = r"""
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    size_t size = 160u << 20;
    for (int i = 0; i < 4; i++) {
        if (fork() == 0) {
            char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) _exit(2);
            memset(p, 1, size);
            sleep(1);
            _exit(0);
        }
    }
    int status, survived = 0;
    while (wait(&status) > 0)
        survived += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("%d of 4 children held 160 MiB\n", survived);
    return survived == 4 ? 0 : 1;
}
"""


def _needs(language: str) -> pytest.MarkDecorator:
    problem = find_toolchain(LANGUAGES[language])[1]
    return pytest.mark.skipif(problem is not None, reason=problem or "")


@_needs("go")
def test_a_go_program_cannot_map_shared_memory_past_its_limit(contained: SandboxPool) -> None:
    # RLIMIT_DATA does not count MAP_SHARED; it used to run under a 16 GiB address space.
    go = CompiledRunner(contained, "go", limits=RUN_LIMITS, cache=CompileCache())
    result = go.run(GO_SHARED_GIB)
    assert "touched" not in result.stdout, (result.status, result.stdout)
    assert result.status in (Status.OK, Status.MEMORY, Status.CRASHED), result.error


def test_the_pool_says_how_it_counts_memory(contained: SandboxPool) -> None:
    layer = contained.layers["memory_cgroup"]
    if layer.active:
        assert "cgroup" in layer.detail and "memory" in layer.detail
    else:
        assert "address space" in layer.detail


def test_a_task_of_several_processes_is_counted_as_one(contained: SandboxPool) -> None:
    if not contained.layers["memory_cgroup"].active:
        pytest.skip(f"no memory cgroup here: {contained.layers['memory_cgroup'].detail}")
    c = CompiledRunner(contained, "c", limits=RUN_LIMITS, cache=CompileCache())
    result = c.run(C_FOUR_CHILDREN)
    # each child is under the 256 MiB address-space limit; the four are not
    assert result.status is Status.MEMORY, (result.status, result.error, result.stdout)


@pytest.mark.parametrize("language", ["go", "javascript", "java"])
def test_a_reserving_runtime_gets_an_address_space_close_to_its_need(
    contained: SandboxPool, language: str
) -> None:
    if find_toolchain(LANGUAGES[language])[1] is not None:
        pytest.skip(f"no {language} toolchain")
    runner = CompiledRunner(contained, language, limits=RUN_LIMITS, cache=CompileCache())
    reader = {
        "go": 'package main\nimport ("fmt"; "os")\n'
        'func main() { b, _ := os.ReadFile("/proc/self/limits"); fmt.Print(string(b)) }\n',
        "javascript": "console.log(require('fs').readFileSync('/proc/self/limits', 'utf8'))",
        "java": "import java.nio.file.*;\npublic class Main { public static void main(String[] a)"
        ' throws Exception { System.out.print(Files.readString(Path.of("/proc/self/limits")));'
        " } }",
    }[language]
    result = runner.run(reader)
    assert result.status is Status.OK, (result.error, result.stderr[-300:])
    line = next(row for row in result.stdout.splitlines() if row.startswith("Max address"))
    ceiling = int(line.split()[3])
    assert ceiling == RUN_LIMITS.memory_bytes + RUNTIME_RESERVE_BYTES[language]
    assert ceiling < 4 * 1024 * _MIB


@_needs("java")
@pytest.mark.parametrize("memory_mb", [128, 256])
def test_java_starts_under_common_dataset_limits(contained: SandboxPool, memory_mb: int) -> None:
    limits = dataclasses.replace(RUN_LIMITS, memory_bytes=memory_mb * _MIB)
    java = CompiledRunner(contained, "java", limits=limits, cache=CompileCache())
    hello = ('public class Main { public static void main(String[] a) {'
             ' System.out.println("hi"); } }')
    result = java.run(hello)
    assert (result.status, result.stdout) == (Status.OK, "hi\n"), (result.error, result.stderr)
    deep = ("public class Main { static int d(int n) { return n == 0 ? 0 : 1 + d(n - 1); }\n"
            "public static void main(String[] a) { System.out.println(d(100000)); } }")
    recursion = java.run(deep)  # the main thread keeps its 16 MiB stack
    assert (recursion.status, recursion.stdout) == (Status.OK, "100000\n"), recursion.stderr[-300:]


@_needs("java")
def test_java_under_a_limit_it_cannot_start_in_is_an_error_not_a_zero(
    contained: SandboxPool,
) -> None:
    limits = dataclasses.replace(RUN_LIMITS, memory_bytes=48 * _MIB)
    java = CompiledRunner(contained, "java", limits=limits, cache=CompileCache())
    result = java.run('public class Main { public static void main(String[] a) {} }')
    assert result.status is Status.SANDBOX_ERROR
    assert "java needs at least" in (result.error or "")


def test_tasks_are_the_first_the_oom_killer_takes(contained: SandboxPool) -> None:
    result = contained.run("print(open('/proc/self/oom_score_adj').read())")
    assert (result.status, result.stdout.strip()) == (Status.OK, "1000")
    for pid in contained.zygote_pids():
        with open(f"/proc/{pid}/oom_score_adj") as handle:
            assert int(handle.read()) >= 500


def test_a_pool_whose_limits_change_per_task_applies_each(contained: SandboxPool) -> None:
    source = "x = bytearray(150 << 20)\nprint(len(x))"
    small = SandboxLimits(**{**vars(TEST_LIMITS), "memory_bytes": 64 * _MIB})
    assert contained.run(source, limits=small).status is Status.MEMORY
    big = contained.run(source)
    assert (big.status, big.stdout) == (Status.OK, f"{150 << 20}\n"), big.error
