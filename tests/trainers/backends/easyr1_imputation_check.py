"""Run inside .venv-verl: what the group-mean imputation of failed rows does to the GRPO
advantage EasyR1 trains on. Prints one JSON object.

    python easyr1_imputation_check.py REWARD_FILE

The exported EasyR1 reward file (an ``on_error: null`` config: ``check_parity``, len/10,
fails to grade on an odd length, and ``check_graded`` at weight 0.5) is loaded as
EasyR1's ``AutoRewardManager`` loads it and scores random batches (seeded) of 4 prompts x
K responses in a shuffled order, as after ``_balance_batch``. Each ``overall`` goes on
the response's last token, as ``BatchFunctionRewardManagerMixin.compute_reward_batch``
puts it, and verl's ``compute_grpo_outcome_advantage`` (grouped by uid; EasyR1's
``core_algos`` copy divides by the same ``torch.std`` + 1e-6) gives the advantages. The
reference a true mask would give is the same function on the graded rows alone. Records
the failed rows' advantages (every row's in a group whose graded rows tie: there verl's
float32 mean can sit an ulp off the value, which its 1e-6 epsilon turns into an
advantage of up to about 0.06 for every row alike), each graded row's ratio to the
masked advantage with its group's (n, k) beside the exact ratio of the sample stds, the
graded rows a NaN ``overall`` on the failed rows would turn NaN, and the
``imputed_group_share`` key beside the share counted here.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import statistics
import sys
from pathlib import Path

import numpy as np
import torch
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import check_rewards  # noqa: F401  (registers check_parity, check_graded)

PROMPTS = 4
BATCHES = 150
EPS = 1e-6  # compute_grpo_outcome_advantage's default, as EasyR1's


def advantages(scores: list[float], uids: list[str]) -> list[float]:
    length = 5
    token_level = torch.zeros(len(scores), length)
    token_level[:, length - 1] = torch.tensor(scores, dtype=torch.float32)
    adv, _ = compute_grpo_outcome_advantage(token_level, torch.ones(len(scores), length),
                                            np.array(uids, dtype=object))
    return adv[:, -1].tolist()


def main(reward_file: str) -> dict:
    spec = importlib.util.spec_from_file_location("custom_reward_fn", reward_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_reward_fn"] = module
    spec.loader.exec_module(module)
    from rewardkit_trainers.rewards.easyr1 import IMPUTED_SHARE, pack_answer

    rng = random.Random(27)
    failed_adv: list[float] = []  # in groups whose graded rows differ
    ties: list[list[float]] = []  # every row's advantage in groups whose graded rows tie
    poisoned = 0  # graded rows whose advantage is NaN once the failed rows score NaN
    ratios: dict[str, list[list[float]]] = {}
    shares: list[tuple[float, float]] = []
    for b in range(BATCHES):
        k = (4, 8)[b % 2]
        rows = []
        for p in range(PROMPTS):
            for _ in range(k):
                length = rng.randrange(1, 12) * 2 + (rng.random() < 0.25)
                rows.append((p, rng.choice("ab") + "a" * (length - 1)))
        rng.shuffle(rows)  # the reward sees groups scattered
        scores = module.compute_score([
            {"response": c, "response_length": len(c), "ground_truth": pack_answer("b", p, {})}
            for p, c in rows])
        overall = [float(np.float32(s["overall"])) for s in scores]  # the float32 reward tensor
        uids = [f"uid-{p}" for p, _ in rows]
        adv = advantages(overall, uids)
        failed = [i for i, (_, c) in enumerate(rows) if len(c) % 2]
        graded = [i for i in range(len(rows)) if i not in failed]
        # no NaN path: a NaN overall spreads to its whole group's mean and std
        as_nan = advantages([math.nan if i in failed else v for i, v in enumerate(overall)],
                            uids)
        poisoned += sum(math.isnan(as_nan[i]) for i in range(len(rows))
                        if i not in failed and uids[i] in {uids[f] for f in failed})
        masked = dict(zip(graded, advantages([overall[i] for i in graded],
                                             [uids[i] for i in graded]), strict=True))
        touched = 0
        for p in range(PROMPTS):
            idx = [i for i, (q, _) in enumerate(rows) if q == p]
            kept = [i for i in idx if i in masked]
            if len({overall[i] for i in kept}) == 1:  # a tie: the trainer's own rounding
                ties.append([adv[i] for i in idx])
            else:
                failed_adv += [adv[i] for i in idx if i not in masked]
            if len(kept) < len(idx):
                touched += len(kept)
            if len(kept) < 2:
                continue
            s_n = statistics.stdev(overall[i] for i in idx)
            s_k = statistics.stdev(overall[i] for i in kept)
            exact = (s_k + EPS) / (s_n + EPS)
            for i in kept:
                if abs(masked[i]) > 1e-3:  # rows a mask trains (not at the mean)
                    ratios.setdefault(f"{k},{len(kept)}", []).append([adv[i] / masked[i], exact])
        logged = {s[IMPUTED_SHARE] for s in scores}
        assert len(logged) == 1, logged  # every row carries the batch's share
        shares.append((logged.pop(), touched / len(graded) if graded else 0.0))
    return {"failed_advantages": failed_adv, "ties": ties, "nan_poisoned_graded_rows": poisoned,
            "ratios": ratios, "shares": shares, "keys": sorted(scores[0])}


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1])))
