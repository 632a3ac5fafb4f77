"""``fallback:`` on a component (rule-then-judge): the config's checks, and what the
metrics of ``rewardkit score`` say. The judge itself over HTTP: tests/plugins/judge/
test_judge_fallback.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rewardkit import RewardSet
from rewardkit.config import ConfigError, parse_config

REWARDKIT = Path(sys.executable).with_name("rewardkit")


def config(**fallback: Any) -> dict[str, Any]:
    return {"rewards": {"accuracy": {"reward": "exact_answer", "fallback": fallback}}}


@pytest.mark.parametrize(("fallback", "where", "says"), [
    ({"reward": "math_answr"}, "rewards.accuracy.fallback.reward", "math_answer"),
    ({"reward": "group_length"}, "rewards.accuracy.fallback.reward", "group reward"),
    ({"reward": "math_answer", "params": {"tolerance_x": 1}},
     "rewards.accuracy.fallback.params", "tolerance_x"),
    ({"reward": "math_answer", "below": "high"}, "rewards.accuracy.fallback.below", "number"),
    ({"reward": "math_answer", "weight": 2}, "rewards.accuracy.fallback", "weight"),
    ({"params": {}}, "rewards.accuracy.fallback.reward", "required"),
])
def test_a_bad_fallback_is_a_config_error_naming_its_key(fallback: dict[str, Any], where: str,
                                                         says: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(config(**fallback), "c.yaml")
    text = err.value.render()
    assert where in text and says in text, text


def test_a_component_without_fallback_has_no_fallback_metrics() -> None:
    rs = RewardSet.from_dict({"rewards": {"accuracy": {"reward": "exact_answer"}}})
    result = rs.score([{"completion": "<answer>41</answer>", "reference": "42"}])
    assert "fallback" not in result.metrics["components"]["accuracy"]
    assert not any("fallback" in key for key in result.flat_metrics())


def test_the_fallback_metrics_are_logged_when_nothing_was_asked() -> None:
    # fixed logger keys: a batch the rule paid whole still reports 0 asked
    rs = RewardSet.from_dict(config(reward="math_answer"))
    result = rs.score([{"completion": "<answer>42</answer>", "reference": "42"}])
    assert result.metrics["components"]["accuracy"]["fallback"]["asked_rate"] == 0.0
    assert result.flat_metrics()["rewards/accuracy/fallback_asked_rate"] == 0.0


def test_rewardkit_score_sums_the_fallback_over_its_batches(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config(reward="math_answer")))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"prompt": f"q{i}", "completion": c, "reference": "42"})
                            + "\n" for i, c in enumerate(
                                ["<answer>42</answer>", "<answer>42.0</answer>",
                                 "<answer>41</answer>", "<answer>84/2</answer>"])))
    run = subprocess.run([str(REWARDKIT), "score", str(path), str(rows), "--json",
                          "--batch-size", "1"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    fallback = summary["components"]["accuracy"]["fallback"]
    assert (fallback["asked"], fallback["flips"], fallback["errors"]) == (3, 2, 0)
    assert fallback["flip_rate"] == 0.5


def test_rewardkit_scores_table_says_what_the_fallback_did(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config(reward="math_answer")))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"completion": c, "reference": "42"}) + "\n"
                            for c in ["<answer>42</answer>", "<answer>42.0</answer>"]))
    run = subprocess.run([str(REWARDKIT), "score", str(path), str(rows), "--out",
                          str(tmp_path / "scored.jsonl")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "accuracy: fallback asked on 1 sample(s) (50.0%), flipped 1, failed 0" in run.stdout
