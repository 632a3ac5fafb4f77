"""Run inside .venv-swift: load an exported plugin the way ms-swift does and score a batch
through ms-swift's own GRPO reward path. Prints one JSON object.

    python swift_check.py PLUGIN_FILE FUNC_NAME [FUNC_NAME ...]
"""

from __future__ import annotations

import json
import sys

import torch
from swift.rewards import orms
from swift.rl_core.data import GRPOSample
from swift.rl_core.grpo_algorithm import compute_rewards_per_func
from swift.rlhf_trainers.utils import resolve_reward_funcs
from swift.utils import import_external_file
from transformers import TrainerState

plugin, names = sys.argv[1], sys.argv[2:]
import_external_file(plugin)  # what BaseArguments._import_external_plugins does per file
registered = sorted(k for k in orms if k.startswith("rewardkit_"))
funcs, func_names = resolve_reward_funcs(names, args=None)

GOOD = "<think>\nadd them\n</think>\n<answer>\n7\n</answer>"
SHORT = "<think>a</think><answer>7</answer>"
BAD = "no tags at all"
samples = []
for i, completion in enumerate([GOOD, SHORT, BAD, GOOD]):
    samples.append(GRPOSample(
        messages=[{"role": "system", "content": "use tags"},
                  {"role": "user", "content": "add 3 and 4"},
                  {"role": "assistant", "content": completion}],
        extra={"solution": "7", "task": "math"},
        prompt_id=f"p{i // 2}",
    ))

out = {"registered": registered, "func_names": func_names, "rewards": {}}
for step in (0, 5):
    state = TrainerState()
    state.global_step = step
    rewards = compute_rewards_per_func(samples, funcs, None, torch.device("cpu"),
                                       trainer_state=state)
    out["rewards"][str(step)] = [[None if v != v else v for v in row]
                                 for row in rewards.tolist()]
print("RESULT " + json.dumps(out))
