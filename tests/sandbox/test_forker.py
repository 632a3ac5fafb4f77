"""The slot's forker (rewardkit_sandbox.zygote.forker): task children forked by a quiet
copy of the zygote, yet the zygote's children; the zygote forks them itself when the
forker is gone."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from rewardkit_sandbox import SandboxPool, Status
from rewardkit_sandbox.audit import processes_of_uids
from sandbox_audit import TEST_LIMITS

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the forker runs with per-slot uids only (root)"
)

PROGRAM = "def f(x):\n    return x + 1\n"


@pytest.fixture
def one_slot() -> Iterator[SandboxPool]:
    with SandboxPool(size=1, limits=TEST_LIMITS) as pool:
        yield pool
        assert processes_of_uids(set(pool.slot_uids)) == []


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        return [int(child) for child in listing.read().split()]


def _uid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    raise AssertionError(f"no Uid line for {pid}")


def _forkers(zygote: int) -> list[int]:
    """The zygote's live children that run as its own uid (the judge has its own)."""
    return [child for child in _children(zygote) if _uid(child) == _uid(zygote)]


def _minor_faults(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[7])


def test_task_children_are_the_zygotes_but_the_zygote_does_not_fork_them(
    one_slot: SandboxPool,
) -> None:
    (zygote,) = one_slot.zygote_pids()
    ran = one_slot.run("import os\nprint(os.getppid())")
    assert (ran.status, ran.stdout) == (Status.OK, f"{zygote}\n")
    tested = one_slot.run(PROGRAM, tests=["import os\nassert f(1) == 2"])
    assert tested.status is Status.OK, tested
    assert len(_forkers(zygote)) == 1
    # A zygote that forks writes ~250 write-protected pages a task (each a copy-on-write
    # fault); one that does not, almost none.
    before = _minor_faults(zygote)
    for _ in range(20):
        assert one_slot.run(PROGRAM, tests=["assert f(1) == 2"]).status is Status.OK
    assert (_minor_faults(zygote) - before) / 20 < 50


def test_a_task_child_has_its_own_thread_id_in_libc(one_slot: SandboxPool) -> None:
    # raise() signals the thread libc has cached: a clone that left the forker's there
    # would make it fail with ESRCH instead of ending the program
    ran = one_slot.run("import signal\nsignal.raise_signal(signal.SIGTERM)\nprint('alive')")
    assert (ran.signal, ran.stdout) == (signal.SIGTERM, ""), ran


def test_without_its_forker_the_zygote_forks_its_tasks_itself(one_slot: SandboxPool) -> None:
    (zygote,) = one_slot.zygote_pids()
    assert one_slot.run(PROGRAM, tests=["assert f(1) == 2"]).status is Status.OK
    (forker,) = _forkers(zygote)
    os.kill(forker, signal.SIGKILL)
    for _ in range(3):
        ran = one_slot.run("import os\nprint(os.getppid())")
        assert (ran.status, ran.stdout) == (Status.OK, f"{zygote}\n"), ran
        tested = one_slot.run(PROGRAM, tests=["assert f(1) == 2", "assert f(1) == 3"])
        assert [t.status for t in tested.tests or []] == [Status.OK, Status.FAILED], tested
    assert _forkers(zygote) == []
    assert one_slot.zygote_pids() == [zygote]


def test_a_program_too_big_for_the_forkers_message_is_forked_by_the_zygote(
    one_slot: SandboxPool,
) -> None:
    (zygote,) = one_slot.zygote_pids()
    big = "# " + "x" * 70_000 + "\nimport os\nprint(os.getppid())\n"
    ran = one_slot.run(big)
    assert (ran.status, ran.stdout) == (Status.OK, f"{zygote}\n"), ran
    tested = one_slot.run(big + PROGRAM, tests=["assert f(1) == 2", "assert f(1) == 3"])
    assert [t.status for t in tested.tests or []] == [Status.OK, Status.FAILED], tested
    assert len(_forkers(zygote)) == 1  # still there for the next small one
