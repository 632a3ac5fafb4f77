"""Built-in length and content rewards (registered as a default plugin)."""

from __future__ import annotations

from rewardkit.hookspecs import hookimpl


@hookimpl
def register_rewards(register):  # type: ignore[no-untyped-def]
    pass
