"""The verl reward manager that hands rewardkit the response's token ids.

verl's ``naive`` manager decodes each response and calls ``compute_score`` with the text
only. :class:`RewardkitRewardManager` is that manager, plus the response's valid token ids
(the ``responses`` row cut at the attention mask's length) in
``extra_info["response_ids"]``, which
:func:`rewardkit_trainers.rewards.verl.compute_score` turns into
``metadata["completion_ids"]``: ``unit: tokens`` then counts the policy's tokens. verl
loads it with::

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=pkg://rewardkit_trainers.rewards.verl_manager
    reward.reward_manager.name=RewardkitRewardManager

Imported by verl only (it imports verl); ``pkg://rewardkit_trainers.rewards.verl_manager`` is
the same class.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager

from rewardkit_trainers.rewards.verl import RESPONSE_IDS


class RewardkitRewardManager(NaiveRewardManager):
    """verl's naive reward manager, with the response's token ids in ``extra_info``."""

    async def run_single(self, data: Any) -> dict[str, Any]:
        data = data[-1:]  # as the naive manager: the last sequence is the one scored
        item = data[0]
        responses = item.batch["responses"]
        valid = int(item.batch["attention_mask"][-responses.shape[-1]:].sum())
        info = dict(item.non_tensor_batch.get("extra_info") or {})
        info[RESPONSE_IDS] = responses[:valid].tolist()
        # a new array in this one-row slice: the caller's batch keeps its extra_info
        data.non_tensor_batch["extra_info"] = np.array([info], dtype=object)
        result: dict[str, Any] = await super().run_single(data)
        return result
