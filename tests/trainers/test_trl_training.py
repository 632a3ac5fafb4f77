"""Real TRL GRPOTrainer runs (a tiny model built from a config, CPU, a few steps)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from backend_venvs import ROOT
from rewardkit_trainers.cli import run as cli_run
from rewardkit_trainers.config import TinyModel
from rewardkit_trainers.quickstart import build_tiny, generate_rows
from rewardkit_trainers.rewards.trl import trl_rewards

CONFIG = {
    "rewards": {
        "format": {"reward": "soft_format", "weight": 0.5},
        "tags": {"reward": "tag_count",
                 "weight": {"schedule": "linear", "start": 0.0, "end": 1.0, "steps": 2}},
        "graded": {"reward": "grades_or_fails", "weight": 1.0},
    },
    "on_error": "ignore",
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory):
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(2)
    out = tmp_path_factory.mktemp("trl")
    rows = generate_rows(16, seed=3)
    for i, row in enumerate(rows):  # every other prompt has a reference nobody can grade
        if i % 2 == 0:
            row["reference"] = "unparseable"
    model, tokenizer = build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows,
                                  out / "base")
    rewards = trl_rewards(CONFIG)
    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=8, num_generations=4,
                      max_completion_length=8, max_steps=3, learning_rate=1e-3,
                      logging_steps=1, report_to="none", use_cpu=True, save_strategy="no",
                      disable_tqdm=True, shuffle_dataset=False, **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.funcs, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    rewards.attach(trainer)
    trainer.train()
    return trainer


def test_grpo_trainer_logs_every_component(trained):
    logs = [entry for entry in trained.state.log_history if "reward" in entry]
    assert len(logs) == 3
    for name in ("format", "tags", "graded"):
        assert all(f"rewards/{name}/mean" in entry for entry in logs)


def test_status_rates_and_latency_are_logged_through_log_metric(trained):
    logs = [entry for entry in trained.state.log_history if "reward" in entry]
    # two prompts per step, in order, one of them ungradable
    assert [entry["rewards/graded/error_rate"] for entry in logs] == [0.5, 0.5, 0.5]
    assert all("rewards/format/latency_ms_p95" in entry for entry in logs)


def test_weight_schedule_moves_trainer_reward_weights(trained):
    logs = [entry for entry in trained.state.log_history if "reward" in entry]
    assert [entry["rewards/tags/weight"] for entry in logs] == [0.0, 0.5, 1.0]
    assert trained.reward_weights.tolist() == [0.5, 1.0, 1.0]


def test_rewardkit_train_runs_trl_and_writes_curves(tmp_path: Path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text(
        (ROOT / "examples" / "quickstart.yaml").read_text()
        .replace("output_dir: ../runs/quickstart", f"output_dir: {tmp_path / 'out'}"))
    code = cli_run("train", [str(config), "--max-steps", "3"])
    assert code == 0
    out = capsys.readouterr().out
    assert "mean reward: start" in out
    with (tmp_path / "out" / "reward_curves.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3
    assert set(rows[0]) == {"step", "reward", "correct", "format", "partial_format"}
    assert (tmp_path / "out" / "reward_curves.png").stat().st_size > 1000
    assert (tmp_path / "out" / "final" / "config.json").exists()
    # output is not a terminal here: plain progress lines, first and last step at least
    assert "GRPO step 0/3  reward -  elapsed 0:00" in out
    assert re.search(r"GRPO step 3/3  reward \d+\.\d{3}  elapsed \d+:\d\d", out)
    # the config never set max_prompt_length: no word about this TRL lacking it
    assert "max_prompt_length" not in out
    # the run report, and what it is built from
    assert f"report: {tmp_path / 'out' / 'report.html'}" in out
    page = (tmp_path / "out" / "report.html").read_text()
    assert "total (weighted sum: what trains)" in page and \
        "correct (raw mean, unweighted)" in page
    scored = [json.loads(line) for line in
              (tmp_path / "out" / "scored_samples.jsonl").read_text().splitlines()]
    assert {r["step"] for r in scored} == {0, 1, 2}
    assert set(scored[0]["components"]) == {"correct", "format", "partial_format"}
    rebuilt = subprocess.run([sys.executable, "-m", "rewardkit.cli", "report",
                              str(tmp_path / "out"), "-o", str(tmp_path / "again.html")],
                             capture_output=True, text=True, timeout=120)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "weights over steps" in (tmp_path / "again.html").read_text()


def test_grpo_trainer_trains_on_a_plain_text_dataset(tmp_path: Path):
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(2)
    rows = [{"prompt": row["prompt"][-1]["content"], "reference": row["reference"]}
            for row in generate_rows(8, seed=5)]
    model, tokenizer = build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows,
                                  tmp_path / "base")
    rewards = trl_rewards({"rewards": {"tags": {"reward": "tag_count"},
                                       "graded": {"reward": "grades_or_fails"}}})
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4,
                      num_generations=4, max_completion_length=6, max_steps=2,
                      logging_steps=1, report_to="none", use_cpu=True, save_strategy="no",
                      disable_tqdm=True, **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.funcs, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    assert rewards.attach(trainer) is None  # constant weights: no callback needed
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logs) == 2
    assert all("rewards/tags/mean" in e and "rewards/graded/mean" in e for e in logs)


def test_lora_maps_to_peft_config(tmp_path: Path):
    from rewardkit_trainers.config import parse_train
    from rewardkit_trainers.launch.trl_train import grpo_kwargs, peft_config

    train = parse_train({"model": "m", "dataset": {"train": "x.jsonl"},
                         "lora": {"r": 8, "alpha": 16, "target_modules": ["q_proj", "v_proj"]},
                         "warmup_ratio": 0.1, "batch_size": 2, "num_generations": 4})
    lora = peft_config(train)
    assert (lora.r, lora.lora_alpha) == (8, 16)
    assert set(lora.target_modules) == {"q_proj", "v_proj"}
    kwargs, _ = grpo_kwargs(train, tmp_path, {}, gpu=False)
    assert kwargs["per_device_train_batch_size"] == 8
    assert kwargs.get("warmup_ratio", kwargs.get("warmup_steps")) == 0.1


def test_rewardkit_train_resumes_from_the_newest_checkpoint(tmp_path: Path, capsys):
    config = tmp_path / "run.yaml"
    text = (ROOT / "examples" / "quickstart.yaml").read_text().replace(
        "output_dir: ../runs/quickstart", f"output_dir: {tmp_path / 'out'}\n  save_steps: 2")
    config.write_text(text)
    assert cli_run("train", [str(config), "--max-steps", "2"]) == 0
    assert (tmp_path / "out" / "checkpoint-2").is_dir()
    capsys.readouterr()
    assert cli_run("train", [str(config), "--max-steps", "3"]) == 0
    out = capsys.readouterr().out
    assert "resuming from" in out and "checkpoint-2" in out
    assert "3 steps" in out


@pytest.mark.parametrize("aggregate", ["weighted_sum", "normalize_then_sum"])
def test_failed_grading_gets_zero_advantage_in_grpo_trainer(tmp_path: Path, aggregate: str):
    """on_error: null through TRL's own _generate_and_score_completions: every component of
    a failed row returns None, TRL marks the row unscorable and its advantage is 0."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rewardkit import Status

    torch.manual_seed(0)
    rows = [{"prompt": row["prompt"][-1]["content"], "reference": row["reference"]}
            for row in generate_rows(4, seed=7)]
    model, tokenizer = build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows,
                                  tmp_path / "base")
    rewards = trl_rewards({"on_error": "null", "aggregate": aggregate,
                           "rewards": {"parity": {"reward": "check_parity"},
                                       "tags": {"reward": "tag_count", "weight": 0.5}}})
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=8,
                      num_generations=4, max_completion_length=12, max_steps=1,
                      report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                      temperature=1.0, **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.funcs, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    inputs = [rows[0]] * 4 + [rows[1]] * 4
    out = trainer._generate_and_score_completions(inputs)
    advantages = out["advantages"].tolist()
    result = rewards.scorer._last[1]  # what the callables returned for this batch
    failed = [i for i in range(8)
              if result.outcomes["parity"].score(i).status is Status.ERROR]
    assert failed and len(failed) < 8, "the batch should mix failed and graded rows"
    assert all(advantages[i] == 0.0 for i in failed)
    assert all(result.totals[i] is None for i in failed)


USER_SCRIPT = '''\
"""A user's own GRPO script: builds GRPOTrainer from an exported module, no rewardkit train."""
import json
import sys
from pathlib import Path

import torch
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from my_rewards import REWARDS, grpo_kwargs, reward_funcs
from rewardkit_trainers.config import TinyModel
from rewardkit_trainers.quickstart import build_tiny, generate_rows

torch.set_num_threads(2)
rows = generate_rows(8, seed=3)
model, tokenizer = build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows,
                              Path("base"))


class TrainedWeights(TrainerCallback):
    """The weights GRPOTrainer multiplied the rewards by, after each step."""
    seen = []

    def on_step_end(self, args, state, control, **kwargs):
        self.seen.append(trainer.reward_weights.tolist())


args = GRPOConfig(output_dir="out", per_device_train_batch_size=4, num_generations=4,
                  max_completion_length=6, max_steps=3, logging_steps=1, report_to="none",
                  use_cpu=True, save_strategy="no", disable_tqdm=True, shuffle_dataset=False,
                  **grpo_kwargs)
trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs, args=args,
                      train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                      callbacks=[TrainedWeights()])
if sys.argv[1] == "attach":
    REWARDS.attach(trainer)
trainer.train()
logs = [e for e in trainer.state.log_history if "reward" in e]
print(json.dumps({"logged": [e["rewards/tags/weight"] for e in logs],
                  "trained": TrainedWeights.seen}))
'''


@pytest.mark.parametrize("attach", [False, True])
def test_user_script_cannot_train_a_schedule_frozen(tmp_path: Path, capsys, attach: bool):
    """A script building GRPOTrainer itself from `rewardkit export trl`: without
    REWARDS.attach the first reward call refuses (naming the fix); with it, the weight
    GRPOTrainer applies at each step is the weight logged for that step."""
    config = tmp_path / "rewards.yaml"
    builtin = {**CONFIG, "rewards": {k: v for k, v in CONFIG["rewards"].items()
                                     if k != "graded"}}  # a plugin only the tests register
    config.write_text(json.dumps(builtin))
    assert cli_run("export", ["trl", str(config), "-o", str(tmp_path / "my_rewards.py")]) == 0
    use = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("use:"))
    assert "REWARDS.attach(trainer)" in use and "**grpo_kwargs" in use
    assert use.replace("my_rewards", "MOD") in \
        (ROOT / "docs" / "trainers" / "trl.md").read_text().replace("my_rewards", "MOD")
    (tmp_path / "train.py").write_text(USER_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, "train.py", "attach" if attach else "plain"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    if not attach:
        assert proc.returncode != 0
        assert "ScheduleNotAttached" in proc.stderr
        assert "REWARDS.attach(trainer)" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["logged"] == [0.0, 0.5, 1.0]  # linear 0 -> 1 over 2 steps
    # funcs order: format 0.5, tags (scheduled)
    assert [w[1] for w in seen["trained"]] == seen["logged"]


def test_every_trainer_scoring_a_schedule_must_be_attached(tmp_path: Path):
    """Before: attach marked the reward callables, not the trainer, so a second
    GRPOTrainer built with the same callables and never attached trained with its
    weights frozen at step 0 while the logged weight moved. Now a trainer that attach
    never saw refuses on its first reward call, and one attached trains on the schedule."""
    import torch
    from datasets import Dataset
    from rewardkit_trainers.rewards.trl import ScheduleNotAttached
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(2)
    rows = generate_rows(8, seed=11)
    model, tokenizer = build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows,
                                  tmp_path / "base")
    rewards = trl_rewards(CONFIG)

    class Applied(TrainerCallback):
        """The weights a trainer multiplied the rewards by, after each of its steps."""

        def __init__(self) -> None:
            self.seen: list[list[float]] = []
            self.trainer = None

        def on_step_end(self, args, state, control, **kwargs):
            self.seen.append(self.trainer.reward_weights.tolist())

    def trainer(name: str) -> tuple[GRPOTrainer, Applied]:
        applied = Applied()
        args = GRPOConfig(output_dir=str(tmp_path / name), per_device_train_batch_size=4,
                          num_generations=4, max_completion_length=4, max_steps=3,
                          logging_steps=1, report_to="none", use_cpu=True,
                          save_strategy="no", disable_tqdm=True, shuffle_dataset=False,
                          **rewards.grpo_kwargs())
        built = GRPOTrainer(model=model, reward_funcs=rewards.funcs, args=args,
                            train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                            callbacks=[applied])
        applied.trainer = built
        return built, applied

    first, first_applied = trainer("first")
    rewards.attach(first)
    first.train()
    second, second_applied = trainer("second")  # same callables, never attached
    with pytest.raises(ScheduleNotAttached, match=r"rewards\.attach\(trainer\)"):
        second.train()
    assert second_applied.seen == []  # refused before its first step ended
    third, third_applied = trainer("third")
    rewards.attach(third)
    third.train()
    # funcs order: format 0.5, tags linear 0 -> 1 over 2 steps, graded 1.0
    schedule = [[0.5, 0.0, 1.0], [0.5, 0.5, 1.0], [0.5, 1.0, 1.0]]
    assert first_applied.seen == schedule and third_applied.seen == schedule
    logs = [e for e in third.state.log_history if "reward" in e]
    assert [e["rewards/tags/weight"] for e in logs] == [0.0, 0.5, 1.0]
