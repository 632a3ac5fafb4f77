"""How long a component may take: the one place its timeout is resolved.

A component's timeout is the config's ``timeout``, else the reward's declared
``timeout``, else :data:`DEFAULT_TIMEOUT` (:func:`resolve_timeout`), per sample, or per
group for a group reward. A configured timeout on an inline reward moves it to process
mode (:func:`mode_for`): a hard timeout needs a process to kill. Where it is enforced:

- process mode: :class:`~rewardkit.execution.pool.WorkerPool` gives each item the
  timeout from the moment its worker started it (a worker loading the reward first has
  :data:`LOAD_TIMEOUT`), then kills the worker;
- async mode: :func:`~rewardkit.execution.local.execute_async` waits for each coroutine that
  long, and abandons an event loop a coroutine blocks for longer;
- Ray: each chunk has the deadline :func:`chunk_budget` gives it, past which its actor
  is killed (inside the actor, the pool's per-item timeouts apply as locally);
- inline: not enforced (nothing to kill), hence :func:`mode_for`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rewardkit.types import ExecutionMode

if TYPE_CHECKING:  # typing only
    from rewardkit.authoring import Reward

#: seconds a sample (or group) may take when neither the config nor the reward says
DEFAULT_TIMEOUT = 30.0
#: seconds a worker may take to import and set up a reward before its first item's
#: clock starts (the local pool; the Ray executor allows each actor's reloads as much)
LOAD_TIMEOUT = 120.0
#: seconds added to every Ray chunk's deadline (scheduling, transfer)
CHUNK_SLACK = 10.0


def resolve_timeout(configured: float | None, reward: Reward) -> float:
    """The timeout of a component: ``configured`` (the config's ``timeout``), else the
    reward's declared ``timeout``, else :data:`DEFAULT_TIMEOUT`."""
    return configured or reward.timeout or DEFAULT_TIMEOUT


def mode_for(mode: ExecutionMode, configured: float | None) -> ExecutionMode:
    """The mode a component runs in: ``mode`` (configured, else declared), except that an
    inline reward given a timeout in the config runs in process mode."""
    if mode is ExecutionMode.INLINE and configured is not None:
        return ExecutionMode.PROCESS
    return ExecutionMode(mode)


def chunk_budget(timeout: float, items: int, workers: int, loading: bool) -> float:
    """Seconds a Ray actor has for a chunk of ``items`` samples (or groups) scored by
    ``workers`` worker processes: the per-item timeout spread over its workers, plus the
    load allowance when the actor has not loaded the reward yet, plus slack."""
    return (LOAD_TIMEOUT if loading else 0.0) + timeout / workers * items + CHUNK_SLACK
