"""Run inside .venv-verl: an exported EasyR1 reward file, loaded the way EasyR1's
``FunctionRewardManager`` loads it, scores a batch in the reordered form EasyR1's
``_balance_batch`` hands it over; the scores go through verl's GRPO advantage
(``compute_grpo_outcome_advantage``, grouped by uid), which EasyR1 forked. Prints one JSON
object.

    python easyr1_grpo_check.py REWARD_FILE

EasyR1 itself is not on PyPI, so its own manager and advantage code do not run here;
verl's function is the one EasyR1's ``core_algos`` derives from.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np
import torch
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

from rewardkit import RewardSet, Sample

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import check_rewards  # noqa: F401  (registers check_graded, check_longest)

from rewardkit.config import parse_config

ROWS = [  # (prompt id, task, reference, completion)
    (0, "math", "7", "the answer is 7"),
    (0, "math", "7", "8"),
    (0, "math", "7", "CRASH 7"),
    (0, "math", "7", "7 is it, surely 7"),
    (1, "chat", "3", "3"),
    (1, "chat", "3", "three is 3 ok"),
    (1, "chat", "3", "CRASH"),
    (1, "chat", "3", "no idea at all here"),
    (2, "math", "5", "5"),
    (2, "math", "5", "five"),
    (2, "math", "5", "it is 5"),
    (2, "math", "5", "55555 5"),
]
#: the order the reward sees: groups interleaved, as after EasyR1's _balance_batch
ORDER = [5, 0, 9, 2, 11, 6, 1, 4, 10, 3, 8, 7]



reward_file = sys.argv[1]
spec = importlib.util.spec_from_file_location("custom_reward_fn", reward_file)
module = importlib.util.module_from_spec(spec)
sys.modules["custom_reward_fn"] = module
spec.loader.exec_module(module)
assert module.REWARD_TYPE == "batch"
reward_fn = partial(module.compute_score)

from rewardkit_trainers.rewards.easyr1 import pack_answer  # noqa: E402  (after the test rewards)

batch = [ROWS[i] for i in ORDER]
reward_inputs = [{"response": c, "response_length": len(c.split()),
                  "ground_truth": pack_answer(ref, pid, {"task": task})}
                 for pid, task, ref, c in batch]
scores = reward_fn(reward_inputs)

length = 6
token_level = torch.zeros(len(batch), length)
mask = torch.ones(len(batch), length)
for i, score in enumerate(scores):
    token_level[i, length - 1] = score["overall"]
uid = np.array([f"uid-{pid}" for pid, *_ in batch], dtype=object)
advantages, _ = compute_grpo_outcome_advantage(token_level, mask, uid)

config = parse_config(module.CONFIG)
samples = []
for pid, task, ref, completion in ROWS:
    s = Sample(completion=completion, reference=ref, metadata={"task": task})
    s.group = pid
    samples.append(s)
whole = RewardSet(config).score(samples, step=module.STEP)
print("RESULT " + json.dumps({
    "order": ORDER,
    "scores": scores,
    "advantages": advantages[:, -1].tolist(),
    "expected_totals": [whole.totals[i] for i in ORDER],
    "expected_values": {n: [whole.values(n)[i] for i in ORDER] for n in whole.outcomes},
}))
