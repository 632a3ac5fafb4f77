"""Run inside .venv-swift: two ranks (torch.distributed, gloo) score one GRPO batch through
ms-swift's own reward path (``compute_rewards_per_func`` on each rank's share), the
per-function rewards are gathered in rank order as ms-swift's trainer does, and ms-swift's
``compute_advantages`` turns them into advantages. Prints one JSON object.

    python swift_ranks_check.py PLUGIN_FILE SCALE_REWARDS FUNC_NAME [FUNC_NAME ...]

The batch: 3 prompts x 4 completions, 6 rows per rank, so prompt p1's group is split
across the ranks. Rows whose completion contains CRASH fail to grade.
"""

from __future__ import annotations

import json
import os
import runpy
import socket
import sys
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from rewardkit import RewardSet, Sample

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import check_rewards  # noqa: F401  (registers check_graded, check_longest)

K = 4
ROWS = [  # (prompt id, question, reference, completion)
    ("p0", "add 3 and 4", "7", "the answer is 7"),
    ("p0", "add 3 and 4", "7", "8"),
    ("p0", "add 3 and 4", "7", "CRASH 7"),
    ("p0", "add 3 and 4", "7", "7 is it, surely 7"),
    ("p1", "add 1 and 2", "3", "3"),
    ("p1", "add 1 and 2", "3", "three is 3 ok"),
    ("p1", "add 1 and 2", "3", "CRASH"),
    ("p1", "add 1 and 2", "3", "no idea at all here"),
    ("p2", "add 2 and 3", "5", "5"),
    ("p2", "add 2 and 3", "5", "five"),
    ("p2", "add 2 and 3", "5", "it is 5"),
    ("p2", "add 2 and 3", "5", "55555 5"),
]
WORLD = 2




def samples_for(rows: list[tuple[str, str, str, str]]) -> list[Sample]:
    out = []
    for pid, question, ref, completion in rows:
        s = Sample(prompt=[{"role": "user", "content": question}], completion=completion,
                   reference=ref)
        s.group = pid
        out.append(s)
    return out


def worker(rank: int, plugin: str, scale: str, names: list[str], port: int, out: str) -> None:
    from swift.rl_core.advantage import compute_advantages
    from swift.rl_core.data import GRPOSample
    from swift.rl_core.grpo_algorithm import compute_rewards_per_func
    from swift.rlhf_trainers.utils import resolve_reward_funcs
    from swift.utils import import_external_file
    from transformers import TrainerState

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    import_external_file(plugin)
    funcs, _ = resolve_reward_funcs(names, args=None)
    share = len(ROWS) // WORLD
    mine = ROWS[rank * share:(rank + 1) * share]
    samples = [GRPOSample(messages=[{"role": "user", "content": q},
                                    {"role": "assistant", "content": c}],
                          extra={"solution": ref}, prompt_id=pid)
               for pid, q, ref, c in mine]
    state = TrainerState()
    state.global_step = 3
    local = compute_rewards_per_func(samples, funcs, None, torch.device("cpu"),
                                     trainer_state=state)
    parts = [torch.zeros_like(local) for _ in range(WORLD)]
    dist.all_gather(parts, local)  # ms-swift gathers the per-function rewards in rank order
    if rank == 0:
        rewards_per_func = torch.cat(parts)
        from rewardkit_trainers.rewards.scoring import SharedScorer
        from rewardkit_trainers.rewards.swift import swift_weights

        from rewardkit.config import parse_config

        config = parse_config(runpy.run_path(plugin)["CONFIG"])  # the config the plugin embeds
        weights = torch.tensor(swift_weights(SharedScorer(config)))  # --reward_weights
        advantages, rewards = compute_advantages(rewards_per_func, weights, K, "grpo", scale)
        whole = RewardSet(config).score(samples_for(ROWS), step=3)
        alone = RewardSet(config).score(samples_for(mine), step=3)
        result = {
            "rewards_per_func": [[None if v != v else v for v in row]
                                 for row in rewards_per_func.tolist()],
            "advantages": advantages.tolist(),
            "rewards": rewards.tolist(),
            "expected_totals": whole.totals,
            "expected_values": {n: whole.values(n) for n in whole.outcomes},
            "rank0_alone_values": {n: alone.values(n) for n in alone.outcomes},
        }
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(result, fh)
    dist.barrier()
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    plugin, scale, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        mp.spawn(worker, args=(plugin, scale, names, free_port(), out), nprocs=WORLD)
        with open(out, encoding="utf-8") as fh:
            print("RESULT " + fh.read())
