"""examples/gui-navigation.yaml and its sample data: the SEEDS C case 2 schedule."""

from __future__ import annotations

import json
from pathlib import Path

from rewardkit import RewardSet

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_stage_one_is_smooth_half_and_half_stage_two_strict_point_one_point_nine() -> None:
    rs = RewardSet.from_file(EXAMPLES / "gui-navigation.yaml")
    assert rs.weights(0) == rs.weights(19) == {"format": 0.5, "accuracy": 0.5}
    assert rs.weights(20) == rs.weights(500) == {"format": 0.1, "accuracy": 0.9}
    accuracy = rs.components["accuracy"]
    assert accuracy.stage_at(19).reward.params.mode == "smooth"
    assert accuracy.stage_at(20).reward.params.mode == "strict"


def test_every_sample_row_is_graded_at_both_stages() -> None:
    rs = RewardSet.from_file(EXAMPLES / "gui-navigation.yaml")
    lines = (EXAMPLES / "data" / "gui-navigation.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in lines.splitlines()]
    assert 10 <= len(rows) <= 30
    for step in (0, 20):
        assert None not in rs.score(rows, step=step).totals
