"""The backend table: each backend's name and the planner that turns a run into its jobs.

A planner reads a :class:`~rewardkit_trainers.launch.plan.RunPlan` and returns the
external commands of the run (writing their files as a side effect). The runner looks
the backend up here; planners import the plan, never the runner or this table, so the
imports go one way. TRL has a planner for its launched form (``accelerate launch``, more
than one GPU or node, a vLLM server); on one GPU or the CPU it trains in this process
instead (:mod:`rewardkit_trainers.launch.trl_train`, :attr:`RunPlan.launched`).
"""

from __future__ import annotations

from collections.abc import Callable

from rewardkit_trainers.launch import easyr1, swift, trl, verl
from rewardkit_trainers.launch.plan import Job, RunPlan

Planner = Callable[[RunPlan], list[Job]]
"""A backend's jobs for a plan."""

PLANNERS: dict[str, Planner] = {
    "trl": trl.build_jobs,
    "swift": swift.build_jobs,
    "easyr1": easyr1.build_jobs,
    "verl": verl.build_jobs,
}


def build_jobs(plan: RunPlan) -> list[Job]:
    """The external commands of ``plan``'s run, from its backend's planner; ValueError
    for TRL in this process, which has none."""
    backend = plan.train.backend
    if backend == "trl" and not plan.launched:
        raise ValueError("backend trl runs in-process here (one GPU or the CPU)")
    return PLANNERS[backend](plan)
