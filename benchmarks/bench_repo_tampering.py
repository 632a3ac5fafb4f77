"""repo_tests against its tampering corpus, beside a naive ``pytest; echo $?`` runner.

    python benchmarks/bench_repo_tampering.py [--json]

Builds the tiny repository of tests/plugins/repo/tiny_repo.py with real ``git`` in a
temporary folder, makes each patch of tests/plugins/repo/tamper_corpus.py (none fixes the
bug), and scores it twice: with ``repo_tests`` (sandboxed pytest, outcomes from the
reporter's token-stamped pipe) and with the naive runner (``git apply`` in a clone, then
``python -m pytest``; paid when it exits 0). Prints one row per patch and paid/tried for
both; the honest fix must be paid by both. The naive runner executes the patches on this
machine, outside any sandbox: the corpus is ours and harmless (it writes only into its
own clone and a few files under /tmp, forks a daemon that exits within 2 s).

Then the same for Go (when ``go`` is installed): the tiny module of
tests/plugins/repo/tiny_go_repo.py, the patches of go_tamper_corpus.py, ``repo_tests``
with ``runner: go`` beside a naive ``go test ./...; echo $?``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "plugins" / "repo"))

from go_tamper_corpus import GO_TAMPERING, go_patch_of, naive_go_paid
from rewardkit_repo import RepoTests
from tamper_corpus import TAMPERING, naive_paid, patch_of
from tiny_go_repo import FIX as GO_FIX
from tiny_go_repo import make_go_repo
from tiny_repo import FIX, make_repo

from rewardkit import Sample


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    args = parser.parse_args()
    reward = RepoTests()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "outside").mkdir()
        reference = make_repo(root / "repo")
        started = time.perf_counter()
        for name in ["honest_fix", *sorted(TAMPERING)]:
            patch = FIX if name == "honest_fix" else patch_of(name, root / "repo", root / "outside")
            score = reward.score(Sample(prompt="fix add", completion=patch, reference=reference))
            rows.append({"patch": name, "repo_tests": score.value, "status": str(score.status),
                         "naive_paid": naive_paid(root / "repo", patch, root),
                         "reason": score.reason[:70]})
        elapsed = time.perf_counter() - started
    go_summary = _go_rows() if shutil.which("go") else None
    tried = [row for row in rows if row["patch"] != "honest_fix"]
    summary = {
        "tried": len(tried),
        "repo_tests_paid": sum(bool(row["repo_tests"]) for row in tried),
        "naive_paid": sum(bool(row["naive_paid"]) for row in tried),
        "honest_fix_paid": {"repo_tests": rows[0]["repo_tests"], "naive": rows[0]["naive_paid"]},
        "seconds": round(elapsed, 1),
        "go": go_summary,
    }
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=1))
    else:
        print(f"{'patch':38} {'repo_tests':>10} {'naive':>6}  reason")
        for row in rows:
            print(f"{row['patch']:38} {row['repo_tests']!s:>10} "
                  f"{'paid' if row['naive_paid'] else '0':>6}  {row['reason']}")
        print(f"tampering paid / tried: repo_tests {summary['repo_tests_paid']}/{len(tried)}, "
              f"naive pytest; echo $? {summary['naive_paid']}/{len(tried)}; honest fix paid: "
              f"repo_tests {rows[0]['repo_tests']}, naive {rows[0]['naive_paid']} "
              f"({summary['seconds']} s)")
        if go_summary:
            for row in go_summary["rows"]:
                print(f"go:{row['patch']:35} {row['repo_tests']!s:>10} "
                      f"{'paid' if row['naive_paid'] else '0':>6}  {row['reason']}")
            print(f"go tampering paid / tried: repo_tests runner go "
                  f"{go_summary['repo_tests_paid']}/{go_summary['tried']}, naive go test ./...; "
                  f"echo $? {go_summary['naive_paid']}/{go_summary['tried']}; honest fix paid: "
                  f"repo_tests {go_summary['honest_fix_paid']['repo_tests']}, naive "
                  f"{go_summary['honest_fix_paid']['naive']} ({go_summary['seconds']} s)")
    go_bad = bool(go_summary) and (go_summary["repo_tests_paid"]
                                   or go_summary["honest_fix_paid"]["repo_tests"] != 1.0)
    return 1 if summary["repo_tests_paid"] or rows[0]["repo_tests"] != 1.0 or go_bad else 0


def _go_rows() -> dict[str, Any]:
    """The Go corpus through ``repo_tests`` (runner go) and a naive ``go test ./...``."""
    reward = RepoTests({"runner": "go"})
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "outside").mkdir()
        reference = make_go_repo(root / "repo")
        started = time.perf_counter()
        for name in ["honest_fix", *sorted(GO_TAMPERING)]:
            patch = GO_FIX if name == "honest_fix" else go_patch_of(name, root / "repo",
                                                                    root / "outside")
            score = reward.score(Sample(prompt="fix Add", completion=patch, reference=reference))
            rows.append({"patch": name, "repo_tests": score.value, "status": str(score.status),
                         "naive_paid": naive_go_paid(root / "repo", patch, root),
                         "reason": score.reason[:70]})
        elapsed = time.perf_counter() - started
    tried = rows[1:]
    return {"rows": rows, "tried": len(tried),
            "repo_tests_paid": sum(bool(row["repo_tests"]) for row in tried),
            "naive_paid": sum(bool(row["naive_paid"]) for row in tried),
            "honest_fix_paid": {"repo_tests": rows[0]["repo_tests"],
                                "naive": rows[0]["naive_paid"]},
            "seconds": round(elapsed, 1)}


if __name__ == "__main__":
    raise SystemExit(main())
