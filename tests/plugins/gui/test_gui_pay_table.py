"""The pay table of docs/plugins/gui.md is what gui_navigation pays on the generator's own
1,600 tasks (``python -m rewardkit_gui.generate --samples 1600 --seed 0``): this test is
the recorded run, and fails when the code or the page drifts."""

from __future__ import annotations

import json
import random
import re
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
from rewardkit_gui.menu import MenuTask, make_tasks
from rewardkit_gui.rewards import gui_navigation

from rewardkit import Sample

PAGE = Path(__file__).resolve().parents[3] / "docs" / "plugins" / "gui.md"
OPPOSITE = {"UP": "DOWN", "DOWN": "UP", "LEFT": "RIGHT", "RIGHT": "LEFT"}


def _random_presses(rng: random.Random) -> Callable[[MenuTask], list[str]]:
    return lambda _task: [rng.choice(sorted(OPPOSITE)) for _ in range(rng.randint(1, 9))]


#: the answers of the table, by the name in its first column
def answers(rng: random.Random) -> dict[str, Callable[[MenuTask], list[str]]]:
    return {
        "no move": lambda task: ["OK"],
        "one press the wrong way": lambda task: [OPPOSITE[task.actions[0]]],
        "every press reversed": lambda task: [OPPOSITE[a] for a in task.actions],
        "random presses": _random_presses(rng),
        "all but the last press": lambda task: list(task.actions[:-1]) or ["OK"],
        "optimal": lambda task: list(task.actions),
    }


def mean_pay(mode: str, answer: str) -> float:
    """Mean gui_navigation value of ``answer`` over the generator's 1,600 tasks."""
    rng = random.Random(0)
    make = answers(rng)[answer]
    reward = gui_navigation({"mode": mode})
    values = []
    for task in make_tasks(1600, 0, replace_prob=0.15):  # the generator's default noise 0.3
        listed = json.dumps([{"action": a} for a in make(task)])
        sample = Sample(completion=f"<think>x</think><answer>{listed}</answer>",
                        reference=list(task.actions))
        values.append(reward.score(sample).value)
    return statistics.mean(values)


def table() -> list[tuple[str, dict[str, str]]]:
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("### What each mode pays", 1)[1]
    first_table = section[section.index("\n| answer |"):].split("\n\n", 1)[0]
    header, *rows = re.findall(r"^\| (.+) \|$", first_table, re.MULTILINE)
    modes = [cell.strip(" `") for cell in header.split(" | ")[1:]]
    parsed = []
    for row in rows:
        cells = [cell.strip() for cell in row.split(" | ")]
        if set(cells[0]) <= {"-", "|"}:
            continue
        name = re.sub(r" \(.*\)$", "", cells[0])
        parsed.append((name, dict(zip(modes, cells[1:], strict=True))))
    return parsed


def test_the_table_covers_every_answer_and_mode() -> None:
    rows = table()
    assert [name for name, _ in rows] == list(answers(random.Random(0)))
    assert all(set(values) == {"smooth", "progress", "strict"} for _, values in rows)


@pytest.mark.parametrize(("answer", "values"), table())
def test_the_table_is_what_gui_navigation_pays(answer: str, values: dict[str, str]) -> None:
    for mode, shown in values.items():
        assert f"{mean_pay(mode, answer):.3f}" == shown, (answer, mode)
