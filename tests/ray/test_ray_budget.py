"""The node-wide execution budget across Ray workers: tasks on the loopback cluster's
three nodes (one machine, so one node for the budget) never hold more than its slots."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")


def _use_slots(
    folder: str, slots: int, uses: int, hold_s: float
) -> tuple[int, list[tuple[float, float]]]:
    import os

    from rewardkit_sandbox.budget import ExecutionBudget

    budget = ExecutionBudget("ray-test", slots=slots, directory=folder)
    spans = []
    for _ in range(uses):
        with budget.acquire():
            start = time.monotonic()
            time.sleep(hold_s)
            spans.append((start, time.monotonic()))
    return os.getpid(), spans


def test_ray_workers_share_the_node_budget(ray_cluster: object, tmp_path: Path) -> None:
    task = ray.remote(num_cpus=1)(_use_slots)
    results = ray.get([task.remote(str(tmp_path), 2, 4, 0.2) for _ in range(3)], timeout=120)
    pids = {pid for pid, _ in results}
    spans = [span for _, spans in results for span in spans]
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    assert len(spans) == 12
    assert most == 2, most  # three workers, two slots: the limit, and reached
    assert len(pids) >= 2  # the work really ran in several worker processes
