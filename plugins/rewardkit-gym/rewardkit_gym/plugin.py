"""rewardkit plugin entry point of ``rewardkit-gym``: the ``gym_answer`` reward and the
``gym-data`` command. reasoning-gym (about 1 s to import) loads on the first score or
when the command runs, not here, so ``rewardkit --help`` stays fast."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import Subcommands, hookimpl
from rewardkit_gym.data import add_command
from rewardkit_gym.reward import GymAnswer


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(GymAnswer)


@hookimpl
def register_commands(subparsers: Subcommands) -> None:
    add_command(subparsers)
