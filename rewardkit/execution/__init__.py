"""Running one reward over many samples, by execution mode, with faults contained.

Whatever a reward does (raises, returns NaN or a wrong type, hangs, kills its process),
every sample asked for gets one :class:`~rewardkit.Score`, and the batch, the other
rewards and the caller carry on. The modules, one concern each:

- :mod:`~rewardkit.execution.local`: in this process: inline, on the shared event
  loop (async), or in the worker pool (process);
- :mod:`~rewardkit.execution.pool`: the pool of worker processes with hard per-sample
  timeouts; :mod:`~rewardkit.execution.worker` is a worker's entry point
  (``python -m rewardkit.execution.worker``);
- :mod:`~rewardkit.execution.ray`: the same on a Ray cluster (``executor: ray``), and
  :mod:`~rewardkit.execution.ray_cluster`: joining or starting that cluster (one
  decision of Ray's authentication mode for every Ray process rewardkit starts).
"""

from __future__ import annotations

from rewardkit.execution.local import (
    DEFAULT_TIMEOUT,
    Outcome,
    exception_score,
    group_scores,
    run_reward,
)

__all__ = ["DEFAULT_TIMEOUT", "Outcome", "exception_score", "group_scores", "run_reward"]
