"""gym_answer over every reasoning-gym dataset: honest answers paid, cheap outputs not.

    python benchmarks/bench_gym.py [--rows 5] [--seed 7] [--json]

For each dataset, ``--rows`` rows from ``rewardkit gym-data``'s generator (default
config), scored through rewardkit as the rows ship (metadata as JSON text): the dataset's
own answer in an answer tag, and the hacks a policy tries (an empty answer block, the
question echoed in the tag or alone, a bare ``0``), under ``credit: full`` and
``credit: scorer``. The raw scorer's pay for the same hacks is reported beside them.
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
    import reasoning_gym
    from reasoning_gym.factory import DATASETS
    from rewardkit_gym.data import generate

    from rewardkit import Sample, UsageError, get_reward

    rewards = {c: get_reward("gym_answer")({"credit": c}) for c in ("full", "scorer")}
    signal.signal(signal.SIGALRM, _alarm)
    honest: Counter[str] = Counter()
    paid: Counter[str] = Counter()
    unusable: dict[str, str] = {}
    not_paid_honest: list[str] = []
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
        scorer = reasoning_gym.get_score_answer_fn(name)
        all_paid = True
        for row in data:
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
            entry = {"question": row["prompt"], "answer": row["reference"],
                     "metadata": json.loads(row["gym_entry"])}
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
    usable = len(DATASETS) - len(unusable)
    return {"datasets": len(DATASETS), "usable": usable, "rows_per_dataset": rows,
            "seed": seed, "honest_all_paid_datasets": usable - len(not_paid_honest),
            "honest_not_paid": not_paid_honest, "unusable": unusable,
            "honest_rows": dict(honest), "hack_rows_paid": dict(sorted(paid.items())),
            "scores_per_s": round(scored / (time.perf_counter() - start), 1)}


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
