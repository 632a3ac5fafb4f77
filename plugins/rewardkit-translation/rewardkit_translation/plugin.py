"""rewardkit plugin entry point of ``rewardkit-translation``: registers
``translation_verdict``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_translation.rewards import translation_verdict


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(translation_verdict)
