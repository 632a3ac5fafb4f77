"""multiple_choice and math_answer's option-letter golds: the documented examples, the
options a sample carries, and the cost of reading any input."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from rewardkit import Sample, Status, get_reward, parse_config
from rewardkit.builtin.choice import prompt_options, sample_options

PAGE = Path(__file__).resolve().parents[2] / "docs" / "rewards.md"


def _section() -> str:
    page = PAGE.read_text(encoding="utf-8")
    return page.split("### multiple_choice\n", 1)[1].split("\n## ", 1)[0]


def test_the_documented_examples_are_what_it_does() -> None:
    rows = re.findall(r"^\| `(.+?)` \| `(.+?)` \| (1|0|error) \|$", _section(), re.MULTILINE)
    assert len(rows) >= 8
    reward = get_reward("multiple_choice")()
    for completion, reference, expected in rows:
        score = reward.score(Sample(completion=completion, reference=reference))
        got = "error" if score.status is Status.ERROR else f"{score.value:g}"
        assert got == expected, (completion, reference, score)


def test_the_documented_config_snippet_is_valid() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", _section(), re.DOTALL)
    assert blocks
    for block in blocks:
        parse_config({"rewards": yaml.safe_load(block)}, "docs/rewards.md")


def test_options_come_from_a_column_a_mapping_or_the_prompt() -> None:
    listed = Sample(prompt="Pick one.\n(A) red\n(B) blue\n(C) green", completion="")
    assert sample_options(listed) == {"A": "red", "B": "blue", "C": "green"}
    column = Sample(prompt="", completion="", metadata={"choices": ["1", "2"]})
    assert sample_options(column) == {"A": "1", "B": "2"}
    mapping = Sample(prompt="", completion="", metadata={"opts": {"(A)": "x", "B": "y"}})
    assert sample_options(mapping, "opts") == {"A": "x", "B": "y"}
    assert prompt_options("Step B. Then we add 2.") == {}  # a stray letter is no list


def test_a_named_options_column_is_read() -> None:
    reward = get_reward("multiple_choice")({"options_column": "opts"})
    sample = Sample(completion="\\boxed{blue}", reference="B",
                    metadata={"opts": ["red", "blue"]})
    assert reward.score(sample).value == 1.0
    off = get_reward("multiple_choice")({"options_column": "opts", "match_value": False})
    assert off.score(sample).value == 0.0


def test_math_answer_choice_false_leaves_a_letter_gold_to_math_verify() -> None:
    pytest.importorskip("math_verify")
    on = get_reward("math_answer")()
    off = get_reward("math_answer")({"choice": False})
    sample = Sample(completion="B) 2x(x-7)", reference="B")
    assert on.score(sample).value == 1.0
    assert off.score(sample).value == 0.0


def test_long_hostile_outputs_are_read_in_bounded_time() -> None:
    reward = get_reward("multiple_choice")()
    prompt = "\n".join(f"{c}) option {c}" for c in "ABCDEFGHIJ")
    for text in ("(A) " * 50_000, "A or " * 50_000, "\\boxed{A}" * 20_000,
                 "**" * 100_000 + "B", "(" * 100_000, "answer is" + " " * 8000 + "!",
                 "option" + " " * 8000 + "!"):
        start = time.process_time()  # CPU: the cost, whatever the machine's load
        score = reward.score(Sample(prompt=prompt, completion=text, reference="B"))
        assert time.process_time() - start < 0.5, text[:20]
        assert score.value == 0.0


# -- the labelled commitment phrasings (tests/cases/builtin/multiple_choice_phrasings) -------
PHRASINGS = Path(__file__).resolve().parents[1] / "cases" / "builtin" / \
    "multiple_choice_phrasings.cases.yaml"


def _mmlu_pro_letter(text: str) -> str | None:
    """MMLU-Pro's extraction rule, written from its description: "answer is (X)" first,
    else the last "Answer: X", else the last capital A-J standing alone."""
    for pattern, flags in ((r"answer is \(?([A-J])\)?", 0), (r".*[aA]nswer:\s*([A-J])", re.S),
                           (r"\b([A-J])\b(?!.*\b[A-J]\b)", re.S)):
        found = re.search(pattern, text, flags)
        if found:
            return found.group(1)
    return None


def test_the_labelled_phrasings_agree_at_least_as_often_as_mmlu_pros_rule() -> None:
    cases = yaml.safe_load(PHRASINGS.read_text(encoding="utf-8"))["cases"]
    reward = get_reward("multiple_choice")()
    ours = theirs = 0
    for case in cases:
        sample = Sample(prompt=case["prompt"], completion=case["completion"],
                        reference=case["reference"])
        ours += reward.score(sample).value == case["expect"]
        theirs += float(_mmlu_pro_letter(case["completion"]) == case["reference"]) == \
            case["expect"]
    assert len(cases) >= 60
    assert ours == len(cases), f"{ours}/{len(cases)}"
    assert ours >= theirs, f"MMLU-Pro's rule {theirs}/{len(cases)}"
