"""Inline rewards for the ``--engine ray`` tests, installed as a plugin (the dist-info
beside this file, on the nodes' PYTHONPATH): the scoring actors build their RewardSet
from the config and find these by name, as they would a real installed plugin."""

from __future__ import annotations

import os

from rewardkit import Sample, hookimpl, reward


@reward(name="ray_inline_exit")
def inline_exit(sample: Sample) -> float:
    """1.0, except that a completion ``die`` ends the process it runs in (inline: the
    scoring actor itself), as a reward with a native crash would."""
    if sample.text == "die":
        os._exit(7)
    return 1.0


@reward(name="ray_inline_pid")
def inline_pid(sample: Sample) -> float:
    """The id of the process that scores the row: which scoring actor had it."""
    return float(os.getpid())


@hookimpl
def register_rewards(register):  # type: ignore[no-untyped-def]
    register(inline_exit)
    register(inline_pid)
