"""rewardkit plugin entry point of ``rewardkit-ifeval``: registers ``instruction_following``.

The checkers load on the first score (in a worker: when it loads the reward,
``InstructionFollowing.warm``), not here, so listing or validating a config stays fast."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_ifeval.reward import InstructionFollowing


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(InstructionFollowing)
