"""What the adapters share: a RewardSet from a config file, path or mapping."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardkit.reward_set import RewardSet


def reward_set_of(config: RewardSet | str | Path | Mapping[str, Any]) -> RewardSet:
    """``config`` as a RewardSet: one already built, a config file, or a config mapping."""
    if isinstance(config, RewardSet):
        return config
    if isinstance(config, Mapping):
        return RewardSet.from_dict(config)
    return RewardSet.from_file(config)
