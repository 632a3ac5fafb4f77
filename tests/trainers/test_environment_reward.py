"""RewardkitReward: a TRL environment's ``get_reward`` computed by a rewardkit config.

Checked on the example's NotesEnv (examples/agent_workspace_env.py): by hand (reset with
a row, the tools run, get_reward), and in a real TRL GRPOTrainer (CPU, a random tiny
model, two steps), which finds ``get_reward`` on the class, calls it after each rollout
and logs it as the class's own reward column.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("rewardkit_workspace")

from rewardkit_trainers.environments import WORKSPACES_ENV, RewardkitReward

from rewardkit import ConfigError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ROWS = [json.loads(line) for line in
        (EXAMPLES / "data" / "agent-workspace.jsonl").read_text().splitlines()]
FROM_ROWS = {"rewards": {"task_done": {
    "reward": "workspace_criteria", "params": {"allowed_roots": ["$" + WORKSPACES_ENV]}}}}


def notes_env() -> type:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from agent_workspace_env import NotesEnv
    finally:
        sys.path.remove(str(EXAMPLES))
    return NotesEnv


def graded(config: Any) -> Any:
    return type("Graded", (RewardkitReward, notes_env()), {"reward_config": config})


def test_get_reward_pays_for_the_state_the_rollout_left(tmp_path, monkeypatch):
    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path))
    env = graded(FROM_ROWS)()
    env.reset(**ROWS[0])  # "What is 6 times 7?", criteria from the row's reference
    assert env.get_reward() == 0.0  # nothing written yet
    assert "answer.txt" in env.rewardkit_result.scores["task_done"].reason
    env.write_file(path="answer.txt", content="42")
    assert env.get_reward() == 1.0
    env.reset(**ROWS[0])  # the next rollout starts clean
    env.write_file(path="answer.txt", content="41")
    assert env.get_reward() == 0.0


def test_a_failed_grading_is_none_which_trl_makes_nan(tmp_path, monkeypatch):
    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path))
    env = graded({"on_error": "null", "rewards": {"task_done": {
        "reward": "workspace_criteria",
        "params": {"allowed_roots": [str(tmp_path / "elsewhere")]}}}})()
    env.reset(**ROWS[0])
    assert env.get_reward() is None
    assert env.rewardkit_result.scores["task_done"].status == "error"


def test_what_get_reward_cannot_do_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match="name the rewardkit config"):
        graded(None)().get_reward()
    scheduled = {"rewards": {"task_done": {**FROM_ROWS["rewards"]["task_done"], "weight": {
        "schedule": "piecewise", "boundaries": [1], "values": [0.5, 2.0]}}}}
    with pytest.raises(ConfigError, match=r"rewards\.task_done: .*no step"):
        graded(scheduled)().get_reward()
    with pytest.raises(ConfigError, match=r"normalize_then_sum|no group"):
        graded({**FROM_ROWS, "aggregate": "normalize_then_sum"})().get_reward()


def test_a_class_made_after_another_was_dropped_reads_its_own_config(tmp_path, monkeypatch):
    """Classes made at run time (``type(...)``) and dropped: a new one often lands at the
    freed one's address; the RewardSets were keyed by ``id(cls)``, and the new class got
    the old one's (29 of 30 rounds here: a refused config scored, a good one refused in
    whichever test of this file ran after another, as on two pytest workers)."""
    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path))
    for _ in range(10):
        env = graded(FROM_ROWS)()
        env.reset(**ROWS[0])
        assert env.get_reward() == 0.0
        del env
        gc.collect()
        with pytest.raises(ConfigError, match="no group to normalise"):
            graded({**FROM_ROWS, "aggregate": "normalize_then_sum"})().get_reward()
        gc.collect()


def test_trls_grpo_trainer_logs_get_reward_as_the_environments_column(tmp_path,
                                                                        monkeypatch):
    import torch
    from datasets import Dataset
    from rewardkit_trainers.environments import build_tiny_for_tools, environment_tools
    from rewardkit_trainers.quickstart import TinyModel
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path / "ws"))
    # the seeded question.txt names the question: 0.5 for the two rows asking 6 x 7 ...
    config = {"rewards": {"asked": {
        "reward": "workspace_criteria", "weight": 0.5,
        "params": {"allowed_roots": ["$" + WORKSPACES_ENV], "criteria": [
            {"type": "file_contains", "path": "question.txt", "text": "6 times 7"}]}}}}
    Graded = graded(config)
    rows = ROWS[:2]  # ... so one prompt of two is paid: mean 0.25
    model, tokenizer = build_tiny_for_tools(TinyModel(build="qwen2", hidden_size=16, num_layers=1,
                                                      num_heads=2, intermediate_size=32),
                                            rows, environment_tools(Graded),
                                            tmp_path / "base")
    assert [t.__name__ for t in environment_tools(Graded)] == ["read_file", "write_file"]
    torch.set_num_threads(2)
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=8, max_steps=2,
                      report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                      logging_steps=1)
    data = [{**row, "files": json.dumps(row["files"]), "reference": json.dumps(row["reference"])}
            for row in rows]
    trainer = GRPOTrainer(model=model, args=args, train_dataset=Dataset.from_list(data),
                          processing_class=tokenizer, environment_factory=Graded)
    trainer.train()
    logged = [h["rewards/Graded/mean"] for h in trainer.state.log_history
              if "rewards/Graded/mean" in h]
    assert logged == [0.25, 0.25]
