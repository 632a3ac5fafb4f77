"""Forgeries of code_execution's assert-style verdict, per language: how many are paid.

    python benchmarks/bench_forgeries.py [--languages c,cpp,...] [--json PATH]

Each ``tests/cases/code/code_execution_<language>_forgeries.cases.yaml`` holds wrong
programs that try to make the test program pass anyway (issue 33) and their honest twin.
A forgery is *paid* when it scores as much as the honest twin (1.0 in binary mode). To
measure another commit, put its ``sandbox``, ``plugins/rewardkit-code`` and root folders
first on ``PYTHONPATH`` (the header prints where ``rewardkit_sandbox`` came from).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import rewardkit_sandbox
import yaml
from rewardkit_code import CodeExecution

from rewardkit import Sample

CASES = Path(__file__).parents[1] / "tests" / "cases" / "code"
LANGUAGES = ("c", "cpp", "rust", "go", "java", "javascript")


def measure(language: str) -> dict[str, object]:
    spec = yaml.safe_load((CASES / f"code_execution_{language}_forgeries.cases.yaml").read_text())
    grader = CodeExecution(spec["params"])
    paid, tried, honest, refused = [], 0, [], []
    for case in spec["cases"]:
        score = grader.grade(Sample(completion=case["completion"], reference=case["reference"]))
        if case["expect"] == 1.0:
            honest.append(score.value == 1.0)
            continue
        tried += 1
        (paid if score.value == 1.0 else refused).append(case["name"])
    return {"tried": tried, "paid": len(paid), "paid_names": paid,
            "honest_paid": f"{sum(honest)}/{len(honest)}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--json")
    args = parser.parse_args()
    print(f"rewardkit_sandbox from {Path(rewardkit_sandbox.__file__).parent}")
    figures = {}
    for language in args.languages.split(","):
        figures[language] = row = measure(language)
        print(f"{language:<11} forgeries paid {row['paid']:>2}/{row['tried']:<3} "
              f"honest paid {row['honest_paid']}  {', '.join(row['paid_names'])[:200]}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
