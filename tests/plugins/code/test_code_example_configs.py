"""examples/code-execution.yaml and examples/custom-python.yaml with their sample data:
every row scores what its ``expected`` column says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardkit import RewardSet, load_config

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.parametrize(
    ("config", "data"),
    [
        ("code-execution.yaml", "code-execution.jsonl"),
        ("custom-python.yaml", "custom-python.jsonl"),
    ],
)
def test_every_sample_row_scores_its_expected_total(config: str, data: str) -> None:
    rs = RewardSet.from_file(EXAMPLES / config)
    lines = (EXAMPLES / "data" / data).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert 8 <= len(rows) <= 30
    totals = rs.score(rows).totals
    assert totals == pytest.approx([row["expected"] for row in rows])


def test_the_custom_example_source_is_compiled_at_load() -> None:
    config = load_config(EXAMPLES / "custom-python.yaml")
    assert {c.reward for c in config.rewards.values()} == {"python"}
