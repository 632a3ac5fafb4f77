"""Run inside .venv-verl: verl's own loader resolves ``pkg://rewardkit_trainers.verl`` and its
naive reward manager scores a batch with it. Prints one JSON object.

    REWARDKIT_CONFIG=rewards.yaml python verl_check.py FUNCTION_NAME TOKENIZER_DIR
"""

from __future__ import annotations

import asyncio
import json
import sys

import numpy as np
import torch
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl import DataProto
from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager

fn_name, tokenizer_dir = sys.argv[1], sys.argv[2]
config = OmegaConf.create({
    "reward": {
        "custom_reward_function": {"path": "pkg://rewardkit_trainers.verl", "name": fn_name,
                                   "reward_kwargs": {"step": 5}},
        "reward_manager": {"source": "register", "name": "naive"},
    }
})
assert get_custom_reward_fn(config) is not None
tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
manager = load_reward_manager(config, tokenizer)

responses_text = ["<think>\n3 plus 4 is 7\n</think>\n<answer>\n7\n</answer>", "no tags",
                  "<answer>\n7\n</answer>"]
prompt_ids = tokenizer(["add 3 and 4"] * 3, return_tensors="pt", padding="max_length",
                       max_length=8)["input_ids"]
enc = tokenizer(responses_text, return_tensors="pt", padding="max_length", max_length=24,
                padding_side="right")
responses = enc["input_ids"]
attention = torch.cat([torch.ones_like(prompt_ids), enc["attention_mask"]], dim=1)
batch = DataProto.from_dict(
    tensors={"prompts": prompt_ids, "responses": responses, "attention_mask": attention},
    non_tensors={
        "data_source": np.array(["rewardkit-test"] * 3, dtype=object),
        "reward_model": np.array([{"ground_truth": "7"}] * 3, dtype=object),
        "extra_info": np.array([{"task": "math"} for _ in range(3)], dtype=object),
    },
)


async def score_all() -> list[dict]:
    return [await manager.run_single(batch[i:i + 1]) for i in range(len(batch))]


results = manager.loop.run_until_complete(score_all()) if not manager.loop.is_running() \
    else asyncio.run(score_all())
scores = [r["reward_score"] for r in results]
rm_scores = manager.assemble_rm_scores(batch, scores)
print("RESULT " + json.dumps({
    "manager": type(manager).__name__,
    "scores": scores,
    "extra_keys": [sorted(r["reward_extra_info"]) for r in results],
    "extra": [r["reward_extra_info"] for r in results],
    "rm_scores_sum": rm_scores.sum(dim=1).tolist(),
}))
