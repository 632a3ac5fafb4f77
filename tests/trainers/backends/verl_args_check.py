"""Run inside .venv-verl: compose verl's own `ppo_trainer` Hydra config with the overrides
of a `python3 -m verl.trainer.main_ppo ...` argv (JSON file), and read the written train
parquet with verl's RLHFDataset. Prints one JSON object.

    python verl_args_check.py ARGV_JSON TOKENIZER_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from transformers import AutoTokenizer
from verl.utils.dataset.rl_dataset import RLHFDataset

argv = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
assert argv[:3] == ["python3", "-m", "verl.trainer.main_ppo"], argv[:3]
config_dir = Path(verl.__file__).parent / "trainer" / "config"
with initialize_config_dir(str(config_dir), version_base=None):
    cfg = compose("ppo_trainer", overrides=argv[3:])  # unknown keys raise here

tokenizer = AutoTokenizer.from_pretrained(sys.argv[2])
dataset = RLHFDataset(cfg.data.train_files, tokenizer, cfg.data)
item = dataset[0]
print("RESULT " + json.dumps({
    "adv_estimator": cfg.algorithm.adv_estimator,
    "rollout_n": cfg.actor_rollout_ref.rollout.n,
    "total_training_steps": cfg.trainer.total_training_steps,
    "resume_mode": cfg.trainer.resume_mode,
    "resume_from_path": cfg.trainer.resume_from_path,
    "reward": OmegaConf.to_container(cfg.reward.custom_reward_function),
    "rows": len(dataset),
    "raw_prompt": item["raw_prompt"],
    "ground_truth": item["reward_model"]["ground_truth"],
    "extra_info_keys": sorted(item["extra_info"]),
    "batch": {  # what the batch test reads, as verl's own config composed it
        "train_batch_size": cfg.data.train_batch_size,
        "ppo_mini_batch_size": cfg.actor_rollout_ref.actor.ppo_mini_batch_size,
        "ppo_micro_batch_size_per_gpu": cfg.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu,
        "reshard_after_forward": cfg.actor_rollout_ref.actor.fsdp_config.reshard_after_forward,
        "lr_scheduler_type": cfg.actor_rollout_ref.actor.optim.lr_scheduler_type,
        "filter_overlong_prompts": cfg.data.filter_overlong_prompts,
        "n_gpus_per_node": cfg.trainer.n_gpus_per_node,
    },
}, default=str))
