"""``rewardkit_trainers.scoring``, the path EasyR1 reward files exported before the trainers
were split by role import (``from rewardkit_trainers.scoring import SharedScorer``): the shared
scorer lives in :mod:`rewardkit_trainers.rewards.scoring`, re-exported here unchanged so those
files keep loading.

>>> from rewardkit_trainers.scoring import SharedScorer
>>> from rewardkit_trainers.rewards import scoring
>>> SharedScorer is scoring.SharedScorer
True
"""

from rewardkit_trainers.rewards.scoring import (
    SharedScorer,
    component_metrics,
    config_literal,
    gather_across_ranks,
    global_step,
    group_members,
    imputed_group_share,
    load_reward_config,
    neutralise_failed_rows,
)

__all__ = ["SharedScorer", "component_metrics", "config_literal", "gather_across_ranks",
           "global_step", "group_members", "imputed_group_share", "load_reward_config",
           "neutralise_failed_rows"]
