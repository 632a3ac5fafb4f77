"""rewardkit-trainers as a rewardkit plugin (the ``rewardkit`` entry point).

It adds the commands ``train``, ``export``, ``eval``, ``launch`` and ``jobs`` and the
config sections ``train:``, ``eval:`` and ``sagemaker:``, through the same hooks as any
plugin. Only pydantic models and argument parsers load here: every trainer library is
imported when a command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import Subcommands, hookimpl

from rewardkit_trainers.config import EvalConfig, TrainConfig
from rewardkit_trainers.sagemaker.config import SageMakerSettings


@hookimpl
def register_commands(subparsers: Subcommands) -> None:
    from rewardkit_trainers.cli import add_commands  # the command line's libraries, not
                                                      # every scoring process's
    add_commands(subparsers)


@hookimpl
def register_config_sections(register: Callable[..., Any]) -> None:
    register("train", TrainConfig, description="training run (`rewardkit train`)")
    register("eval", EvalConfig, description="evaluation (`rewardkit eval`)")
    register("sagemaker", SageMakerSettings,
             description="SageMaker job (`rewardkit launch sagemaker`)")


@hookimpl
def register_rewards(register: Callable[..., Any]) -> None:
    # the quickstart's shaping reward (examples/quickstart.yaml): pure Python, no trainer
    # library behind it
    from rewardkit_trainers.quickstart import layout_progress

    register(layout_progress)
