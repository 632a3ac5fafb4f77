"""Run inside .venv-swift: what the group-mean imputation of failed rows does to ms-swift's
own GRPO advantage. Prints one JSON object.

    python swift_imputation_check.py PLUGIN_FILE [PLUGIN_FILE ...]

Each plugin embeds an ``on_error: null`` config of two components, ``check_parity``
(len/10, fails to grade on an odd length) and ``check_graded`` (weight 0.5). Random
batches (seeded) of 4 prompts x K completions go through ms-swift's reward path
(``compute_rewards_per_func``) and ``compute_advantages`` (grpo, ``--scale_rewards
group``). The reference a true mask would give is ms-swift's own request-aware
``compute_advantages_dynamic`` on the graded rows alone (groups of k rows). For every
batch the script records the failed rows' advantages (every row's in a group whose
graded rows tie, where ms-swift's float32 mean may sit an ulp off them), what they would
be had the failed rows returned None, the ratio of each graded row's advantage to the
masked one with the group's (n, k) (beside the ratio the sample stds give, ms-swift's
1e-4 included), and the logged
``rewards/imputed_group_share`` beside the share counted here.
"""

from __future__ import annotations

import json
import random
import runpy
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import check_rewards  # noqa: F401  (registers check_parity, check_graded)

PROMPTS = 4
BATCHES = 150


def batch(rng: random.Random, k: int) -> list[tuple[str, str]]:
    """(prompt id, completion) rows; an odd length (about 1 in 4) fails to grade."""
    rows = []
    for p in range(PROMPTS):
        for _ in range(k):
            length = rng.randrange(1, 12) * 2 + (rng.random() < 0.25)
            rows.append((f"p{p}", rng.choice("ab") + "a" * (length - 1)))
    return rows


def check(plugin: str, rng: random.Random) -> dict:
    from rewardkit_trainers.rewards.scoring import SharedScorer
    from rewardkit_trainers.rewards.swift import (
        IMPUTED_SHARE,
        drain_metrics,
        func_name,
        swift_weights,
    )
    from swift.rl_core.advantage import compute_advantages, compute_advantages_dynamic
    from swift.rl_core.data import GRPOSample
    from swift.rl_core.grpo_algorithm import compute_rewards_per_func
    from swift.rlhf_trainers.utils import resolve_reward_funcs
    from swift.utils import import_external_file
    from transformers import TrainerState

    from rewardkit.config import parse_config

    config = parse_config(runpy.run_path(plugin)["CONFIG"])
    import_external_file(plugin)
    scorer = SharedScorer(config)
    funcs, _ = resolve_reward_funcs([func_name(n) for n in scorer.names], args=None)
    weights = torch.tensor(swift_weights(scorer))  # --reward_weights
    state = TrainerState()
    failed_adv: list[float] = []  # in groups whose graded rows differ
    ties: list[list[float]] = []  # every row's advantage in groups whose graded rows tie
    nan_adv: list[float] = []  # the failed rows' advantages had they returned None
    ratios: dict[str, list[float]] = {}
    shares: list[tuple[float, float]] = []
    for b in range(BATCHES):
        k = (4, 8)[b % 2]
        rows = batch(rng, k)
        samples = [GRPOSample(messages=[{"role": "user", "content": f"prompt {pid}"},
                                        {"role": "assistant", "content": c}],
                              extra={"solution": "b"}, prompt_id=pid) for pid, c in rows]
        drain_metrics()
        rpf = compute_rewards_per_func(samples, funcs, None, torch.device("cpu"),
                                       trainer_state=state)
        logged = drain_metrics()[IMPUTED_SHARE]
        adv, totals = compute_advantages(rpf, weights, k, "grpo", "group")
        failed = [i for i, (_, c) in enumerate(rows) if len(c) % 2]
        graded = [i for i in range(len(rows)) if i not in failed]
        # no NaN path: a failed row left as None (NaN) is summed by nansum as 0 and trains
        as_nan = rpf.clone()
        as_nan[failed] = float("nan")
        nan_adv += [float(a) for a in compute_advantages(as_nan, weights, k, "grpo",
                                                         "group")[0][failed]]
        masked, _ = compute_advantages_dynamic(
            rpf[graded], weights, [rows[i][0] for i in graded], [str(i) for i in graded],
            "grpo", "group")
        touched = 0
        for p in range(PROMPTS):
            idx = range(p * k, (p + 1) * k)
            kept = [j for j, i in enumerate(graded) if i in idx]
            if len({float(totals[graded[j]]) for j in kept}) == 1:  # a tie
                ties.append([float(adv[i]) for i in idx])
            else:
                failed_adv += [float(adv[i]) for i in idx if i in failed]
            if len(kept) < len(idx):
                touched += len(kept)
            if len(kept) < 2:
                continue
            # ms-swift divides by (sample std + 1e-4): the exact ratio, eps included
            s_n = statistics.stdev(float(totals[i]) for i in idx)
            s_k = statistics.stdev(float(totals[graded[j]]) for j in kept)
            exact = (s_k + 1e-4) / (s_n + 1e-4)
            for j in kept:
                if abs(float(masked[j])) > 1e-3:  # rows a mask trains (not at the mean)
                    ratios.setdefault(f"{k},{len(kept)}", []).append(
                        [float(adv[graded[j]]) / float(masked[j]), exact])
        shares.append((logged[0], touched / len(graded) if graded else 0.0))
    return {"aggregate": config.aggregate, "failed_advantages": failed_adv, "ties": ties,
            "nan_advantages": nan_adv, "ratios": ratios, "shares": shares}


if __name__ == "__main__":
    rng = random.Random(27)
    print("RESULT " + json.dumps([check(plugin, rng) for plugin in sys.argv[1:]]))
