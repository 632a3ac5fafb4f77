"""The ``python`` reward's sandbox children hold slots of the node's local budget.

Real processes (three "ranks", each with its own sandbox pool) score samples whose
reward call spins for a while. Each process records when its pool ran a child (the
``SandboxPool.run`` call made under the slot, on CLOCK_MONOTONIC, which every process of
the node shares); across processes those intervals never overlap more than the budget's
``k`` slots deep, although the pools alone would run 3 x k at once (the control: the
same run with a budget folder per process does). A holder SIGKILLed mid-call gives its
slot back at once: a waiting process then runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from concurrent.futures import ThreadPoolExecutor
    from rewardkit_sandbox import SandboxPool
    from rewardkit import Sample
    from rewardkit_code.custom_python import PythonReward

    import os
    from pathlib import Path

    slots, n, spins = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    barrier, ranks = Path(sys.argv[4]), int(sys.argv[5])
    source = f"def reward(completion, reference, metadata):\\n" \\
             f"    if completion == 'warm-up':\\n        return 1.0\\n" \\
             f"    return float(sum(range({spins})) > 0)\\n"
    reward = PythonReward({"source": source, "concurrency": slots, "timeout_s": 60})
    reward.setup()
    # says "blocked" the first time this process finds every slot of the node held (a
    # waiter's cue: sleeping a fixed time instead raced its pool's start-up under load)
    from rewardkit.execution.budget import ExecutionBudget
    real_try = ExecutionBudget._try_slots
    said = []

    def try_slots(budget):
        slot = real_try(budget)
        if slot is None and not said:
            said.append(1)
            print("blocked", flush=True)
        return slot

    ExecutionBudget._try_slots = try_slots
    print("warming", flush=True)
    # the pool starts before the measured runs
    warm = reward.grade(Sample(completion="warm-up")).details["queued_s"]
    runs = []
    real_run = SandboxPool.run

    def timed_run(pool, *args, **kwargs):
        print("running", flush=True)
        started = time.monotonic()
        try:
            return real_run(pool, *args, **kwargs)
        finally:
            runs.append((started, time.monotonic()))

    SandboxPool.run = timed_run
    # every rank starts its measured runs together (else a rank that started late, on a
    # loaded machine, may find the others done: no contention to measure)
    (barrier / str(os.getpid())).touch()
    deadline = time.monotonic() + 120
    while len(list(barrier.iterdir())) < ranks and time.monotonic() < deadline:
        time.sleep(0.01)
    with ThreadPoolExecutor(slots) as threads:
        scores = list(threads.map(lambda i: reward.grade(Sample(completion=str(i))), range(n)))
    print(json.dumps({"runs": runs, "values": [s.value for s in scores],
                      "queued": [s.details["queued_s"] for s in scores], "warm": warm}))
    """
)


def _start(budget_dir: Path, slots: int, n: int, spins: int,
           barrier: Path | None = None, ranks: int = 1) -> subprocess.Popen[str]:
    """A rank; with a ``barrier`` folder it starts its measured runs once ``ranks`` ranks
    have warmed up."""
    env = {**os.environ, "RK_BUDGET_DIR": str(budget_dir)}
    if barrier is None:
        barrier = budget_dir.parent / f"barrier-{budget_dir.name}-{time.monotonic_ns()}"
    barrier.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(slots), str(n), str(spins), str(barrier),
         str(ranks)],
        env=env, stdout=subprocess.PIPE, text=True,
    )


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _most_at_once(runs: list[list[float]]) -> int:
    events = sorted([(start, 1) for start, _ in runs] + [(end, -1) for _, end in runs],
                    key=lambda event: (event[0], event[1]))
    depth = most = 0
    for _, step in events:
        depth += step
        most = max(most, depth)
    return most


def _three_ranks(tmp_path: Path, slots: int, shared: bool) -> list[dict[str, Any]]:
    folders = [tmp_path / ("budget" if shared else f"budget-{rank}") for rank in range(3)]
    barrier = tmp_path / "barrier"
    ranks = [_start(folder, slots, n=2 * slots, spins=3_000_000, barrier=barrier, ranks=3)
             for folder in folders]
    return [_result(rank) for rank in ranks]


@pytest.mark.parametrize("slots", [1, 2])
def test_ranks_never_run_more_python_rewards_at_once_than_the_budget(
    tmp_path: Path, slots: int, no_leftovers: None
) -> None:
    results = _three_ranks(tmp_path, slots, shared=True)
    runs = [run for result in results for run in result["runs"]]
    assert len(runs) == 3 * 2 * slots
    assert [v for result in results for v in result["values"]] == [1.0] * len(runs)
    assert _most_at_once(runs) <= slots
    assert max(q for result in results for q in result["queued"]) > 0.05  # they contended


def test_without_a_shared_budget_the_same_ranks_run_more_at_once(
    tmp_path: Path, no_leftovers: None
) -> None:
    results = _three_ranks(tmp_path, 1, shared=False)
    assert _most_at_once([run for result in results for run in result["runs"]]) > 1


def test_a_sigkilled_holder_gives_its_slot_back(tmp_path: Path, no_leftovers: None) -> None:
    holder = _start(tmp_path / "budget", 1, n=1, spins=10**12)  # runs until killed
    assert holder.stdout is not None and holder.stdout.readline().strip() == "warming"
    assert holder.stdout.readline().strip() == "running"  # holds the node's one slot
    waiter = _start(tmp_path / "budget", 1, n=1, spins=10)
    assert waiter.stdout is not None and waiter.stdout.readline().strip() == "warming"
    # its warm-up call found the node's one slot held (after its pool's start-up, which
    # took over 3 s on a loaded machine: a fixed sleep let the holder die first) ...
    assert waiter.stdout.readline().strip() == "blocked"
    time.sleep(1.0)
    assert waiter.poll() is None  # ... and still waits for it
    killed_at = time.monotonic()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    result = _result(waiter)
    assert result["values"] == [1.0]
    # it waited for the holder (from before "blocked" to the kill), then got the slot
    assert result["warm"] >= 1.0
    assert time.monotonic() - killed_at < 60
