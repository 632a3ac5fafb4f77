"""Writes gsm8k-labelled.jsonl: 6 GSM8K-style questions (those of gsm8k.jsonl) x 4
completions each, hand-written in the layout of gsm8k-rlvr.jsonl (some without the
``####`` line, some wrong, one hedged), and a human label per row in ``correct``: 1 when
the completion commits to the gold answer as its final answer, else 0. The label is the
reading of a person, not of a reward (see docs/verify-your-reward.md).

    python examples/data/make_gsm8k_labelled.py   # rewrites the file beside this script
"""

import json
from pathlib import Path

H = "\n#### The final answer is "
GROUPS = [
    ("A baker makes 24 muffins in the morning and 18 in the afternoon. She sells 30 of "
     "them. How many muffins are left?", "12", [
         (f"24 + 18 = 42 muffins. She sells 30, so 42 - 30 = 12 are left.{H}12", 1),
         ("24 + 18 = 42, and 42 - 30 = 12 muffins are left.", 1),
         (f"24 + 18 = 42, 42 - 24 = 18.{H}18", 0),
         (f"She sells 30 of 42, so 12 remain.{H}12 muffins", 1)]),
    ("Tom reads 15 pages a day. How many pages does he read in 3 weeks?", "315", [
        (f"3 weeks have 21 days; 21 * 15 = 315.{H}315", 1),
        (f"15 * 3 = 45.{H}45", 0),
        ("21 days at 15 pages a day is 315 pages.", 1),
        (f"3 weeks is 21 days, so 21 * 15 = 315 pages.{H}315 or 330", 0)]),
    ("A bike costs $240. Maya has saved $65 and earns $25 a week. How many more weeks "
     "must she save to buy the bike?", "7", [
         (f"240 - 65 = 175, and 175 / 25 = 7.{H}7 weeks", 1),
         (f"240 / 25 = 9.6, so 10 weeks.{H}10", 0),
         ("She needs 7 weeks, because 7 * 25 = 175 covers the 175 dollars left.", 1),
         ("She still needs 240 - 65 = 175 dollars.", 0)]),
    ("A farmer has 58 chickens and 23 cows. How many legs do the animals have "
     "altogether?", "208", [
         (f"58 * 2 = 116, 23 * 4 = 92, 116 + 92 = 208.{H}208", 1),
         (f"58 * 2 = 116, 23 * 4 = 92, 116 + 92 = 208.{H}210", 0),
         ("58 + 23 = 81 animals, 81 * 4 = 324 legs.", 0),
         ("Legs: 58 * 2 + 23 * 4 = 208", 1)]),
    ("A shirt costs $40 and is on sale for 25% off. What is the sale price?", "30", [
        (f"25% of $40 is $10, so the price is $30.{H}$30", 1),
        (f"25% of 40 is 10.{H}10", 0),
        ("The discount is $10, so the shirt costs $30.", 1),
        (f"40 - 25 = 15.{H}15", 0)]),
    ("Noah had 120 marbles. He gave a third of them to his sister and 15 to a friend. "
     "How many does he have left?", "65", [
         (f"A third is 40. He gives 40 + 15 = 55 and keeps 120 - 55 = 65.{H}65", 1),
         (f"120 / 3 = 40, 120 - 40 = 80.{H}80", 0),
         ("A third of 120 is 40; 120 - 40 - 15 = 65 marbles.", 1),
         (f"He keeps 65.{H}65", 1)]),
]


def main() -> None:
    path = Path(__file__).with_name("gsm8k-labelled.jsonl")
    with path.open("w") as fh:
        for question, gold, completions in GROUPS:
            for completion, label in completions:
                row = {"prompt": f"Question: {question}\nSolution:",
                       "completion": " " + completion, "reference": gold,
                       "correct": label}
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
