"""rewardkit plugin entry point of ``rewardkit-translation``: registers
``translation_verdict``, and ``translation_judge`` when rewardkit-judge is installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_translation.rewards import translation_verdict


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(translation_verdict)
    try:
        from rewardkit_translation.judge import TranslationJudge
    except ImportError:  # the [judge] extra is not installed
        return
    register(TranslationJudge)
