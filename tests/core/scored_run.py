"""A small scored run for the report tests: groups of four completions per prompt, with
the shapes a report must show (format paid but answer wrong, long and repetitive
outputs paid well, a group with no variance, a grading error), scored by the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CONFIG = """\
rewards:
  format: {reward: soft_format, weight: 0.5}
  accuracy:
    reward: exact_answer
    stages:
      - {until_step: 50, weight: 1.0}
      - {weight: 2.0}
  number: {reward: answer_is_number, weight: {schedule: linear, start: 0.0, end: 0.5, steps: 80}}
"""

RAMBLE = "<think>" + "I add them and I add them again. " * 120 + "</think>\n<answer>{}</answer>"


def samples() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for a in range(1, 9):
        gold = str(a + 3)
        prompt = f"add {a} and 3"
        completions = [
            f"<think>{a}+3</think>\n<answer>{gold}</answer>",      # right
            f"<think>{a}+3</think>\n<answer>{a + 4}</answer>",     # format paid, answer wrong
            gold,                                                  # no format
            RAMBLE.format(gold) if a % 2 else f"<think>?</think>\n<answer>x{a}</answer>",
        ]
        rows += [{"prompt": prompt, "completion": c, "reference": gold, "task": "math"}
                 for c in completions]
    # every completion alike: a group with no learning signal
    rows += [{"prompt": "add 0 and 3", "completion": "<think>0+3</think>\n<answer>3</answer>",
              "reference": "3", "task": "math"}] * 4
    # no reference: the accuracy reward cannot grade it (status error)
    rows += [{"prompt": "add 9 and 3", "completion": f"<think>9+3</think>\n<answer>{v}</answer>",
              "task": "math"} for v in (12, 13)]
    return rows


def write_scored_run(folder: Path) -> tuple[Path, Path]:
    """Write the config and the samples into ``folder``, score them with
    ``rewardkit score``; returns (config, scored JSONL)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "rewards.yaml"
    config.write_text(CONFIG)
    src = folder / "samples.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in samples()))
    scored = folder / "scored.jsonl"
    subprocess.run([sys.executable, "-m", "rewardkit.cli", "score", str(config), str(src),
                    "--out", str(scored)], check=True, capture_output=True, timeout=120)
    return config, scored
