"""The slot's forker (rewardkit_sandbox.zygote.forker): task children forked by a quiet
copy of the zygote, yet the zygote's children; the zygote forks them itself when the
forker is gone."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from rewardkit_sandbox import SandboxPool, Status
from rewardkit_sandbox.audit import processes_of_uids
from sandbox_audit import TEST_LIMITS

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the forker runs with per-slot uids only (root)"
)

PROGRAM = "def f(x):\n    return x + 1\n"


@pytest.fixture(autouse=True)
def forker_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forker is opt-in (docs/sandbox.md): these tests turn it on."""
    monkeypatch.setenv("REWARDKIT_SANDBOX_FORKER", "1")


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


def test_without_the_switch_there_is_no_forker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDKIT_SANDBOX_FORKER", "0")
    with SandboxPool(size=1, limits=TEST_LIMITS) as pool:
        (zygote,) = pool.zygote_pids()
        assert pool.run(PROGRAM, tests=["assert f(1) == 2"]).status is Status.OK
        assert _forkers(zygote) == []
        ran = pool.run("import os\nprint(os.getppid())")
        assert (ran.status, ran.stdout) == (Status.OK, f"{zygote}\n"), ran


REACH_THE_FORKER = """
import os, signal
pid = {pid}
seen = []
for sig in (signal.SIGKILL, signal.SIGSTOP, 0):
    try:
        os.kill(pid, sig)
        seen.append("sent")
    except OSError as error:
        seen.append(type(error).__name__)
for name in ("mem", "environ"):
    try:
        with open(f"/proc/{{pid}}/{{name}}", "rb") as handle:
            handle.read(1)
        seen.append("read")
    except OSError as error:
        seen.append(type(error).__name__)
print(" ".join(seen), flush=True)
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace", libc.ptrace(16, pid, 0, 0), flush=True)  # PTRACE_ATTACH
"""


def _state_and_tracer(pid: int) -> tuple[str, int]:
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return fields["State"].split()[0], int(fields["TracerPid"])


def test_a_candidate_cannot_signal_trace_or_read_the_forker_which_holds_no_task_secret(
    one_slot: SandboxPool,
) -> None:
    (zygote,) = one_slot.zygote_pids()
    (forker,) = _forkers(zygote)
    ran = one_slot.run(REACH_THE_FORKER.format(pid=forker))
    first = ran.stdout.splitlines()[0].split()
    assert first == ["PermissionError"] * 5, ran
    assert "ptrace 0" not in ran.stdout, ran  # refused (-1) or the filter ended it
    state, tracer = _state_and_tracer(forker)
    assert state not in ("T", "t", "Z", "X") and tracer == 0, (state, tracer)  # not stopped
    # nothing of a task: no tests' memory file, no pool socket, no judge's channel
    targets = [os.readlink(f"/proc/{forker}/fd/{fd}") for fd in os.listdir(f"/proc/{forker}/fd")]
    assert not [t for t in targets if t.startswith("memfd:")], targets
    assert len([t for t in targets if t.startswith("socket:")]) == 1, targets
    # still the one that forks the tasks
    assert one_slot.run(PROGRAM, tests=["assert f(1) == 2"]).status is Status.OK
    assert _forkers(zygote) == [forker]


def test_the_forker_dies_with_its_zygote(one_slot: SandboxPool) -> None:
    (zygote,) = one_slot.zygote_pids()
    (forker,) = _forkers(zygote)
    os.kill(zygote, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if _state_and_tracer(forker)[0] in ("Z", "X"):  # an unreaped zombie is dead
                break
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.02)
    else:
        raise AssertionError(f"the forker {forker} outlived its zygote {zygote}")
    ran = one_slot.run("import os\nprint(os.getppid())")  # a sandbox error, replaced
    ran = one_slot.run("import os\nprint(os.getppid())")
    (new_zygote,) = one_slot.zygote_pids()
    assert (ran.status, ran.stdout) == (Status.OK, f"{new_zygote}\n"), ran
    assert len(_forkers(new_zygote)) == 1
