"""gym_answer over every reasoning-gym dataset: honest answers paid, cheap outputs not.

    python benchmarks/bench_gym.py [--rows 5] [--seed 7] [--json]

For each dataset, ``--rows`` rows from ``rewardkit gym-data``'s generator (default
config), scored through rewardkit as the rows ship (metadata as JSON text): the dataset's
own answer in an answer tag, and the hacks a policy tries (an empty answer block, the
question echoed in the tag or alone, a bare ``0``, the answer of the next row of the same
dataset where it differs: one answer reused on every item), under ``credit: full`` and
``credit: scorer``. The raw scorer's pay for the same hacks is reported beside them, and
per dataset the time of one ``gym_answer`` score of an honest answer against one call of
the dataset's scorer on it (the scorer built beforehand; ``slowest_ratios``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import time
from collections import Counter
from typing import Any

HACKS = {"empty": "<answer></answer>", "echo": "<answer>{prompt}</answer>",
         "final_line_echo": "{prompt}", "zero": "<answer>0</answer>"}


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError


def run(rows: int, seed: int) -> dict[str, Any]:
    from reasoning_gym.factory import DATASETS
    from rewardkit_gym.data import generate
    from rewardkit_gym.reward import entry_metadata, scorer_for

    from rewardkit import Sample, UsageError, get_reward

    rewards = {c: get_reward("gym_answer")({"credit": c}) for c in ("full", "scorer")}
    signal.signal(signal.SIGALRM, _alarm)
    honest: Counter[str] = Counter()
    paid: Counter[str] = Counter()
    unusable: dict[str, str] = {}
    not_paid_honest: list[str] = []
    reused_paid: Counter[str] = Counter()
    ratios: dict[str, tuple[float, float]] = {}
    start = time.perf_counter()
    scored = 0
    for name in sorted(DATASETS):
        signal.alarm(30)
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # some generators print
                data = [r for r in generate(name, rows, seed, {})
                        if r["reference"] is not None]
        except (UsageError, TimeoutError) as exc:
            unusable[name] = str(exc)[:80] or "timed out"
            continue
        finally:
            signal.alarm(0)
        if not data:
            unusable[name] = "no reference answer (the scorer checks a solution)"
            continue
        scorer = scorer_for(name)
        all_paid = True
        for i, row in enumerate(data):
            other = data[(i + 1) % len(data)]["reference"]
            reused = other if other.strip() != row["reference"].strip() else None
            entry = {"question": row["prompt"], "answer": row["reference"],
                     "metadata": entry_metadata(name, json.loads(row["gym_entry"]))}
            if reused is not None:
                for credit, reward in rewards.items():
                    value = reward.score(Sample.from_dict(
                        {**row, "completion": f"<answer>{reused}</answer>"})).value
                    if value == 1.0:
                        reused_paid[f"{credit}:{name}"] += 1
                try:
                    raw_reused = scorer(reused, entry)
                except Exception:  # the raw scorer raising pays nothing
                    raw_reused = 0.0
                if raw_reused == 1.0:
                    reused_paid[f"raw scorer:{name}"] += 1
            for credit, reward in rewards.items():
                sample = Sample.from_dict({**row, "completion":
                                           f"<answer>{row['reference']}</answer>"})
                ok = reward.score(sample).value == 1.0
                honest[f"{credit}:{'paid' if ok else 'not paid'}"] += 1
                all_paid &= ok
                for hack, text in HACKS.items():
                    completion = text.format(prompt=row["prompt"])
                    value = reward.score(Sample.from_dict({**row, "completion": completion}))
                    if (value.value or 0) > 0:
                        paid[f"{credit}:{hack}"] += 1
                scored += 1 + len(HACKS)
            for hack, text in HACKS.items():
                answer = text.format(prompt=row["prompt"]).removeprefix("<answer>")
                try:
                    raw = scorer(answer.removesuffix("</answer>"), entry)
                except Exception:  # the raw scorer raising pays nothing
                    raw = 0.0
                if raw > 0:
                    paid[f"raw scorer:{hack}"] += 1
        if not all_paid:
            not_paid_honest.append(name)
        ratios[name] = _time_ratio(rewards["full"], scorer, data, name)
    usable = len(DATASETS) - len(unusable)
    return {"datasets": len(DATASETS), "usable": usable, "rows_per_dataset": rows,
            "seed": seed, "honest_all_paid_datasets": usable - len(not_paid_honest),
            "honest_not_paid": not_paid_honest, "unusable": unusable,
            "honest_rows": dict(honest), "hack_rows_paid": dict(sorted(paid.items())),
            "reused_answer_paid": dict(sorted(reused_paid.items())),
            "slowest_ratios": {n: {"reward_ms": round(r * 1000, 3), "scorer_ms": round(c * 1000, 3),
                                   "ratio": round(r / c, 1) if c else None}
                               for n, (r, c) in sorted(ratios.items(), key=lambda kv:
                                                       -kv[1][0] / max(kv[1][1], 1e-9))[:8]},
            "datasets_over_3x": sorted(n for n, (r, c) in ratios.items()
                                       if r > 3 * c and r > 0.001),
            "scores_per_s": round(scored / (time.perf_counter() - start), 1)}


def _time_ratio(reward: Any, scorer: Any, data: list[dict[str, Any]],
                name: str) -> tuple[float, float]:
    """(seconds per gym_answer score, seconds per scorer call), honest answers, best of 3
    passes over the rows."""
    from rewardkit_gym.reward import entry_metadata

    from rewardkit import Sample

    samples = [Sample.from_dict({**row, "completion": f"<answer>{row['reference']}</answer>"})
               for row in data]
    entries = [{"question": row["prompt"], "answer": row["reference"],
                "metadata": entry_metadata(name, json.loads(row["gym_entry"]))}
               for row in data]
    best_reward = best_scorer = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for sample in samples:
            reward.score(sample)
        best_reward = min(best_reward, (time.perf_counter() - t0) / len(samples))
        t0 = time.perf_counter()
        for row, entry in zip(data, entries, strict=True):
            with contextlib.suppress(Exception):
                scorer(row["reference"], entry)
        best_scorer = min(best_scorer, (time.perf_counter() - t0) / len(data))
    return best_reward, best_scorer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.rows, args.seed)
    print(json.dumps(result, indent=2 if not args.json else None))


if __name__ == "__main__":
    main()
