"""Run inside .venv-verl: verl's loader builds the reward manager the overrides name and
scores right-padded responses through it. Prints one JSON object: each response's
reward_score (what trains) and reward_extra_info.

    REWARDKIT_CONFIG=rewards.yaml python verl_tokens_check.py MANAGER TOKENIZER_DIR

MANAGER: ``rewardkit`` (the overrides of rewardkit_trainers.rewards.verl) or ``naive`` (verl's own).
"""

from __future__ import annotations

import asyncio
import json
import sys

import numpy as np
import torch
from omegaconf import OmegaConf
from rewardkit_trainers.rewards.verl import MANAGER_OVERRIDES
from transformers import AutoTokenizer
from verl import DataProto
from verl.trainer.ppo.reward import load_reward_manager

manager_name, tokenizer_dir = sys.argv[1], sys.argv[2]
if manager_name == "rewardkit":
    manager_config = {"source": MANAGER_OVERRIDES["reward.reward_manager.source"],
                      "name": MANAGER_OVERRIDES["reward.reward_manager.name"],
                      "module": {"path": MANAGER_OVERRIDES["reward.reward_manager.module.path"],
                                 "name": "custom_reward_manager"}}
else:
    manager_config = {"source": "register", "name": "naive"}
config = OmegaConf.create({"reward": {
    "custom_reward_function": {"path": "pkg://rewardkit_trainers.rewards.verl",
                               "name": "compute_score", "reward_kwargs": {}},
    "reward_manager": manager_config,
}})
tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
manager = load_reward_manager(config, tokenizer)

texts = ["add add add", "add"]  # 3 words in 5 tokens (spaces are tokens), 1 in 1
prompt_ids = tokenizer(["add 3 and 4"] * 2, return_tensors="pt", padding="max_length",
                       max_length=8)["input_ids"]
enc = tokenizer(texts, return_tensors="pt", padding="max_length", max_length=12,
                padding_side="right")
attention = torch.cat([torch.ones_like(prompt_ids), enc["attention_mask"]], dim=1)
extra = [{"task": "t"} for _ in texts]
batch = DataProto.from_dict(
    tensors={"prompts": prompt_ids, "responses": enc["input_ids"], "attention_mask": attention},
    non_tensors={"data_source": np.array(["rewardkit-test"] * 2, dtype=object),
                 "reward_model": np.array([{"ground_truth": "7"}] * 2, dtype=object),
                 "extra_info": np.array(extra, dtype=object)})


async def score_all() -> list[dict]:
    return [await manager.run_single(batch[i:i + 1]) for i in range(len(batch))]


results = manager.loop.run_until_complete(score_all()) if not manager.loop.is_running() \
    else asyncio.run(score_all())
print("RESULT " + json.dumps({
    "manager": type(manager).__name__,
    "scores": [r["reward_score"] for r in results],  # what verl puts in the token rewards
    "extra": [r["reward_extra_info"] for r in results],
    "batch_extra_info_untouched": [dict(x) for x in batch.non_tensor_batch["extra_info"]] == extra,
}))
