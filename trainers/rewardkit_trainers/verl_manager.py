"""``pkg://rewardkit_trainers.verl_manager``, the path verl users type for the reward
manager: :class:`RewardkitRewardManager` lives in
:mod:`rewardkit_trainers.rewards.verl_manager`, re-exported here (it imports verl).
"""

from rewardkit_trainers.rewards.verl_manager import RewardkitRewardManager

__all__ = ["RewardkitRewardManager"]
