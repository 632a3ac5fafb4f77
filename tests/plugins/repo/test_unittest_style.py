"""repo_tests on ``unittest.TestCase`` tests: unittest keeps a failure from raising out of
pytest's call phase (it hands it to pytest's result object), so the verdict must come
from that hand-over. Found on real tasks (cachetools, more-itertools): a wrong patch was
paid 1.0 before."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_repo import FIX, diff_of, git, make_repo

from rewardkit import Sample

rewardkit_repo = pytest.importorskip("rewardkit_repo")

TESTS = '''\
import unittest

from calc import add, mul


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)

    def test_skipped(self):
        self.skipTest("not on this platform")

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(mul(2, 2), 5)
'''


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    repo = tmp_path_factory.mktemp("unittest") / "repo"
    reference = make_repo(repo)
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "commit", "-q", "-am", "unittest style")
    reference["base_commit"] = git(repo, "rev-parse", "HEAD")
    reference["FAIL_TO_PASS"] = ["tests/test_calc.py::CalcTest::test_add"]
    reference["PASS_TO_PASS"] = ["tests/test_calc.py::CalcTest::test_mul"]
    return repo, reference


def _score(reference: dict[str, Any], completion: str) -> Any:
    return rewardkit_repo.RepoTests().score(
        Sample(prompt="fix add", completion=completion, reference=reference))


def test_the_honest_fix_is_paid_and_a_failing_unittest_is_not(
        task: tuple[Path, dict[str, Any]]) -> None:
    repo, reference = task
    assert _score(reference, FIX).value == 1.0
    score = _score(reference, diff_of(repo, {"README": "notes\n"}))
    assert score.value == 0.0
    assert score.details["tests"]["tests/test_calc.py::CalcTest::test_add"] == "failed"
    wrong = _score(reference, FIX.replace("+    return a + b", "+    return a * b"))
    assert wrong.value == 0.0


def test_a_skipped_or_expected_failure_unittest_is_not_passed(
        task: tuple[Path, dict[str, Any]]) -> None:
    _, reference = task
    row = {**reference, "PASS_TO_PASS": ["tests/test_calc.py::CalcTest::test_skipped",
                                          "tests/test_calc.py::CalcTest::test_expected_failure"]}
    score = _score(row, FIX)
    assert score.value == 0.0
    assert score.details["tests"]["tests/test_calc.py::CalcTest::test_skipped"] == "skipped"
    assert score.details["tests"]["tests/test_calc.py::CalcTest::test_expected_failure"] \
        == "failed"


def test_replacing_the_hand_over_is_tampering(task: tuple[Path, dict[str, Any]]) -> None:
    repo, reference = task
    module = (repo / "calc.py").read_text()
    hack = ("import _pytest.unittest\n"
            "_pytest.unittest.TestCaseFunction._addexcinfo = lambda self, raw: None\n\n\n"
            + module)
    score = _score(reference, diff_of(repo, {"calc.py": hack}))
    assert score.value == 0.0
    assert "tampered" in score.reason
