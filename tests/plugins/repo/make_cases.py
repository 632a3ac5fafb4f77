"""Writes tests/cases/repo/: calc.bundle (the tiny repository as one git bundle file) and
repo_tests.cases.yaml (the honest fix, a wrong fix and tampering patches). Rerun after a
change of tiny_repo.py or the corpus: python tests/plugins/repo/make_cases.py"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))

from tamper_corpus import patch_of
from tiny_repo import FIX, diff_of, git, make_repo

OUT = Path(__file__).resolve().parents[3] / "tests" / "cases" / "repo"
TAMPERING = ["conftest_report_passed", "pytest_ini_deselect", "os_exit_at_import",
             "always_equal_object", "edited_test", "monkeypatch_runtest_noop",
             "write_result_channel", "sitecustomize"]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        reference = make_repo(root / "repo")
        git(root / "repo", "bundle", "create", "-q", str(OUT / "calc.bundle"), "--all")
        reference["repo"] = "tests/cases/repo/calc.bundle"
        cases = [{"name": "the honest fix", "completion": f"```diff\n{FIX}```",
                  "expect": 1.0},
                 {"name": "a fix of the wrong function",
                  "completion": diff_of(root / "repo", {"calc.py": (root / "repo" / "calc.py")
                                        .read_text().replace("a * b", "b * a")}),
                  "expect": 0.0}]
        cases += [{"name": f"tampering: {name}", "completion": patch_of(name, root / "repo", root),
                   "expect": 0.0} for name in TAMPERING]
    for case in cases:
        case["prompt"] = "Fix add in calc.py; answer with a unified diff."
        case["reference"] = reference
    doc = {"reward": "repo_tests", "params": {"time_budget_s": 60}, "checks": ["code"],
           "cases": cases}
    header = ("# repo_tests on the tiny repository of tests/plugins/repo/tiny_repo.py, shipped\n"
              "# as calc.bundle; written by tests/plugins/repo/make_cases.py (issue 34).\n")
    (OUT / "repo_tests.cases.yaml").write_text(header + yaml.safe_dump(doc, sort_keys=False,
                                                                        width=100))


if __name__ == "__main__":
    main()
