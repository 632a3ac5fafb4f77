"""Grading timeouts on a real 8-answer batch of competition maths (issue 42 item 2).

The batch: the 500 Omni-MATH problems of ``arka-ritual/omni-math-rule-ca``'s evaluation
outputs, each with the final answers of eight real model runs (Gemini 3 Pro, Claude Opus
4.6 and Qwen runs, standard and "cautious" prompts), each answer given to the grader as a
model writes it (``The final answer is $\\boxed{...}$``) against the problem's gold. Nothing
of it is stored here: the files are read from a local copy (a git clone or bare mirror)
at the commit below and checked against their SHA-256.

    git clone https://github.com/arka-ritual/omni-math-rule-ca
    python benchmarks/bench_math_timeouts.py --source omni-math-rule-ca [--mode process]

It scores the batch with ``math_answer`` through a RewardSet (defaults: process mode, the
10 s hard timeout) or ``--mode inline``, and prints the rows that timed out, the rows
whose grading ran past ``symbolic_timeout``, the wall time, and (with ``--out``) a
JSON file of every row's value and status, to compare verdicts between two commits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPOSITORY = "arka-ritual/omni-math-rule-ca"
COMMIT = "811748a642551b77bda9fa6d52bd0efc4d87427f"
#: the eight runs with all 500 problems whose file is in the repository (not LFS)
FILES = {f"evaluation/output/{run}/omni-math/{name}": digest for run, name, digest in (
    ("cautious_500", "cautious_eval.jsonl",
     "eca16875ce5f69d3a4e40ddaf453b9e5317d60449062b49dfe963f5389b24a2e"),
    ("gemini-3-pro-cautious_500", "cautious_eval.jsonl",
     "e5c887b580176d3546654b4d5e3401fa3258d59ca006b375dd45379c0a6da419"),
    ("gemini-3-pro-reward_lives_1_10_500", "cautious_eval.jsonl",
     "3eceaf69fffabb7f0d5aaa213e19a95743952b08fc3857099734a878e1a833e2"),
    ("gemini-3-pro_standard", "math_eval.jsonl",
     "3ce303bc53a4ceb549ac5adcda7c295e2fa4acbbf9a10b191b1d5d9e6641f19e"),
    ("opus-4.6-cautious_500", "cautious_eval.jsonl",
     "e88269386c21d5772d1d3bd69c9d619176ecf8d8bb59ff95fcff42cedb8b510a"),
    ("opus-4.6-reward_lives_1_10_500", "cautious_eval.jsonl",
     "df469d273cf8bc5ef4ca8a1440a24fd4e0bf60d8e049f3b0ea383060f8b2d73a"),
    ("opus-4.6_standard", "math_eval.jsonl",
     "c3d2ea6cca78e87bbba37972001640756159a3a48bb4fb24d933d591dabe2884"),
    ("standard_500", "math_eval.jsonl",
     "0e22a8980808178cad7e95f9dd77dfa5996e2f6b6ea0a79dd2d47e4cf6fcd089"),
)}


def _read(copy: Path, path: str) -> bytes:
    git_dir = copy / ".git" if (copy / ".git").exists() else copy
    done = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{COMMIT}:{path}"],
                          capture_output=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{copy}: cannot read {path} at {COMMIT[:12]}: {done.stderr.decode().strip()}")
    return done.stdout


def _final(pred: Any) -> str:
    if isinstance(pred, list):
        pred = pred[-1] if pred else ""
    return str(pred or "").strip()


_DIGIT = re.compile(r"\d")


def _rewrites(gold: str) -> list[str]:
    """Four answers written from a gold as a policy writes near misses: the gold itself, and
    three wrong ones (its first digit changed, its last digit changed, the gold plus one)."""
    digits = [m.start() for m in _DIGIT.finditer(gold)]
    out = [gold]
    for at in (digits[:1] + digits[-1:]) if digits else []:
        out.append(gold[:at] + str((int(gold[at]) + 5) % 10) + gold[at + 1:])
    out.append(f"({gold})+1")
    while len(out) < 4:
        out.append(f"-({gold})")
    return out[:4]


#: every gold of the Omni-MATH rule-gradable subset (2,821 problems)
RULE_FILE = ("omni_math_rule.jsonl",
             "d566d5b5a9865a04b507fdc4c0669cf0ff391748e13f190ecc925e78b584b172")


def _eight_rewrites(gold: str) -> list[str]:
    """Eight answers written from a gold: three equal to it (as written, bracketed, times
    one) and five wrong (a digit changed at its start, middle and end, plus one, negated)."""
    digits = [m.start() for m in _DIGIT.finditer(gold)]
    out = [gold, f"\\left({gold}\\right)", f"1 \\cdot ({gold})"]
    for at in (digits[0], digits[len(digits) // 2], digits[-1]) if digits else ():
        out.append(gold[:at] + str((int(gold[at]) + 5) % 10) + gold[at + 1:])
    out += [f"({gold})+1", f"-({gold})", f"({gold})+2", f"({gold})+3"]
    return out[:8]


def rule_batch(copy: Path) -> list[dict[str, Any]]:
    """Every gold of the rule-gradable Omni-MATH subset with :func:`_eight_rewrites`."""
    data = _read(copy, RULE_FILE[0])
    got = hashlib.sha256(data).hexdigest()
    if got != RULE_FILE[1]:
        sys.exit(f"{RULE_FILE[0]}: SHA-256 {got[:16]}..., expected {RULE_FILE[1][:16]}...")
    rows = []
    for n, line in enumerate(data.decode().splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        gold = str(row["answer"]).strip()
        for answer in _eight_rewrites(gold):
            rows.append({"prompt": row["problem"], "reference": gold, "idx": n,
                         "completion": f"The final answer is $\\boxed{{{answer}}}$"})
    return rows


def batch(copy: Path, answers: str = "models") -> list[dict[str, Any]]:
    """The rows: for each problem (by ``idx``, in order), its eight answers: the eight model
    runs' (``models``), or four of them and four :func:`_rewrites` of the gold
    (``rewrites``)."""
    runs = []
    for path, digest in FILES.items():
        data = _read(copy, path)
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            sys.exit(f"{path}: SHA-256 {got[:16]}..., expected {digest[:16]}...")
        runs.append({json.loads(line)["idx"]: json.loads(line)
                     for line in data.decode().splitlines() if line.strip()})
    rows = []
    for idx in sorted(set.intersection(*(set(r) for r in runs))):
        first = runs[0][idx]
        chosen = [_final(run[idx].get("pred")) for run in runs]
        if answers == "rewrites":
            chosen = chosen[:4] + _rewrites(str(first["gt"]).strip())
        for answer in chosen:
            completion = (f"The final answer is $\\boxed{{{answer}}}$" if answer
                          else "I could not determine the answer.")
            rows.append({"prompt": first.get("problem") or first.get("question") or "",
                         "completion": completion, "reference": str(first["gt"]),
                         "idx": idx})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="a copy of " + REPOSITORY)
    parser.add_argument("--mode", choices=("process", "inline"), default="process")
    parser.add_argument("--answers", choices=("models", "rewrites", "rule"), default="models",
                        help="eight model answers per gold, or four and four rewrites of "
                        "the gold (itself, a digit changed twice, plus one); or 'rule': "
                        "every gold of the rule subset (2,821) with eight rewrites of it")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="score the first N rows only")
    parser.add_argument("--out", type=Path, help="write each row's value and status here")
    parser.add_argument("--math-verify", action="store_true",
                        help="then time math-verify's parse + verify (its own 5 s timeouts "
                        "on) on the same rows in this one process; with --mode inline the "
                        "two use one process each")
    args = parser.parse_args(argv)

    import logging

    logging.disable(logging.WARNING)
    import rewardkit
    from rewardkit import RewardSet, Sample

    rows = rule_batch(args.source) if args.answers == "rule" else batch(args.source,
                                                                        args.answers)
    if args.limit:
        rows = rows[: args.limit]
    component: dict[str, Any] = {"reward": "math_answer"}
    if args.mode == "inline":
        component["mode"] = "inline"
    rs = RewardSet.from_dict({"rewards": {"math": component}, "workers": args.workers})
    samples = [Sample(prompt=r["prompt"], completion=r["completion"], reference=r["reference"])
               for r in rows]
    # workers started, math-verify and sympy imported (in them, or here inline): a
    # training run past its first step
    rs.score([Sample(completion=f"$\\boxed{{{a}}}$", reference=g)
              for g, a in (("1+x", "x+1"), ("\\frac{1}{2}", "0.5"), ("(1,2)", "(1, 2)"))] * 4)
    load = os.getloadavg()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    result = rs.score(samples)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    scores = result.scores("math")
    timeouts = [i for i, s in enumerate(scores) if str(s.status) == "timeout"]
    bounded = [i for i, s in enumerate(scores) if "symbolic_timeout" in (s.reason or "")]
    errors = [i for i, s in enumerate(scores) if str(s.status) == "error"]
    print(f"rewardkit {Path(rewardkit.__file__).parent}, {REPOSITORY}@{COMMIT[:12]}, "
          f"{len(rows)} rows ({len({r['idx'] for r in rows})} golds, 8 answers each or fewer: "
          f"{args.answers}), "
          f"mode {args.mode}, "
          f"{args.workers} workers, load average before {load[0]:.2f} {load[1]:.2f}")
    print(f"wall {wall:.1f} s, CPU of this process {cpu:.1f} s; timeouts {len(timeouts)} "
          f"({100 * len(timeouts) / max(len(rows), 1):.2f}%), past symbolic_timeout "
          f"{len(bounded)}, errors {len(errors)}")
    for i in timeouts + bounded:
        print(f"  row {i} idx {rows[i]['idx']}: gold {rows[i]['reference'][:60]!r} "
              f"answer {rows[i]['completion'][:80]!r}: {scores[i].status} {scores[i].reason[:60]}")
    if args.math_verify:
        from math_verify import parse, verify

        start, cpu0 = time.perf_counter(), time.process_time()
        agree = 0
        for row, score in zip(rows, scores, strict=True):
            gold = parse(f"${row['reference']}$")
            same = bool(gold) and verify(gold, parse(row["completion"]))
            agree += (1.0 if same else 0.0) == score.value
        mv_wall, mv_cpu = time.perf_counter() - start, time.process_time() - cpu0
        print(f"math-verify parse + verify, one process: wall {mv_wall:.1f} s, CPU "
              f"{mv_cpu:.1f} s; math_answer {mv_wall / wall:.2f}x faster (wall); same "
              f"verdict on {agree} of {len(rows)} rows")
    if args.out:
        args.out.write_text(json.dumps([{"value": s.value, "status": str(s.status),
                                         "reason": s.reason} for s in scores]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
