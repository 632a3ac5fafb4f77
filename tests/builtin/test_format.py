"""Format rewards: behaviours beyond the golden cases (cost on adversarial input,
parameter validation, registration)."""

from __future__ import annotations

import time

import pytest

from rewardkit import ConfigError, ExecutionMode, RewardSet, Sample, get_reward

FORMAT_REWARDS = ["soft_format", "strict_format", "tag_count", "answer_is_number",
                  "final_answer_line"]

# inputs that make a lazy `<r>.*?</r>\s*<a>.*?</a>` search, or a fullmatch over repeated
# blocks, take quadratic time
ADVERSARIAL = {
    "opening_tags": "<think>" * 150_000,
    "junctions_without_close": "<think>" + "</think><answer>" * 60_000,
    "closes_without_answer": "<think>x" + "</think> " * 100_000 + "<answer>",
    "repeated_strict_blocks": "<think>\nx\n</think>\n<answer>\n1\n</answer>\n" * 25_000,
}


@pytest.mark.parametrize("name", FORMAT_REWARDS)
def test_format_rewards_are_inline(name: str) -> None:
    assert get_reward(name).mode is ExecutionMode.INLINE


@pytest.mark.parametrize("reward", FORMAT_REWARDS)
@pytest.mark.parametrize("text", sorted(ADVERSARIAL))
def test_format_rewards_stay_linear_on_adversarial_tags(reward: str, text: str) -> None:
    instance = get_reward(reward)()
    start = time.perf_counter()
    instance.score(Sample(completion=ADVERSARIAL[text]))
    assert time.perf_counter() - start < 0.5


def test_soft_format_finds_a_block_after_an_unrelated_close() -> None:
    text = "</think> noise <think>plan</think>\n<answer>4</answer>"
    assert get_reward("soft_format")().score(Sample(completion=text)) == 1.0


def test_min_reasoning_chars_counts_non_space_characters() -> None:
    reward = get_reward("strict_format")({"min_reasoning_chars": 3})
    short = "<think>\n a \n</think>\n<answer>\n1\n</answer>"
    enough = "<think>\nabc\n</think>\n<answer>\n1\n</answer>"
    assert reward.score(Sample(completion=short)) == 0.0
    assert reward.score(Sample(completion=enough)) == 1.0


def test_tag_count_reports_what_it_counted() -> None:
    score = get_reward("tag_count")().score(
        Sample(completion="<think>\nx\n</think>\n<answer>\n1\n</answer>\nabc"))
    assert score.details == {"tags": 4, "trailing_chars": 3}


def test_invalid_line_pattern_fails_when_the_config_loads() -> None:
    with pytest.raises(ConfigError) as err:
        RewardSet.from_dict({"rewards": {"fmt": {"reward": "final_answer_line",
                                                 "params": {"pattern": "(unclosed"}}}})
    assert "rewards.fmt.params.pattern" in err.value.render()
    assert "regular expression" in err.value.render()


def test_unknown_format_param_is_rejected() -> None:
    with pytest.raises(ConfigError) as err:
        RewardSet.from_dict({"rewards": {"fmt": {"reward": "soft_format",
                                                 "params": {"reasoning": "think"}}}})
    assert "rewards.fmt.params.reasoning" in err.value.render()
