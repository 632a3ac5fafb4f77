"""rewardkit plugin entry point of ``rewardkit-workspace``: the ``workspace_criteria`` reward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_workspace.reward import WorkspaceCriteria


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(WorkspaceCriteria)
