"""repo_tests on a tiny real git repository: what it pays and how it treats bad rows."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_repo import FIX, diff_of, make_repo

from rewardkit import Sample

rewardkit_repo = pytest.importorskip("rewardkit_repo")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("repo")
    return root / "repo", make_repo(root / "repo")


def _score(reference: dict[str, object], completion: str, **params: object) -> object:
    return rewardkit_repo.RepoTests(params or None).score(
        Sample(prompt="fix add", completion=completion, reference=reference))


def test_it_is_registered_as_a_first_party_reward() -> None:
    from rewardkit.registry import FIRST_PARTY_REWARDS, registry

    assert registry.get("repo_tests") is rewardkit_repo.RepoTests
    assert FIRST_PARTY_REWARDS["rewardkit-repo"] == ("repo_tests",)


def test_a_bare_diff_is_read_as_well_as_a_fenced_one(task: tuple[Path, dict[str, object]]
                                                     ) -> None:
    assert _score(task[1], FIX).value == 1.0


def test_partial_pays_the_share_passed(task: tuple[Path, dict[str, object]]) -> None:
    nothing = diff_of(task[0], {"README": "notes\n"})
    assert _score(task[1], nothing).value == 0.0
    score = _score(task[1], nothing, partial=True)
    assert score.value == 0.5
    assert score.details["tests"] == {"tests/test_calc.py::test_add": "failed",
                                      "tests/test_calc.py::test_mul": "passed"}


def test_the_test_patch_is_applied_after_the_model_patch(task: tuple[Path, dict[str, object]]
                                                         ) -> None:
    repo, reference = task
    extra = "\n\ndef test_add_negative():\n    assert add(-1, -2) == -3\n"
    test_patch = diff_of(repo, {"tests/test_calc.py": (repo / "tests/test_calc.py").read_text()
                                + extra})
    row = {**reference, "test_patch": test_patch,
           "FAIL_TO_PASS": ["tests/test_calc.py::test_add_negative"]}
    assert _score(row, FIX).value == 1.0
    assert _score(row, diff_of(repo, {"README": "x\n"})).value == 0.0


def test_a_completion_without_a_diff_pays_zero_with_the_reason(
        task: tuple[Path, dict[str, object]]) -> None:
    score = _score(task[1], "I fixed it, trust me: return a + b")
    assert (score.value, score.status) == (0.0, "ok")
    assert "no unified diff" in score.reason


def test_a_patch_that_does_not_apply_pays_zero_with_gits_reason(
        task: tuple[Path, dict[str, object]]) -> None:
    score = _score(task[1], FIX.replace("return a - b", "return a // b"))
    assert score.value == 0.0
    assert "does not apply" in score.reason


def test_a_missing_repository_is_an_error_naming_the_row(task: tuple[Path, dict[str, object]]
                                                        ) -> None:
    row = {**task[1], "repo": "/nonexistent/repo", "instance_id": "calc-1"}
    score = _score(row, FIX)
    assert score.value is None and score.status == "error"
    assert "calc-1" in score.reason and "/nonexistent/repo" in score.reason


def test_a_missing_commit_is_an_error_naming_it(task: tuple[Path, dict[str, object]]) -> None:
    score = _score({**task[1], "base_commit": "0" * 40}, FIX)
    assert score.status == "error" and "0" * 40 in score.reason


@pytest.mark.parametrize("test_id", ["tests/test_calc.py::test_nothing",
                                     "tests/test_gone.py::test_add"])
def test_an_unknown_test_id_is_an_error_naming_it(test_id: str,
                                                  task: tuple[Path, dict[str, object]]) -> None:
    score = _score({**task[1], "FAIL_TO_PASS": [test_id]}, FIX)
    assert score.status == "error"
    assert test_id in score.reason


def test_a_run_past_its_budget_times_out_and_leaves_no_process(
        task: tuple[Path, dict[str, object]]) -> None:
    from rewardkit_code.sandboxes import shared_sandbox_pool
    from rewardkit_repo.repo_tests import _PYTEST_PATH, _PYTHON
    from rewardkit_sandbox.audit import processes_of_uids

    repo, reference = task
    spin = diff_of(repo, {"calc.py": "import os\nif os.fork() == 0:\n    while True:\n"
                                     "        pass\nwhile True:\n    pass\n"})
    score = _score(reference, spin, time_budget_s=3)
    assert score.status == "timeout", score.reason
    pool = shared_sandbox_pool(None, (_PYTEST_PATH, os.path.dirname(_PYTHON)))
    if os.geteuid() == 0:  # without root the tasks run as this process's own uid
        assert processes_of_uids(pool.slot_uids) == []


@pytest.mark.parametrize("command", ["pytest -rA --tb short -p no:warnings -m 'not slow' tests",
                                     "python -m pytest -x", ""])
def test_a_rows_test_command_adds_options_only(command: str,
                                               task: tuple[Path, dict[str, object]]) -> None:
    import shlex

    from rewardkit_repo.repo_tests import _options

    options = _options(shlex.split(command))
    assert "-p" not in options and "tests" not in options
    assert _score({**task[1], "test_command": command}, FIX).value == 1.0


def test_a_patch_cannot_preempt_the_test_patchs_files(task: tuple[Path, dict[str, object]]
                                                      ) -> None:
    # the model writes the file the test patch adds (a test module not named like one):
    # it is removed before the test patch, which then applies
    repo, reference = task
    checks = "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 4) == 4\n"
    test_patch = diff_of(repo, {"checks.py": checks})
    preempt = diff_of(repo, {"checks.py": "def test_add_zero():\n    pass\n"})
    row = {**reference, "test_patch": test_patch, "FAIL_TO_PASS": ["checks.py::test_add_zero"]}
    score = _score(row, preempt)
    assert (score.value, score.status) == (0.0, "ok"), score.reason
    assert "checks.py" in score.details["discarded"]
    fixed = _score(row, FIX + preempt[preempt.index("diff --git"):])
    assert fixed.value == 1.0, fixed.reason
