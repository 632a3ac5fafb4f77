"""rewardkit plugin entry point of ``rewardkit-judge``: registers ``reward_model``,
``llm_judge`` and ``pairwise_judge``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_judge.llm_judge import LLMJudge
from rewardkit_judge.pairwise_judge import PairwiseJudge
from rewardkit_judge.reward_model import RewardModel


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(RewardModel)
    register(LLMJudge)
    register(PairwiseJudge)
