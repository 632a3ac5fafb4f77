"""rewardkit plugin entry point of ``rewardkit-tools``: registers the tool-use rewards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_tools.rewards import (
    NonStopPenalty,
    ToolCallMatch,
    ToolCallValid,
    ToolEfficiency,
    ToolErrors,
)


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    for cls in (ToolCallValid, ToolCallMatch, ToolErrors, ToolEfficiency, NonStopPenalty):
        register(cls)
