"""Run inside .venv-verl: compose verl's own `ppo_trainer` Hydra config with the
overrides of each stage's command (a JSON list of override lists: what the SageMaker
entrypoint appended to the command, after its own overrides), as
`verl.trainer.main_ppo` would. Prints one JSON object.

    python verl_stage_check.py RUNS_JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

runs = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
config_dir = Path(verl.__file__).parent / "trainer" / "config"
stages = []
with initialize_config_dir(str(config_dir), version_base=None):
    for overrides in runs:
        cfg = compose("ppo_trainer", overrides=overrides)  # unknown keys raise here
        kwargs = OmegaConf.to_container(cfg.reward.custom_reward_function.reward_kwargs)
        stages.append({
            "reward_step": kwargs.get("step"),
            "total_training_steps": cfg.trainer.total_training_steps,
            "resume_mode": cfg.trainer.resume_mode,
            "resume_from_path": cfg.trainer.resume_from_path,
            "save_freq": cfg.trainer.save_freq,
            "default_local_dir": cfg.trainer.default_local_dir,
        })
print("RESULT " + json.dumps({"stages": stages}))
