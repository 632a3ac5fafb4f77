"""Built-in answer-format rewards (registered as a default plugin)."""

from __future__ import annotations

import re

from pydantic import Field

from rewardkit.authoring import Params, reward
from rewardkit.hookspecs import hookimpl
from rewardkit.types import Sample


class TagParams(Params):
    reasoning_tag: str = Field("think", description="name of the reasoning tag")
    answer_tag: str = Field("answer", description="name of the answer tag")
    score: float = Field(1.0, description="value when the format holds")


_soft_cache: dict[tuple[str, str], re.Pattern[str]] = {}


def _soft_pattern(r: str, a: str) -> re.Pattern[str]:
    key = (r, a)
    pat = _soft_cache.get(key)
    if pat is None:
        pat = re.compile(
            rf"<{re.escape(r)}>.*?</{re.escape(r)}>\s*<{re.escape(a)}>.*?</{re.escape(a)}>",
            re.DOTALL,
        )
        _soft_cache[key] = pat
    return pat


@reward(params=TagParams)
def soft_format(sample: Sample, params: TagParams) -> float:
    """Both tag pairs present, reasoning before answer, anything around them."""
    found = _soft_pattern(params.reasoning_tag, params.answer_tag).search(sample.text)
    return params.score if found else 0.0


@hookimpl
def register_rewards(register):  # type: ignore[no-untyped-def]
    register(soft_format)
