"""Adapters that hand a rewardkit config to other stacks (docs/adapters.md).

- :mod:`rewardkit.adapters.verifiers`: a verifiers ``Rubric`` (one reward function per
  component, with its weight);
- :mod:`rewardkit.adapters.nemo_gym`: a NeMo Gym resources server (``/verify`` answers
  ``reward`` and ``reward_components``);
- the TRL environment reward (an environment's ``get_reward``) is
  ``rewardkit_trainers.environments.RewardkitReward``.

Each imports the other project lazily: importing this package needs none of them.
"""
