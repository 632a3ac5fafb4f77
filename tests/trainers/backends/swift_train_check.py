"""Run inside .venv-swift: `rewardkit train` with backend swift runs a real two-step
`swift rlhf --rlhf_type grpo` on CPU (tiny Qwen2 built from a config) with the exported
plugin. Prints one JSON object with what ms-swift logged.

    python swift_train_check.py WORKDIR
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rewardkit_trainers.config import TinyModel
from rewardkit_trainers.quickstart import build_tiny, generate_rows

work = Path(sys.argv[1])
model_dir = work / "model"
model, tokenizer = build_tiny(TinyModel(hidden_size=32, intermediate_size=64),
                              generate_rows(32), model_dir)
tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
tokenizer.save_pretrained(model_dir)
model.save_pretrained(model_dir)

config = work / "run.yaml"
config.write_text(f"""
rewards:
  format: {{reward: soft_format, weight: 0.5}}
  tags: {{reward: tag_count, weight: {{schedule: linear, start: 0.0, end: 1.0, steps: 2}}}}
train:
  backend: swift
  model: {model_dir}
  dataset:
    train: {{generate: quickstart, size: 16, test_size: 0}}
  output_dir: {work / "out"}
  max_steps: 2
  num_generations: 2
  batch_size: 2
  max_prompt_length: 64
  max_completion_length: 8
  learning_rate: 1.0e-3
  extra_args: {{model_type: qwen2, template: qwen, report_to: none, torch_dtype: float32,
               dataloader_num_workers: 0}}
""")
bin_dir = Path(sys.executable).parent
env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
       "CUDA_VISIBLE_DEVICES": ""}
proc = subprocess.run([str(bin_dir / "rewardkit"), "train", str(config)], env=env,
                      capture_output=True, text=True, timeout=600)
logs = sorted((work / "out" / "swift").glob("*/logging.jsonl"))
entries = [json.loads(line) for line in logs[-1].read_text().splitlines()] if logs else []
print("RESULT " + json.dumps({
    "returncode": proc.returncode,
    "tail": (proc.stdout + proc.stderr)[-2000:],
    "steps": [e for e in entries if "global_step/max_steps" in e and "loss" in e],
}))
