"""Per-turn values on each backend: every trainer rewardkit plans for takes one reward per
completion, so a per-turn component reaches it reduced by its ``turns`` setting, and the
plan (``rewardkit train --dry-run``) says so, naming the per-turn components and why
(docs/agents.md, "Per-turn values on each backend"). That verl places that one number at
the last valid token, and that GRPO gives per-turn placement the same advantages, is
checked through verl's own code in test_verl_multiturn.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from backend_venvs import ROOT

CONFIG = ROOT / "examples/tool-use.yaml"


@pytest.mark.parametrize("backend, why", [
    ("trl", "one reward per completion from each reward function"),
    ("swift", "step_rewards are summed into one total_reward"),
    ("verl", "assemble_rm_scores, which is handed the floats only"),
])
def test_the_plan_says_per_turn_values_reach_the_backend_as_one_number(
        backend: str, why: str, tmp_path: Path):
    from rewardkit_trainers.launch.runner import dry_run, load_run

    plan = load_run(CONFIG, backend=backend, output_dir=str(tmp_path / "run"))
    note = dry_run(plan)["per_turn"]
    assert note.startswith(f"per-turn values reach {backend} as one number per completion")
    assert "(valid_per_turn (turns: mean))" in note  # the example's per-turn component
    assert why in note


def test_a_config_without_per_turn_components_names_none(tmp_path: Path):
    from rewardkit_trainers.launch.runner import dry_run, load_run

    config = tmp_path / "c.yaml"
    config.write_text("rewards:\n  fmt: {reward: soft_format}\ntrain:\n"
                      "  model: Qwen/Qwen2.5-0.5B-Instruct\n"
                      f"  dataset: {{train: {ROOT / 'examples/data/tool-use.jsonl'}}}\n"
                      "  backend: swift\n  max_steps: 2\n")
    note = dry_run(load_run(config, output_dir=str(tmp_path / "run")))["per_turn"]
    assert "turns reduction: ms-swift's GRPO trainer" in note
