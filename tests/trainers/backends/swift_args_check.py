"""Run inside .venv-swift: parse a `swift rlhf ...` or `swift rollout ...` argv (JSON file)
with ms-swift's own RLHFArguments / RolloutArguments parser, without starting anything.
Prints one JSON object.

    python swift_args_check.py ARGV_JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from swift.arguments import RLHFArguments, RolloutArguments
from transformers import HfArgumentParser

argv = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
if argv[:2] == ["swift", "rollout"]:
    namespace, unknown = HfArgumentParser(RolloutArguments).parse_known_args(argv[2:])
    keys: tuple[str, ...] = ("model", "host", "port", "vllm_tensor_parallel_size",
                             "vllm_data_parallel_size", "vllm_gpu_memory_utilization")
else:
    assert argv[:2] == ["swift", "rlhf"], argv[:2]
    namespace, unknown = HfArgumentParser(RLHFArguments).parse_known_args(argv[2:])
    keys = ("rlhf_type", "tuner_type", "reward_funcs", "reward_weights", "num_generations",
            "per_device_train_batch_size", "max_steps", "max_completion_length", "use_vllm",
            "lora_rank", "target_modules", "external_plugins", "beta", "learning_rate",
            "vllm_mode", "vllm_server_host", "vllm_server_port", "gradient_accumulation_steps",
            "deepspeed", "max_length", "truncation_strategy", "lr_scheduler_type")
print("RESULT " + json.dumps({"unknown": unknown,
                              "parsed": {k: getattr(namespace, k) for k in keys}}))
