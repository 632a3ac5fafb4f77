"""`rewardkit calibrate` on real labelled model outputs: math_answer's precision and recall
against human labels, beside math-verify's on the same rows (issue 35 item 6).

The rows are the real model outputs among the pairs of ``math_eval_pairs.py`` (GSM8K model
solutions with the dataset authors' ``is_correct`` labels; MR-GSM8K solutions with its
annotators' labels when that source is given), read from local copies at the commits and
SHA-256 of ``math_eval_sources.toml``: nothing of them is stored in this repository. They
are written to a temporary labelled JSONL (``correct`` = the label), measured with the real
command ``rewardkit calibrate`` (math_answer with its defaults), and math-verify's verdicts
(``verify(parse(gold), parse(completion))``, its defaults) on the same rows are folded into
the same confusion counts and Wilson intervals (:mod:`rewardkit.measure.stats`).
MMLU-Pro's recorded GPT-4o answers (``TIGER-AI-Lab/MMLU-Pro``) are measured with
``multiple_choice`` instead (:data:`REWARD`), against MMLU-Pro's own verdict (its regex
reading of ``The answer is (X)`` compared with the gold letter): the benchmark's official
label, not an independent judge, so no second grader stands beside it; the rows where
they disagree are listed with the reward's reason.
Results are appended to benchmarks/results/calibrate_real_labels.json (``--results``).

    git clone https://github.com/openai/grade-school-math
    python benchmarks/calibrate_real_labels.py --source openai/grade-school-math=grade-school-math
    git clone https://github.com/TIGER-AI-Lab/MMLU-Pro
    python benchmarks/calibrate_real_labels.py --source TIGER-AI-Lab/MMLU-Pro=MMLU-Pro \
        --results benchmarks/results/calibrate_real_labels_mmlu_pro.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_math import math_verify_verdict
from math_eval_pairs import build, manifest

from rewardkit.measure.stats import Confusion

RESULTS = Path(__file__).resolve().parent / "results" / "calibrate_real_labels.json"
#: the reward measured on a source's rows (math_answer elsewhere)
REWARD = {"TIGER-AI-Lab/MMLU-Pro": "multiple_choice"}


def measure(pairs: list, reward: str = "math_answer") -> dict:
    """``reward`` (through ``rewardkit calibrate``) on ``pairs``, and math-verify beside
    math_answer."""
    with tempfile.TemporaryDirectory() as folder:
        cfg, rows = Path(folder) / "cfg.yaml", Path(folder) / "labelled.jsonl"
        missed = Path(folder) / "disagree.jsonl"
        cfg.write_text(f"rewards:\n  {reward}: {{reward: {reward}}}\n")
        with rows.open("w") as fh:
            for i, p in enumerate(pairs):
                fh.write(json.dumps({"prompt": p.prompt or f"{p.source} #{i}",
                                     "completion": p.completion, "reference": p.gold,
                                     "correct": p.truth, "source": p.source}) + "\n")
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "rewardkit.cli", "calibrate", str(cfg),
                               str(rows), "--label", "correct", "--json", "--out",
                               str(missed)],
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"rewardkit calibrate failed:\n{done.stderr}")
        ours = json.loads(done.stdout)[reward]
        disagree = []
        for line in missed.read_text().splitlines():
            row = json.loads(line)
            if reward in row["disagree"]:
                verdict = row["components"][reward]
                disagree.append({"line": row["line"], "label": row["correct"],
                                 "value": verdict["value"], "status": verdict["status"],
                                 "reason": verdict.get("reason")})
    keys = ("tp", "fp", "tn", "fn", "failed", "precision", "recall", "false_positive_rate",
            "accuracy", "f1")
    result = {"rows": len(pairs), "positives": sum(p.truth for p in pairs),
              reward: {k: ours[k] for k in keys}, "calibrate_seconds": round(seconds, 1)}
    if reward == "math_answer":
        theirs = Confusion()
        for p in pairs:
            theirs.add(float(math_verify_verdict(p.gold, p.completion)), p.truth, 0.5)
        result["math_verify"] = {k: theirs.report()[k] for k in keys}
    else:
        result["disagreements"] = disagree
    print(f"{pairs[0].source.split(' ')[0]}: {len(pairs)} rows")
    for name in (reward, "math_verify") if reward == "math_answer" else (reward,):
        m = result[name]
        cells = [f"{k} {m[k]['value']:.3f} [{m[k]['ci95'][0]:.3f}, {m[k]['ci95'][1]:.3f}]"
                 for k in ("precision", "recall", "false_positive_rate")
                 if m[k]["value"] is not None]
        print(f"  {name:<12} tp {m['tp']} fp {m['fp']} tn {m['tn']} fn {m['fn']} "
              f"failed {m['failed']}  "
              + "  ".join(cells))
    for d in result.get("disagreements", []):
        print(f"  line {d['line']}: label {d['label']}, {reward} {d['value']} ({d['reason']})")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", action="append", default=[], metavar="OWNER/NAME=PATH",
                        help="a local copy (clone, mirror or folder) of a manifest source")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="the JSON file the run is appended to")
    args = parser.parse_args()
    copies = dict(s.split("=", 1) for s in args.source)
    pairs = [p for p in build({k: Path(v) for k, v in copies.items()}) if p.model_output]
    if not pairs:
        raise SystemExit("no real model outputs: give --source openai/grade-school-math=PATH")
    commits = {s["repository"]: s["commit"] for s in manifest() if s["repository"] in copies}
    entry: dict[str, Any] = {
        "sources": {repo: commits.get(repo) for repo in copies}, "by_source": {},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other work",
        "date": time.strftime("%Y-%m-%d")}
    for repo in copies:
        chosen = [p for p in pairs if p.source.split(" ")[0] == repo]
        if chosen:
            entry["by_source"][repo] = measure(chosen, REWARD.get(repo, "math_answer"))
    entry["load_1_5_15"] = list(os.getloadavg())
    print(json.dumps(entry))
    entries = json.loads(args.results.read_text()) if args.results.exists() else []
    entries.append(entry)
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text(json.dumps(entries, indent=2) + "\n")


if __name__ == "__main__":
    main()
