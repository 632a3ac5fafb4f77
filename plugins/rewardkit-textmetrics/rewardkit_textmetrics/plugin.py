"""rewardkit plugin entry point of ``rewardkit-textmetrics``: registers ``bleu``, ``chrf``,
``ter``, ``rouge``, ``gleu``, ``fuzzy_match``, ``string_match`` and the group reward
``corpus_bleu``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_textmetrics.rewards import (
    Bleu,
    Chrf,
    CorpusBleu,
    FuzzyMatch,
    Gleu,
    Rouge,
    StringMatch,
    Ter,
)


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    for cls in (Bleu, Chrf, Ter, Rouge, Gleu, FuzzyMatch, StringMatch, CorpusBleu):
        register(cls)
