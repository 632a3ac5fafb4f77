"""Token lengths through TRL's own reward call: GRPOTrainer._calculate_rewards passes
``completion_ids`` to every reward function; the adapter hands them to the rewards."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl")

from rewardkit_trainers.config import TinyModel
from rewardkit_trainers.quickstart import build_tiny, generate_rows
from rewardkit_trainers.rewards.trl import trl_rewards

CONFIG = {"rewards": {
    "overlong": {"reward": "overlong_penalty",
                 "params": {"max_length": 4, "buffer": 2, "unit": "tokens"}},
    "overlong_words": {"reward": "overlong_penalty", "weight": 0.0,
                       "params": {"max_length": 4, "buffer": 2, "unit": "words"}},
    "loops": {"reward": "repetition_penalty", "params": {"n": 1, "unit": "tokens"}},
}}


def test_trl_completion_ids_are_the_lengths_the_rewards_see(tmp_path: Path) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(2)
    rows = generate_rows(4, seed=1)
    model, tokenizer = build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows,
                                  tmp_path / "base")
    rewards = trl_rewards(CONFIG)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=8, max_steps=1,
                      report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                      **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.funcs, args=args,
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    inputs = [rows[0], rows[0]]
    prompts = [row["prompt"] for row in inputs]
    texts = ["four", "four four four"]  # one word vs three words ...
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    assert [len(i) for i in ids] == [1, 5]  # ... and 1 vs 5 tokens (spaces are tokens)
    per_func = trainer._calculate_rewards(inputs, prompts, completions, ids)
    names = rewards.names
    got = {name: per_func[:, names.index(name)].tolist() for name in names}
    # tokens: 5 > max_length 4 -> full penalty; words: 3 is on the ramp
    assert got["overlong"] == [0.0, -1.0]
    assert got["overlong_words"] == [0.0, pytest.approx(-0.5)]
    # unigrams of the ids: four, ' ', four, ' ', four -> 3 of 5 repeat
    assert got["loops"] == [0.0, pytest.approx(-0.6)]
