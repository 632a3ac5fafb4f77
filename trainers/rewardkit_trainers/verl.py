"""``pkg://rewardkit_trainers.verl``, the path verl users type: ``compute_score`` and
``compute_score_async`` live in :mod:`rewardkit_trainers.rewards.verl`, re-exported here
unchanged (one module state: the scorers it caches are shared).
"""

from rewardkit_trainers.rewards.verl import (
    MANAGER_OVERRIDES,
    RESPONSE_IDS,
    REWARD_PATH,
    compute_score,
    compute_score_async,
    overrides,
)

__all__ = ["MANAGER_OVERRIDES", "RESPONSE_IDS", "REWARD_PATH", "compute_score",
           "compute_score_async", "overrides"]
