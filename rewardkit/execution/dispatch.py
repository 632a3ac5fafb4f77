"""Where a component runs and under which timeout: the one call a RewardSet makes.

:func:`dispatch_component` resolves the component's timeout
(:func:`~rewardkit.execution.timeouts.resolve_timeout`) and hands the samples to the
executor :func:`executor_for` chooses: the Ray executor for process-mode and sandboxed
components when the config asks for Ray (``executor: ray``, or ``auto`` inside a Ray
cluster), else the local executor, which runs the reward inline, on the shared event
loop (async) or in the worker pool (process). Both are an
:class:`~rewardkit.execution.executor.Executor`: the caller does not know which it got.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rewardkit.execution.executor import Executor, Outcome
from rewardkit.execution.local import LocalExecutor
from rewardkit.execution.timeouts import resolve_timeout
from rewardkit.types import ExecutionMode, Sample

if TYPE_CHECKING:  # typing only
    from rewardkit.authoring import Reward
    from rewardkit.config import RewardConfig


def ray_wanted(executor: str) -> bool:
    """True when a config's ``executor`` setting asks for Ray in this process:
    ``ray``, or ``auto`` while connected to a cluster (or with RAY_ADDRESS set)."""
    if executor == "ray":
        return True
    if executor != "auto":
        return False
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return True
    return bool(os.environ.get("RAY_ADDRESS")) and importlib.util.find_spec("ray") is not None


def uses_ray(reward: Reward, mode: ExecutionMode) -> bool:
    """Which components the Ray executor takes: process-mode and sandboxed rewards
    (inline and plain async rewards are cheaper where the batch already is)."""
    return mode is ExecutionMode.PROCESS or type(reward).sandboxed


def executor_for(config: RewardConfig, reward: Reward, mode: ExecutionMode) -> Executor:
    """The executor that scores ``reward`` in ``mode`` under ``config`` (its ``executor``,
    ``ray`` and ``workers`` settings); the Ray executor's actors are started once per
    process and settings, and Ray is imported only when it is chosen."""
    if config.executor != "local" and ray_wanted(config.executor) and uses_ray(reward, mode):
        from rewardkit.execution.ray import shared_executor

        return shared_executor(config.ray)
    return LocalExecutor(config.workers)


def dispatch_component(config: RewardConfig, reward: Reward, mode: ExecutionMode,
                       timeout: float | None, samples: Sequence[Sample],
                       indices: Sequence[int] | None, groups: Sequence[Sequence[int]] | None,
                       out: Outcome) -> None:
    """Score one component: ``reward`` in ``mode`` over the samples at ``indices`` (all
    when None), or over ``groups`` for a group reward, each under the component's
    timeout (``timeout``: the config's, None when it sets none), writing into ``out``."""
    executor = executor_for(config, reward, mode)
    executor.score(reward, mode, samples, indices, groups, resolve_timeout(timeout, reward),
                   out)
