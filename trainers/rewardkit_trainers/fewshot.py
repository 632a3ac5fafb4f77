"""Few-shot prompts for GSM8K-style data (the 8-shot RLVR recipe).

A base model that has never been instruction-tuned learns the answer format from worked
examples in its prompt. Each example is written as::

    Question: <question>
    Solution: Let's think step by step. <reasoning>
    #### The final answer is <N>

and the prompt ends with the new question and ``Solution: Let's think step by step.``,
so the completion continues in the same format; ``final_answer_line`` and
``math_answer`` (``extract: [hashes]``) then grade it. The source reports 41% on GSM8K
after GRPO with 8 shots against 6% with none, so the shots matter.

Data is local JSONL in the GSM8K layout, one ``{"question": ..., "answer": ...}`` per
line, the answer ending in ``#### N``.

>>> shots = [GSM8KExample("What is 2 + 3?", "2 + 3 = 5.", "5")]
>>> print(build_prompt("What is 4 + 4?", shots))
Question: What is 2 + 3?
Solution: Let's think step by step. 2 + 3 = 5.
#### The final answer is 5
<BLANKLINE>
Question: What is 4 + 4?
Solution: Let's think step by step.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOLUTION_LEAD = "Solution: Let's think step by step."
FINAL_ANSWER = "#### The final answer is"

_CALCULATOR = re.compile(r"<<[^<>]*>>")


class FewShotDataError(ValueError):
    """A line of a GSM8K-style file that cannot be used (file, line and why)."""


@dataclass(frozen=True)
class GSM8KExample:
    """One worked problem: the question, the reasoning, and the final answer."""

    question: str
    solution: str
    answer: str

    @classmethod
    def from_row(cls, row: dict[str, Any], strip_calculator: bool = True) -> GSM8KExample:
        """Split a GSM8K row; the answer is what follows the last ``####``, commas removed.

        ``strip_calculator`` drops GSM8K's ``<<48/2=24>>`` annotations from the reasoning.
        """
        question = row.get("question")
        full = row.get("answer")
        if not isinstance(question, str) or not question.strip():
            raise ValueError("missing or empty 'question'")
        if not isinstance(full, str) or "####" not in full:
            raise ValueError("'answer' must be a string ending in '#### <answer>'")
        reasoning, _, final = full.rpartition("####")
        final = final.strip().replace(",", "")
        if not final:
            raise ValueError("nothing after '####' in 'answer'")
        if strip_calculator:
            reasoning = _CALCULATOR.sub("", reasoning)
        return cls(question.strip(), reasoning.strip(), final)

    def as_shot(self) -> str:
        """The example as written in a prompt."""
        return (f"Question: {self.question}\n{SOLUTION_LEAD} {self.solution}\n"
                f"{FINAL_ANSWER} {self.answer}")


def load_examples(path: str | Path, strip_calculator: bool = True) -> list[GSM8KExample]:
    """Read a GSM8K-style JSONL file; blank lines are skipped.

    Raises :class:`FewShotDataError` naming the file and line of the first bad row.
    """
    path = Path(path)
    examples = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError(f"expected a JSON object, got {type(row).__name__}")
                examples.append(GSM8KExample.from_row(row, strip_calculator))
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                raise FewShotDataError(f"{path}:{number}: {exc}") from None
    return examples


def build_prompt(question: str, shots: Sequence[GSM8KExample]) -> str:
    """The few-shot prompt: every shot, a blank line between, then ``question`` followed
    by the solution lead-in the model is to continue."""
    parts = [shot.as_shot() for shot in shots]
    parts.append(f"Question: {question.strip()}\n{SOLUTION_LEAD}")
    return "\n\n".join(parts)


def choose_shots(pool: Sequence[GSM8KExample], n_shots: int = 8, seed: int | None = None,
                 exclude: GSM8KExample | None = None) -> list[GSM8KExample]:
    """``n_shots`` examples from ``pool``, never ``exclude`` (the question being asked).

    ``seed=None`` takes the first ones (the same fixed shots for every prompt, as in the
    recipe); a seed draws them at random, reproducibly. Fewer than ``n_shots`` usable
    examples is an error rather than a silently shorter prompt.
    """
    if n_shots < 0:
        raise ValueError("n_shots must be >= 0")
    usable = [ex for ex in pool if ex != exclude]
    if len(usable) < n_shots:
        raise ValueError(f"need {n_shots} shots but the pool has only {len(usable)} "
                         "usable examples")
    if seed is None:
        return usable[:n_shots]
    return random.Random(seed).sample(usable, n_shots)


def fewshot_samples(questions: str | Path | Sequence[GSM8KExample],
                    shots: str | Path | Sequence[GSM8KExample] | None = None,
                    n_shots: int = 8, seed: int | None = None) -> list[dict[str, Any]]:
    """Training rows ``{"prompt", "reference", "question"}``: one per question, its
    prompt built with shots from ``shots`` (default: the questions file itself, never
    using a question as its own shot). ``reference`` is the gold answer, as the
    math rewards read it.

    >>> rows = fewshot_samples("examples/data/gsm8k.jsonl", n_shots=2)
    >>> rows[0]["reference"]
    '12'
    """
    items = load_examples(questions) if isinstance(questions, str | Path) else list(questions)
    if shots is None:
        pool = items
    else:
        pool = load_examples(shots) if isinstance(shots, str | Path) else list(shots)
    rows = []
    for i, item in enumerate(items):
        chosen = choose_shots(pool, n_shots, None if seed is None else seed + i, exclude=item)
        rows.append({"prompt": build_prompt(item.question, chosen), "reference": item.answer,
                     "question": item.question})
    return rows
