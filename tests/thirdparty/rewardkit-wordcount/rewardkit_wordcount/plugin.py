"""Word-count rewards, registered through rewardkit's ``register_rewards`` hook."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, model_validator

from rewardkit import Params, Reward, Sample, Score, hookimpl, reward


class WordRangeParams(Params):
    min_words: int = Field(1, ge=0)
    max_words: int = Field(100, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> WordRangeParams:
        if self.min_words > self.max_words:
            raise ValueError("min_words must not exceed max_words")
        return self


@reward(params=WordRangeParams)
def word_count_range(sample: Sample, params: WordRangeParams) -> Score:
    """1.0 when the completion has between min_words and max_words words."""
    n = len(sample.text.split())
    inside = params.min_words <= n <= params.max_words
    return Score.ok(1.0 if inside else 0.0, f"{n} words", words=n)


class GroupDiversity(Reward):
    """Share of the group's completions that are distinct (same value for each)."""

    name = "group_diversity"
    group = True

    def score_group(self, samples: Sequence[Sample]) -> list[float]:
        distinct = len({s.text.strip() for s in samples})
        return [distinct / len(samples)] * len(samples)


@hookimpl
def register_rewards(register):
    register(word_count_range)
    register(GroupDiversity)
