"""Local runs of ``code_execution`` share the node's execution budget across processes.

Two real processes (two "ranks"), each with its own sandbox pool, grade a batch of
programs that each run for 0.5 s. With a node-wide budget of ``n`` slots the programs'
run intervals, rebuilt from each score's wall time minus its ``queued_s``, never overlap
more than ``n`` deep, although the two pools alone would run two at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from concurrent.futures import ThreadPoolExecutor
    from rewardkit import Sample
    from rewardkit_code.code_execution import CodeExecution

    slots, n = int(sys.argv[1]), int(sys.argv[2])
    grader = CodeExecution({"concurrency": slots, "timeout_s": 5})
    program = "```python\\nimport time\\ntime.sleep(0.5)\\nprint('ok')\\n```"
    sample = Sample(completion=program, reference=[{"stdin": "", "stdout": "ok"}])
    grader.grade(sample)  # start the pool before the measured runs

    def one(_):
        started = time.monotonic()
        score = grader.grade(sample)
        ended = time.monotonic()
        return {"value": score.value, "queued_s": score.details["queued_s"],
                "started": started, "ended": ended}

    with ThreadPoolExecutor(4) as threads:
        print(json.dumps(list(threads.map(one, range(n)))))
    """
)


def _most_at_once(runs: list[dict[str, float]]) -> int:
    """How many runs overlapped at most: each run's interval is [wall start + queued_s +
    0.1 s (slack for the work before taking a slot), end]."""
    events = []
    for run in runs:
        events.append((run["started"] + run["queued_s"] + 0.1, 1))
        events.append((run["ended"], -1))
    depth = most = 0
    for _, step in sorted(events, key=lambda event: (event[0], event[1])):
        depth += step
        most = max(most, depth)
    return most


def _two_ranks(tmp_path: Path, slots: int, per_rank: int) -> list[dict[str, float]]:
    env = {**os.environ, "RK_BUDGET_DIR": str(tmp_path / "budget")}
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(slots), str(per_rank)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    runs: list[dict[str, float]] = []
    for rank in ranks:
        out, _ = rank.communicate(timeout=120)
        assert rank.returncode == 0
        runs.extend(json.loads(out.strip().splitlines()[-1]))
    return runs


@pytest.mark.parametrize("slots", [1, 2])
def test_two_ranks_never_exceed_the_node_budget(
    tmp_path: Path, slots: int, no_leftovers: None
) -> None:
    runs = _two_ranks(tmp_path, slots, per_rank=3)
    assert [run["value"] for run in runs] == [1.0] * 6
    assert _most_at_once(runs) <= slots
    # the ranks contended: some run waited for a slot another process held
    assert max(run["queued_s"] for run in runs) > 0.2
