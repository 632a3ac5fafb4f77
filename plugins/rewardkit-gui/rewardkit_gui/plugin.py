"""rewardkit plugin entry point of ``rewardkit-gui``: registers ``gui_navigation`` and
``gui_format``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_gui.rewards import gui_format, gui_navigation


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(gui_navigation)
    register(gui_format)
