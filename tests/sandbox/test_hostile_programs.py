"""Hostile programs are contained: right status, nothing survives, the pool keeps serving.

Every test uses the ``contained`` fixture, which afterwards checks the process table for
processes of the slot uids, the zygotes' private /tmp for files, and that each slot
still runs a normal program.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rewardkit_sandbox import SandboxPool, SandboxResult, SandboxTask, Status
from rewardkit_sandbox.audit import processes_of_uids
from sandbox_audit import TEST_LIMITS


def run(pool: SandboxPool, source: str, **kwargs: object) -> SandboxResult:
    return pool.run(textwrap.dedent(source), **kwargs)  # type: ignore[arg-type]


def test_fork_bomb_is_capped_and_spares_the_other_slot(contained: SandboxPool) -> None:
    bomb = """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """
    honest = "import time\ntime.sleep(0.5)\nprint('fine')"
    bombed, spared = contained.run_many([SandboxTask(textwrap.dedent(bomb)), SandboxTask(honest)])
    assert bombed.status is Status.TIMEOUT
    assert (spared.status, spared.stdout) == (Status.OK, "fine\n")


def test_memory_bomb_is_a_memory_status(contained: SandboxPool) -> None:
    result = run(contained, "chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))")
    assert result.status is Status.MEMORY


def test_one_huge_allocation_is_a_memory_status(contained: SandboxPool) -> None:
    assert run(contained, "x = bytearray(1 << 34)").status is Status.MEMORY


def test_infinite_loop_hits_the_cpu_limit(contained: SandboxPool) -> None:
    result = run(contained, "while True:\n    pass")
    assert result.status is Status.TIMEOUT
    assert result.wall_time_s < TEST_LIMITS.wall_time_s + 1


def test_long_sleep_hits_the_wall_limit(contained: SandboxPool) -> None:
    result = run(contained, "import time\ntime.sleep(100)")
    assert result.status is Status.TIMEOUT
    assert TEST_LIMITS.wall_time_s <= result.wall_time_s < TEST_LIMITS.wall_time_s + 1


def test_ignoring_sigterm_does_not_help(contained: SandboxPool) -> None:
    source = """
        import signal, time
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):
            signal.signal(number, signal.SIG_IGN)
        while True:
            time.sleep(0.01)
    """
    assert run(contained, source).status is Status.TIMEOUT


def test_output_flood_is_cut_at_the_cap(contained: SandboxPool) -> None:
    result = run(contained, "while True:\n    print('x' * 1000)")
    assert result.status is Status.OUTPUT_LIMIT
    assert result.stdout_truncated
    assert len(result.stdout) == TEST_LIMITS.stdout_bytes


def test_stderr_flood_is_cut_at_the_cap(contained: SandboxPool) -> None:
    result = run(contained, "import sys\nwhile True:\n    sys.stderr.write('e' * 4096)")
    assert result.status is Status.OUTPUT_LIMIT
    assert result.stderr_truncated


def test_disk_fill_stops_at_the_quota_and_is_cleaned_up(contained: SandboxPool) -> None:
    source = """
        import os
        written = 0
        try:
            for index in range(1000):
                with open(f"fill-{index}", "wb") as handle:
                    handle.write(b"x" * (512 * 1024))
                written += 512 * 1024
        except OSError as error:
            print(type(error).__name__, error.errno, written)
    """
    result = run(contained, source)
    name, errno_value, written = result.stdout.split()
    assert (name, int(errno_value)) == ("OSError", 28)  # ENOSPC
    assert int(written) <= TEST_LIMITS.disk_bytes


def test_one_file_over_the_size_limit_fails(contained: SandboxPool) -> None:
    result = run(contained, "open('big', 'wb').write(b'x' * (2 * 1024 * 1024))")
    assert result.status is Status.FAILED
    assert "File too large" in result.stderr


def test_files_left_in_shared_scratch_dirs_are_removed(contained: SandboxPool) -> None:
    run(contained, "for d in ('/tmp', '/dev/shm', '/var/tmp'):\n    open(f'{d}/left', 'w')")
    # the ``contained`` fixture asserts the zygotes' scratch dirs are empty again


@pytest.fixture
def listening_socket() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    yield server.getsockname()[1]
    server.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "1.1.1.1", "8.8.8.8"])
def test_network_connections_fail(contained: SandboxPool, listening_socket: int, host: str) -> None:
    port = listening_socket if host == "127.0.0.1" else 53
    source = f"""
        import socket
        try:
            socket.create_connection(({host!r}, {port}), timeout=1).close()
            print("connected")
        except OSError as error:
            print("blocked", type(error).__name__)
    """
    result = run(contained, source)
    assert result.stdout.startswith("blocked"), result.stdout + result.stderr


def test_secrets_of_the_parent_environment_are_not_visible() -> None:
    os.environ["AWS_SECRET_ACCESS_KEY"] = "do-not-leak-42"
    os.environ["HF_TOKEN"] = "hf_do-not-leak"
    try:
        with SandboxPool(size=1, limits=TEST_LIMITS) as pool:
            source = """
                import os
                print(sorted(os.environ))
                for pid in os.listdir('/proc'):
                    try:
                        print(open(f'/proc/{pid}/environ', 'rb').read())
                    except OSError:
                        pass
            """
            result = run(pool, source)
    finally:
        del os.environ["AWS_SECRET_ACCESS_KEY"], os.environ["HF_TOKEN"]
    assert result.status is Status.OK
    assert "AWS_SECRET_ACCESS_KEY" not in result.stdout
    assert "do-not-leak" not in result.stdout


@pytest.mark.parametrize(
    "path",
    ["/etc/shadow", "/root/.bashrc", "/root/.ssh", str(Path(__file__)), str(Path(__file__).parent)],
)
def test_files_outside_the_work_dir_are_unreadable(contained: SandboxPool, path: str) -> None:
    source = f"""
        import os
        path = {path!r}
        try:
            print(os.listdir(path) if os.path.isdir(path) else open(path).read())
        except OSError as error:
            print("blocked", type(error).__name__)
    """
    result = run(contained, source)
    assert result.stdout.startswith(("blocked", "[]")), result.stdout[:200]


def test_home_of_root_shows_at_most_the_way_to_the_interpreter(contained: SandboxPool) -> None:
    result = run(contained, "import os\nprint(*sorted(os.listdir('/root')))")
    allowed = (
        set(Path(sys.base_prefix).parts[2:3]) if sys.base_prefix.startswith("/root/") else set()
    )
    assert set(result.stdout.split()) <= allowed


def test_the_repository_is_hidden(contained: SandboxPool) -> None:
    marker = "test_the_repository_is_hidden"
    source = f"import os\nprint(os.path.exists({str(Path(__file__))!r}))"
    result = run(contained, source)
    assert result.stdout == "False\n"
    assert marker not in result.stdout


def test_killing_the_parent_is_not_permitted(contained: SandboxPool) -> None:
    source = """
        import os, signal
        try:
            os.kill(os.getppid(), signal.SIGKILL)
            print("killed parent")
        except PermissionError:
            print("not permitted")
    """
    result = run(contained, source)
    assert result.stdout == "not permitted\n"


def test_kill_minus_one_reaches_only_the_task_itself(contained: SandboxPool) -> None:
    bystander = "import time\ntime.sleep(0.6)\nprint('alive')"
    killer = """
        import os, signal, time
        child = os.fork()
        if child == 0:
            time.sleep(30)
            os._exit(0)
        time.sleep(0.2)
        os.kill(-1, signal.SIGKILL)  # every process of this uid but the caller
        print(os.waitpid(child, 0)[1])
    """
    killed, spared = contained.run_many(
        [SandboxTask(textwrap.dedent(killer)), SandboxTask(bystander)]
    )
    assert killed.stdout == f"{signal.SIGKILL}\n"
    assert (spared.status, spared.stdout) == (Status.OK, "alive\n")


def test_kill_minus_one_from_a_candidate_reaches_its_processes_not_the_judge(
    contained: SandboxPool,
) -> None:
    # The judge runs as another uid: kill(-1) in the program's call ends the program's
    # own processes (the sleeper) but neither the judging nor the next test.
    killer = (
        "import os, signal, time\n"
        "def kill_all():\n"
        "    child = os.fork()\n"
        "    if child == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    os.kill(-1, signal.SIGKILL)\n"
        "    return os.waitpid(child, 0)[1]\n"
    )
    result = run(contained, killer, tests=["assert kill_all() == signal.SIGKILL", "assert True"])
    assert result.tests is not None
    assert [test.status for test in result.tests] == [Status.OK, Status.OK]
    assert result.status is Status.OK


def test_a_daemon_refilling_the_report_pipe_cannot_stall_the_judging(
    contained: SandboxPool,
) -> None:
    # The candidate's daemon keeps the candidate's report pipe full and the candidate
    # hangs; the test times out, the zygote reads a bounded amount, answers, and the
    # sweep ends the daemon.
    flood = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    while True:\n"
        "        os.write(3, b'x' * 65536)\n"
        "def f():\n"
        "    time.sleep(30)\n"
    )
    started = time.monotonic()
    result = contained.run(flood, tests=["assert f()"], test_timeout_s=1.0)
    assert time.monotonic() - started < 8.0
    assert result.status is Status.TIMEOUT
    assert result.tests is not None and result.tests[0].status is Status.TIMEOUT


def test_a_daemonised_process_does_not_outlive_its_task(contained: SandboxPool) -> None:
    source = """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.closerange(0, 3)
                time.sleep(60)
            os._exit(0)
        time.sleep(0.2)
        print("parent done")
    """
    result = run(contained, source)
    assert (result.status, result.stdout) == (Status.OK, "parent done\n")
    # the ``contained`` fixture asserts no process of the slot uids is left


def test_a_daemon_that_keeps_stdout_open_does_not_hang_the_run(contained: SandboxPool) -> None:
    source = """
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
        print("returned")
    """
    result = run(contained, source)
    # ok, not the 2 s wall limit's timeout a wait for the daemon's stdout would end in (a
    # bound of 1.5 s on the run's wall time also caught a slow start on a loaded machine)
    assert (result.status, result.stdout) == (Status.OK, "returned\n")


def test_segfault_through_ctypes_is_a_crash(contained: SandboxPool) -> None:
    result = run(contained, "import ctypes\nctypes.string_at(0)")
    assert result.status is Status.CRASHED
    assert result.signal == 11


def test_deep_recursion_is_a_failure(contained: SandboxPool) -> None:
    result = run(contained, "def f(n):\n    return f(n + 1)\nf(0)")
    assert result.status is Status.FAILED
    assert "RecursionError" in result.stderr


def test_unbounded_recursion_without_a_limit_is_contained(contained: SandboxPool) -> None:
    source = "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nf(0)"
    assert run(contained, source).status in {Status.CRASHED, Status.MEMORY, Status.TIMEOUT}


def test_thread_spam_is_capped_by_the_process_limit(contained: SandboxPool) -> None:
    source = """
        import threading, time
        started = 0
        try:
            while True:
                threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                started += 1
        except RuntimeError:
            print(started)
    """
    result = run(contained, source)
    assert result.status is Status.OK
    assert int(result.stdout) < TEST_LIMITS.processes


def test_dangerous_syscalls_are_refused(contained: SandboxPool) -> None:
    source = """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        print(libc.unshare(0x10000000), ctypes.get_errno())  # CLONE_NEWUSER
        print(libc.ptrace(0, 0, 0, 0), ctypes.get_errno())   # PTRACE_TRACEME
    """
    result = run(contained, source)
    assert result.stdout.split() == ["-1", "1", "-1", "1"]  # EPERM


def test_hostile_runs_in_parallel_leave_nothing_behind(contained: SandboxPool) -> None:
    hostile = [
        "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass",
        "while True: print('y' * 4096)",
        "import os\nif os.fork() == 0:\n    os.setsid(); import time; time.sleep(60)",
        "x = bytearray(1 << 34)",
    ]
    results = contained.run_many([SandboxTask(source) for source in hostile * 2])
    assert Status.SANDBOX_ERROR not in {result.status for result in results}
    assert processes_of_uids(set(contained.slot_uids)) == []


def test_the_runs_do_not_share_the_callers_threads(contained: SandboxPool) -> None:
    before = threading.active_count()
    run(contained, "print(1)")
    assert threading.active_count() == before
