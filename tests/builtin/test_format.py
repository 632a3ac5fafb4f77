"""Format rewards: behaviours beyond the golden cases (cost on adversarial input,
parameter validation, registration)."""

from __future__ import annotations

import re
import time
from pathlib import Path

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
    start = time.process_time()  # CPU: the cost, whatever the machine's load
    instance.score(Sample(completion=ADVERSARIAL[text]))
    assert time.process_time() - start < 0.5


def test_soft_format_pays_what_strict_format_pays() -> None:
    strict, soft = get_reward("strict_format")(), get_reward("soft_format")()
    for text in ("<think>\nplan\n</think>\n<answer>\n4\n</answer>",
                 "<think>\nplan\n</think>\n<answer>\n4\n</answer>\n"):
        assert strict.score(Sample(completion=text)) == 1.0
        assert soft.score(Sample(completion=text)) == 1.0


@pytest.mark.parametrize("text", [
    "junk " * 2_000 + "<think>\nx\n</think>\n<answer>\n4\n</answer>",
    "<think>\nx\n</think>\n" + "junk " * 2_000 + "\n<answer>\n4\n</answer>",
])
def test_tag_count_charges_junk_before_and_between_the_blocks(text: str) -> None:
    score = get_reward("tag_count")().score(Sample(completion=text))
    assert score.value == pytest.approx(0.5 - 10.0)


def test_tag_count_charges_junk_hidden_before_a_second_closing_answer_tag() -> None:
    honest = "<think>\nx\n</think>\n<answer>\n4\n</answer>"
    hacked = honest + "\n" + "junk " * 2_000 + "</answer>"
    reward = get_reward("tag_count")()
    assert reward.score(Sample(completion=honest)).value == 0.5
    score = reward.score(Sample(completion=hacked))
    assert score.details is not None and score.details["outside_chars"] == 10_009
    assert score.value == pytest.approx(0.375 - 10.009)  # docs/rewards.md: -9.634


@pytest.mark.parametrize("reward", ["soft_format", "strict_format"])
@pytest.mark.parametrize("invisible", ["\u200b", "\u2060\ufeff", "\u00ad", "\u202e\u200f",
                                       "\u3164", "\u2800", "\U000e0041", "\x00\x07"])
def test_invisible_reasoning_is_empty_reasoning(reward: str, invisible: str) -> None:
    text = f"<think>\n{invisible}\n</think>\n<answer>\n4\n</answer>"
    assert get_reward(reward)().score(Sample(completion=text)) == 0.0
    assert get_reward(reward)({"min_reasoning_chars": 0}).score(Sample(completion=text)) == 1.0


def test_min_reasoning_chars_counts_non_space_characters() -> None:
    reward = get_reward("strict_format")({"min_reasoning_chars": 3})
    short = "<think>\n a \n</think>\n<answer>\n1\n</answer>"
    enough = "<think>\nabc\n</think>\n<answer>\n1\n</answer>"
    assert reward.score(Sample(completion=short)) == 0.0
    assert reward.score(Sample(completion=enough)) == 1.0


def test_tag_count_reports_what_it_counted() -> None:
    score = get_reward("tag_count")().score(
        Sample(completion="<think>\nx\n</think>\n<answer>\n1\n</answer>\nabc"))
    assert score.details == {"tags": 4, "outside_chars": 3}


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


def _docs_rows(heading: str) -> list[tuple[str, str]]:
    """(completion, value column) of the example table under ``heading`` in
    docs/rewards.md; ``\\n`` and ``\\uXXXX`` in a completion are its escapes."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "rewards.md").read_text()
    section = page.split(heading, 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `(<.+?)` \| (.+?) \|$", section, re.MULTILINE)
    return [(text.encode().decode("unicode_escape"), value) for text, value in rows]


def test_soft_format_examples_in_the_docs_are_what_it_does() -> None:
    rows = _docs_rows("### soft_format\n")
    assert len(rows) >= 6
    reward = get_reward("soft_format")({"reasoning_tag": "reasoning", "score": 0.5})
    accepting = get_reward("soft_format")({"reasoning_tag": "reasoning", "score": 0.5,
                                           "min_reasoning_chars": 0})
    for text, value in rows:
        assert reward.score(Sample(completion=text)) == float(value.split()[0]), text
        if "0.5 with `min_reasoning_chars: 0`" in value:
            assert accepting.score(Sample(completion=text)) == 0.5, text


def test_final_answer_line_ends_output_false_is_the_seeds_search() -> None:
    """ends_output: false pays the pattern anywhere (what the seed's regex did), so a base
    model's invented follow-up question after its line keeps the format credit."""
    going_on = ("9 * 2 = 18.\n#### The final answer is 18\n\nQuestion: What is 1 + 1?\n"
                "#### The final answer is 2")
    rewards = RewardSet.from_dict({"rewards": {
        "ends": {"reward": "final_answer_line"},
        "anywhere": {"reward": "final_answer_line", "params": {"ends_output": False}}}})
    result = rewards.score([{"completion": going_on}])
    assert (result.values("ends"), result.values("anywhere")) == ([0.0], [1.0])
