"""The hooks a rewardkit plugin can implement.

A plugin is a module (usually exposed through the ``rewardkit`` entry-point group of its
distribution) with functions decorated by :data:`hookimpl`::

    from rewardkit import hookimpl

    @hookimpl
    def register_rewards(register):
        register(my_reward)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from rewardkit.authoring import Reward

hookspec = pluggy.HookspecMarker("rewardkit")
hookimpl = pluggy.HookimplMarker("rewardkit")


@hookspec
def register_rewards(register: Callable[[type[Reward]], Any]) -> None:
    """Register reward classes.

    Called once, when the registry is first used. ``register(cls)`` adds a reward class
    (a :class:`rewardkit.Reward` subclass, or a function decorated with
    :func:`rewardkit.reward`) under its ``name``. Registering a name that another
    plugin already registered is an error naming both distributions.
    """
