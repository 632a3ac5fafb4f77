"""math_answer's verdict on every labelled pair of bench_math.py, to compare two commits.

    python benchmarks/math_verdicts.py --source OWNER/NAME=PATH ... --out VERDICTS.json
    python benchmarks/math_verdicts.py --compare BEFORE.json AFTER.json

The pairs are bench_math.py's (``math_eval_pairs.build`` over the sources named in
``math_eval_sources.toml``, plus ``data/math_pairs.jsonl``), graded by ``math_answer`` with
its defaults (``decimal_comma: true`` on the decimal-comma category, as bench_math.py
does), in-process, one pair after another. It grades with whatever ``rewardkit`` is
importable: to grade another commit, put a worktree of it first on ``PYTHONPATH``.
``--compare`` prints, per source, how many verdicts agree with the labels in each file
and lists every pair whose (value, status) differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def grade(sources: list[str], out: Path) -> None:
    from bench_math import PARAMS_FOR, own_pairs
    from math_eval_pairs import build

    import rewardkit
    from rewardkit import Sample, get_reward

    copies = {name: Path(path) for name, path in (s.split("=", 1) for s in sources)}
    pairs = build(copies) + own_pairs()
    rewards = {cat: get_reward("math_answer")(params) for cat, params in PARAMS_FOR.items()}
    default = get_reward("math_answer")()
    rows, start = [], time.perf_counter()
    for p in pairs:
        score = rewards.get(p.category, default).score(
            Sample(prompt=p.prompt, completion=p.completion, reference=p.gold))
        rows.append([p.source, p.category, p.truth, score.value, str(score.status),
                     score.reason[:120]])
    out.write_text(json.dumps({"rewardkit": rewardkit.__file__, "rows": rows,
                               "seconds": round(time.perf_counter() - start, 1)}))
    print(f"{len(rows)} pairs graded by {rewardkit.__file__} -> {out}")


def _group(source: str, category: str) -> str:
    repo = source.split()[0]
    return f"{repo} | {category}" if repo == "openai/grade-school-math" else repo


def compare(before_path: Path, after_path: Path) -> None:
    before, after = (json.loads(p.read_text()) for p in (before_path, after_path))
    print(f"before: {before_path} (rewardkit from {before['rewardkit']})")
    print(f"after:  {after_path} (rewardkit from {after['rewardkit']})")
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    differ = []
    for a, b in zip(before["rows"], after["rows"], strict=True):
        if a[:3] != b[:3]:
            raise SystemExit("the two files hold different pairs")
        row = per[_group(a[0], a[1])]
        row[0] += 1
        row[1] += (a[3] == 1.0) == a[2]
        row[2] += (b[3] == 1.0) == b[2]
        row[3] += not a[4].lower().endswith("ok")
        row[4] += not b[4].lower().endswith("ok")
        if (a[3], a[4]) != (b[3], b[4]):
            differ.append((a, b))
    head = ("source", "pairs", "right before", "right after", "not ok before", "not ok after")
    print(f"{head[0]:<75}" + "".join(f"{h:>15}" for h in head[1:]))
    total = [0] * 5
    for name in sorted(per):
        total = [t + v for t, v in zip(total, per[name], strict=True)]
        print(f"{name:<75}" + "".join(f"{v:>15,}" for v in per[name]))
    print(f"{'all':<75}" + "".join(f"{v:>15,}" for v in total))
    print(f"pairs whose verdict (value, status) differs: {len(differ)}")
    for a, b in differ:
        print(f"  {a[0]} | {a[1]} | label {a[2]}: {a[3]} {a[4]} ({a[5]}) -> "
              f"{b[3]} {b[4]} ({b[5]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", action="append", default=[], metavar="OWNER/NAME=PATH")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
    elif args.out:
        grade(args.source, args.out)
    else:
        parser.error("give --out (with --source ...) or --compare BEFORE AFTER")


if __name__ == "__main__":
    main()
