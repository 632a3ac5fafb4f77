"""rewardkit-gui: rewards for GUI navigation agents and a synthetic TV-menu dataset.

Rewards (registered through the ``rewardkit`` entry point): ``gui_navigation`` and
``gui_format``. Data: ``python -m rewardkit_gui.generate --out DIR --samples N --seed S``.
"""

from rewardkit_gui.actions import manhattan, parse_actions, replay
from rewardkit_gui.rewards import gui_format, gui_navigation

__all__ = ["gui_format", "gui_navigation", "manhattan", "parse_actions", "replay"]
