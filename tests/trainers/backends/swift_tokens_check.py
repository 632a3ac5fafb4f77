"""Run inside .venv-swift: an exported plugin scores rows carrying ``response_token_ids``
(as ms-swift 4.x rollouts fill them) through ms-swift's own GRPO reward path. Prints one
JSON object: the reward values per row.

    python swift_tokens_check.py PLUGIN_FILE FUNC_NAME [FUNC_NAME ...]
"""

from __future__ import annotations

import json
import sys

import torch
from swift.rl_core.data import GRPOSample
from swift.rl_core.grpo_algorithm import compute_rewards_per_func
from swift.rlhf_trainers.utils import resolve_reward_funcs
from swift.utils import import_external_file
from transformers import TrainerState

plugin, names = sys.argv[1], sys.argv[2:]
import_external_file(plugin)
funcs, _ = resolve_reward_funcs(names, args=None)

# (completion, the rollout's response_token_ids): 1 word in 6 tokens, 6 words in 2 tokens
# (ids as a flat list, or one list per turn), and a rollout that kept no ids
ROWS = [
    ("longword", [11, 12, 13, 14, 15, 16]),
    ("a b c d e f", [[7, 7, 7], [21, 22]]),
    ("a b c d e f", []),
]
samples = [GRPOSample(messages=[{"role": "user", "content": "say something"},
                                {"role": "assistant", "content": text}],
                      response_token_ids=ids, prompt_id=f"p{i}")
           for i, (text, ids) in enumerate(ROWS)]
state = TrainerState()
rewards = compute_rewards_per_func(samples, funcs, None, torch.device("cpu"),
                                   trainer_state=state)
print("RESULT " + json.dumps({"rewards": [[None if v != v else v for v in row]
                                          for row in rewards.tolist()]}))
