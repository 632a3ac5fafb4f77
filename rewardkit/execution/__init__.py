"""Running one reward over many samples, by execution mode, with faults contained.

Whatever a reward does (raises, returns NaN or a wrong type, hangs, kills its process),
every sample asked for gets one :class:`~rewardkit.Score`, and the batch, the other
rewards and the caller carry on. The modules, one concern each:

- :mod:`~rewardkit.execution.dispatch`: the one call a RewardSet makes per component
  (:func:`dispatch_component`): its timeout resolved, the executor chosen (local or Ray);
- :mod:`~rewardkit.execution.timeouts`: how long a component may take, and where that
  is enforced;
- :mod:`~rewardkit.execution.executor`: the executor interface (:class:`Executor`), what
  an executor writes (:class:`Outcome`) and the rule that stops a call (:class:`Breaker`);
- :mod:`~rewardkit.execution.local`: the local executor: inline, on the shared event
  loop (async), or in the worker pool (process);
- :mod:`~rewardkit.execution.pool`: the pool of worker processes with hard per-sample
  timeouts; :mod:`~rewardkit.execution.processes` starts, watches and kills them,
  :mod:`~rewardkit.execution.protocol` is what the two ends say to each other, and
  :mod:`~rewardkit.execution.worker` a worker's entry point
  (``python -m rewardkit.execution.worker``);
- :mod:`~rewardkit.execution.ray`: the Ray executor (``executor: ray``), and
  :mod:`~rewardkit.execution.ray_cluster`: joining or starting a cluster (Ray imported
  on demand, one decision of its authentication mode for every Ray process rewardkit
  starts).

A score's path, each name saying its layer: ``RewardSet.score`` ->
:func:`dispatch_component` (dispatch) -> ``Executor.score`` -> :func:`execute_reward`
(execute by mode: ``execute_inline``, ``execute_async``, ``execute_quick`` then
``execute_in_workers``) -> ``WorkerPool.execute`` (chunks to worker processes, which
``processes`` spawns) -> the worker's ``_score_chunk`` -> ``Reward.score``.
"""

from __future__ import annotations

from rewardkit.execution.dispatch import dispatch_component, executor_for
from rewardkit.execution.executor import Breaker, Executor, Outcome
from rewardkit.execution.local import LocalExecutor, exception_score, execute_reward, group_scores
from rewardkit.execution.timeouts import DEFAULT_TIMEOUT, mode_for, resolve_timeout

__all__ = [
    "DEFAULT_TIMEOUT",
    "Breaker",
    "Executor",
    "LocalExecutor",
    "Outcome",
    "dispatch_component",
    "exception_score",
    "execute_reward",
    "executor_for",
    "group_scores",
    "mode_for",
    "resolve_timeout",
]
