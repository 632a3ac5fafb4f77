"""Assert tests are judged in a process the candidate cannot reach or read.

The candidate's process holds neither the test's source nor its verdict: a program that
reads all of its own memory finds nothing of the test, and the judge runs as another uid.
"""

from __future__ import annotations

from rewardkit_sandbox import SandboxPool, Status
from rewardkit_sandbox.audit import processes_of_uids

# Reads every readable mapping of its own memory and answers with the number that follows
# "EXPECT=" and ends with ";" anywhere in it (its own source never holds that pattern).
MEMORY_READER = r'''
import ctypes, re

def _scan():
    # /proc/self/mem is closed to a non-dumpable task; ctypes reads its memory directly
    pattern = re.compile(rb"EX" rb"PECT=(\d+);")
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        span, perms = fields[:2]
        if not perms.startswith("r") or (len(fields) > 5 and fields[5].startswith("[v")):
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        found = pattern.search(ctypes.string_at(start, end - start))
        if found:
            return int(found.group(1))
    return 0

def answer():
    return _scan()
'''


def test_the_candidate_cannot_find_the_test_in_its_own_memory(contained: SandboxPool) -> None:
    # neither this test's source nor an earlier test's of the same task
    tests = ["pass  # EXPECT=4444;", "assert answer() in (4444, 7315)  # EXPECT=7315;"]
    result = contained.run(MEMORY_READER, tests=tests, test_timeout_s=20.0)
    assert result.tests is not None
    assert result.tests[1].status is Status.FAILED, result.tests[1]
    assert result.tests[1].error == "AssertionError"


def test_the_memory_reader_finds_what_its_own_process_holds(contained: SandboxPool) -> None:
    # the same reader, with the marker in the program: it works, so the test above means it
    program = MEMORY_READER + "\nMARK = 'EXPECT=7315;'\n"
    result = contained.run(program, tests=["assert answer() == 7315"], test_timeout_s=20.0)
    assert result.status is Status.OK, result.tests


def test_the_judge_runs_as_its_own_uid(contained: SandboxPool) -> None:
    result = contained.run("def f():\n    return 1", tests=["assert f() == 1"])
    assert result.status is Status.OK
    judges = processes_of_uids(set(contained.judge_uids))
    assert judges and not set(contained.judge_uids) & set(contained.slot_uids)


def test_a_test_that_hangs_gets_a_fresh_judge(contained: SandboxPool) -> None:
    hung = contained.run("def f():\n    return 1", tests=["while True:\n    pass"],
                         test_timeout_s=0.5)
    assert hung.tests is not None and hung.tests[0].status is Status.TIMEOUT
    after = contained.run("def f():\n    return 1", tests=["assert f() == 1"])
    assert after.status is Status.OK


def test_a_test_cannot_fork_in_the_judge(contained: SandboxPool) -> None:
    result = contained.run("x = 1", tests=["import os\nos.fork()"])
    assert result.tests is not None and result.tests[0].status is Status.FAILED
    assert "BlockingIOError" in (result.tests[0].error or "")
