"""``rewardkit_trainers.trl``, the path TRL users import: the reward callables live in
:mod:`rewardkit_trainers.rewards.trl`, re-exported here unchanged.

>>> from rewardkit_trainers.trl import trl_rewards
>>> trl_rewards({"rewards": {"fmt": {"reward": "soft_format"}}}).names
['fmt']
"""

from rewardkit_trainers.rewards.trl import (
    AGGREGATION,
    ComponentReward,
    ScheduleNotAttached,
    TRLRewards,
    build_samples,
    export_module,
    make_weight_callback,
    reference_column_of,
    trl_rewards,
)

__all__ = ["AGGREGATION", "ComponentReward", "ScheduleNotAttached", "TRLRewards",
           "build_samples", "export_module", "make_weight_callback", "reference_column_of",
           "trl_rewards"]
