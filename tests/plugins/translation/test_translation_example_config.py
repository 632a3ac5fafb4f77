"""examples/translation-verdict.yaml and its sample data (SEEDS C case 1)."""

from __future__ import annotations

import json
from pathlib import Path

from rewardkit import RewardSet

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_verdict_trains_loops_cost_the_agreement_is_logged() -> None:
    rs = RewardSet.from_file(EXAMPLES / "translation-verdict.yaml")
    assert rs.weights(0) == {"verdict": 1.0, "criteria_agreement": 0.0, "loops": 0.2}


def test_every_sample_row_is_graded() -> None:
    rs = RewardSet.from_file(EXAMPLES / "translation-verdict.yaml")
    lines = (EXAMPLES / "data" / "translation-verdict.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in lines.splitlines()]
    assert 10 <= len(rows) <= 30
    assert None not in rs.score(rows).totals
