"""examples/gsm8k-five-rewards.yaml against the TRL GSM8K tutorial's own five rewards
(SEEDS A): the same value per component on the outputs a model writes, and the documented
places where the example is deliberately stricter.

The tutorial's functions are written here from their description (shared/SEEDS.md and the
tutorial's behaviour): the answer is the text after the last ``<answer>``, cut at the first
``</answer>`` after it, stripped (whatever follows is ignored, and with no tag at all it is
the whole output); correctness compares it with the gold string; the integer reward asks
``str.isdigit``; the soft format is a regex anchored at the start only (reasoning block,
whitespace, answer block, then anything); the strict format is the whole output, newlines
after each tag; the tag count pays 0.125 per piece found once, less 0.001 per character
after the closing answer tag and its newline.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rewardkit import RewardSet

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gsm8k-five-rewards.yaml"
GOLD = "75"


def _tutorial_answer(text: str) -> str:
    return text.split("<answer>")[-1].split("</answer>")[0].strip()


def _tutorial_xml_count(text: str) -> float:
    value = 0.0
    for piece in ("<reasoning>\n", "\n</reasoning>\n", "\n<answer>\n", "\n</answer>"):
        if text.count(piece) == 1:
            value += 0.125
    if text.count("\n</answer>") == 1:
        after = text.split("\n</answer>")[-1]
        value -= len(after.removeprefix("\n")) * 0.001
    return value


def tutorial(text: str) -> dict[str, float]:
    """The tutorial's five rewards on one completion."""
    answer = _tutorial_answer(text)
    soft = re.match(r"<reasoning>.*?</reasoning>\s*<answer>.*?</answer>", text, re.DOTALL)
    strict = re.fullmatch(r"<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n", text,
                          re.DOTALL) and text.count("<reasoning>") == 1
    return {
        "correctness": 2.0 if answer == GOLD else 0.0,
        "integer": 0.5 if answer.isdigit() else 0.0,
        "soft_format": 0.5 if soft else 0.0,
        "strict_format": 0.5 if strict else 0.0,
        "xml_count": round(_tutorial_xml_count(text), 9),
    }


LAYOUT = "<reasoning>\n6 * 14 = 84, 84 - 9 = 75\n</reasoning>\n<answer>\n{}\n</answer>\n"

#: outputs a model writes while learning the format: the example pays what the tutorial pays
AGREED = {
    "exact layout, right answer": LAYOUT.format("75"),
    "exact layout, wrong answer": LAYOUT.format("74"),
    "text after the answer block": LAYOUT.format("75") + "Hope this helps you a lot!",
    "text after the block on its line": LAYOUT.format("75")[:-1] + " Hope this helps!",
    "a new paragraph after the block": LAYOUT.format("75") + "\nLet me know if you need more.\n",
    "wrong answer and text after": LAYOUT.format("74") + "Hope this helps you a lot!",
    "decimal answer and text after": LAYOUT.format("75.0") + "Done.",
    "dollar answer and text after": LAYOUT.format("$75") + "Done.",
    "answer with words and text after": LAYOUT.format("75 apples") + "Done.",
    "one line, no newlines": "<reasoning>6 * 14 = 84</reasoning><answer>75</answer>",
    "spaces in the answer block": "<reasoning>\nx\n</reasoning>\n<answer> 75 </answer>",
    "a blank line between the blocks": LAYOUT.format("75").replace("\n<answer>", "\n\n<answer>"),
    "multi-line reasoning, text after": "<reasoning>\nFirst 6 * 14 = 84.\nThen 84 - 9 = 75.\n"
                                        "</reasoning>\n<answer>\n75\n</answer>\nThanks!",
    "answer block only": "<answer>\n75\n</answer>",
    "reasoning without an answer": "<reasoning>\n75\n</reasoning>\n",
    "a negative integer": LAYOUT.format("-75"),
}

#: where the example is stricter than the tutorial, on purpose (the hardened defaults it
#: keeps): component -> (tutorial, example). Each is a cheap output a policy finds.
DEPARTURES = {
    "no tags at all: the tutorial reads the whole output as the answer": (
        "75", {"correctness": (2.0, 0.0), "integer": (0.5, 0.0)}),
    "an empty answer block: the tutorial's soft format pays it": (
        "<reasoning>\nx\n</reasoning>\n<answer>\n\n</answer>\n",
        {"soft_format": (0.5, 0.0), "strict_format": (0.5, 0.0), "xml_count": (0.5, 0.25)}),
    "the blocks twice: the tutorial's soft format pays repeated tags": (
        LAYOUT.format("75") * 2,
        {"soft_format": (0.5, 0.0), "integer": (0.5, 0.0), "xml_count": (0.0, -0.072)}),
    "text before the reasoning block: the example charges it in the tag count": (
        "Sure! " + LAYOUT.format("75"), {"xml_count": (0.5, 0.494)}),
    "text around blocks without their newlines: the tutorial's count charges only text "
    "after a '\\n</answer>'": (
        "<reasoning>6 * 14 = 84</reasoning> <answer>75</answer> Done!",
        {"xml_count": (0.0, -0.007)}),
}


@pytest.fixture(scope="module")
def example() -> RewardSet:
    return RewardSet.from_file(EXAMPLE)


@pytest.mark.parametrize("name", sorted(AGREED))
def test_example_pays_what_the_tutorial_pays(example: RewardSet, name: str) -> None:
    text = AGREED[name]
    result = example.score([{"completion": text, "reference": GOLD}])
    ours = {component: round(result.values(component)[0] or 0.0, 9)
            for component in tutorial(text)}
    assert ours == tutorial(text), name


@pytest.mark.parametrize("name", sorted(DEPARTURES))
def test_example_departs_from_the_tutorial_only_where_documented(
    example: RewardSet, name: str
) -> None:
    text, differing = DEPARTURES[name]
    result = example.score([{"completion": text, "reference": GOLD}])
    theirs = tutorial(text)
    for component, value in theirs.items():
        ours = round(result.values(component)[0] or 0.0, 9)
        expected = differing.get(component, (value, value))
        assert (value, ours) == expected, (name, component)
