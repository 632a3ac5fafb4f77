"""rewardkit plugin entry point of ``rewardkit-code``: registers ``code_execution`` and
``python``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_code.code_execution import CodeExecution
from rewardkit_code.custom_python import PythonReward


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(CodeExecution)
    register(PythonReward)
