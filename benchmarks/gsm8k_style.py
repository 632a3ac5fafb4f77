"""Long GSM8K-style model solutions (~1 KB each) for the speed benchmarks.

Each solution restates the problem, works through several arithmetic steps the way chat
models write them (calculator notes ``<<a*b=c>>``, dollar amounts, thousand separators,
inline ``$...$`` maths), and closes in one of the styles seen in real output: ``#### N``,
``The answer is N.``, ``\\boxed{N}``, ``A: N``, or an ``<answer>`` block after a
``<reasoning>`` block. About 60% are right; a wrong one is off in its last step. The
truth of every pair is known by construction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_NAMES = ["Janet", "Tobias", "Marisol", "Ken", "Aaliyah", "Dmitri", "Priya", "Owen"]
_ITEMS = [("eggs", "dozen"), ("apples", "crate"), ("pencils", "box"), ("tickets", "booklet"),
          ("cupcakes", "tray"), ("stamps", "sheet")]
_FILLER = [
    "Let me make sure I read the question correctly before computing anything.",
    "First, I will write down what we know from the problem statement.",
    "It helps to keep track of the units at every step so nothing gets mixed up.",
    "Now I can combine these intermediate results to get closer to the final value.",
    "Let me double-check this step, since it is easy to make an arithmetic slip here.",
    "This matches what we expect, so we can move on to the next part of the problem.",
]


@dataclass(frozen=True)
class Solution:
    gold: str
    text: str
    correct: bool
    closing: str


def _money(x: int) -> str:
    return f"${x:,}"


CLOSINGS = ("hashes", "answer_is", "boxed", "a_line", "tags")


def solutions(n: int, seed: int = 0, closings: tuple[str, ...] = CLOSINGS) -> list[Solution]:
    """``n`` solutions; ``closings`` picks the closing styles (one at random each):
    hashes, answer_is, boxed, a_line, tags, eight_shot (``#### The final answer is N``,
    the 8-shot prompt's closing) and none (cut off by the length limit in step 2)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        name = rng.choice(_NAMES)
        item, unit = rng.choice(_ITEMS)
        per_unit = rng.randint(6, 24)
        units = rng.randint(3, 60)
        price = rng.randint(2, 9)
        kept = rng.randint(1, per_unit * units // 3)
        total = per_unit * units
        sold = total - kept
        revenue = sold * price
        bonus = rng.choice([0, 0, 50, 120, 1500])
        gold = revenue + bonus
        correct = rng.random() < 0.6
        answer = gold if correct else gold + rng.choice([-price, price, -1, 10, bonus or 7])
        lines = [
            f"{name} has {units} {unit}s of {item}, and each {unit} holds {per_unit} {item}. "
            f"{name} keeps {kept} {item} and sells the rest for {_money(price)} each"
            + (f", plus a bonus of {_money(bonus)}." if bonus else "."),
            rng.choice(_FILLER),
            f"Step 1: The total number of {item} is {units} * {per_unit} = "
            f"<<{units}*{per_unit}={total}>>{total} {item}.",
            rng.choice(_FILLER),
            f"Step 2: After keeping {kept}, {name} has {total} - {kept} = "
            f"<<{total}-{kept}={sold}>>{sold} {item} left to sell.",
            f"Step 3: Selling them brings in $ {sold} \\times {price} = {revenue} $ dollars, "
            f"that is {sold} * {_money(price)} = {_money(revenue)}.",
            rng.choice(_FILLER),
            f"Step 4: Adding the bonus gives {_money(revenue)} + {_money(bonus)} = "
            f"{_money(answer)} in total.",
            rng.choice(_FILLER),
        ]
        shown = f"{answer:,}" if answer >= 1000 and rng.random() < 0.5 else str(answer)
        closing = rng.choice(closings)
        if closing == "eight_shot":
            lines.append(f"#### The final answer is {shown}")
        elif closing == "hashes":
            lines.append(f"#### {shown}")
        elif closing == "answer_is":
            lines.append(f"The answer is {shown}.")
        elif closing == "boxed":
            lines.append(f"So {name} makes $\\boxed{{{shown}}}$ dollars.")
        elif closing == "a_line":
            lines.append(f"A: {shown}")
        if closing == "none":  # cut off by the length limit in the middle of step 2
            lines = [*lines[:4], lines[4][: len(lines[4]) // 2]]
        body = "\n".join(lines)
        if closing == "tags":
            body = f"<reasoning>\n{body}\n</reasoning>\n<answer>\n{shown}\n</answer>\n"
        out.append(Solution(str(gold), body, correct, closing))
    return out
