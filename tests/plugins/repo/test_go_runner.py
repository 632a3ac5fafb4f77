"""repo_tests with ``runner: go`` on a tiny real Go module (real git, the real go
toolchain, the real sandbox): what it pays, how it treats bad rows, and its tampering
corpus (go_tamper_corpus.py): each patch paid 0 while the honest fix is paid 1."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from go_tamper_corpus import GO_TAMPERING, go_patch_of
from tiny_go_repo import CALC, CALC_TEST, FIX, make_go_repo
from tiny_repo import diff_of

from rewardkit import Sample

rewardkit_repo = pytest.importorskip("rewardkit_repo")
go_runner = pytest.importorskip("rewardkit_repo.go_runner")

pytestmark = pytest.mark.skipif(not os.path.isfile(os.path.join(go_runner.goroot(), "bin", "go"))
                                or shutil.which("git") is None, reason="needs go and git")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object], Path]:
    root = tmp_path_factory.mktemp("gorepo")
    outside = root / "outside"
    outside.mkdir()
    (outside / "x_test.go").write_text("package calc\n")
    return root / "repo", make_go_repo(root / "repo"), outside


def _score(reference: dict[str, object], completion: str, **params: object) -> object:
    return rewardkit_repo.RepoTests({"runner": "go", **params}).score(
        Sample(prompt="fix Add", completion=completion, reference=reference))


def test_the_honest_fix_is_paid_one(task: tuple[Path, dict[str, object], Path]) -> None:
    score = _score(task[1], f"The fix:\n```diff\n{FIX}```\n")
    assert (score.value, score.status) == (1.0, "ok"), (score.reason, score.details)
    assert score.details["tests"] == {"TestAdd": "passed", "TestMul": "passed",
                                      "strs.TestShout": "passed"}


def test_the_base_tree_is_paid_zero_and_partial_pays_the_share(
        task: tuple[Path, dict[str, object], Path]) -> None:
    unchanged = FIX.replace("+\treturn a + b", "+\treturn a - b + 0")
    score = _score(task[1], unchanged)
    assert score.value == 0.0
    assert score.details["tests"]["TestAdd"] == "failed"
    assert _score(task[1], unchanged, partial=True).value == pytest.approx(2 / 3)


def test_bad_rows_get_a_clear_status(task: tuple[Path, dict[str, object], Path]) -> None:
    reference = task[1]
    assert _score(reference, "no diff here").reason == "the completion holds no unified diff"
    unknown = _score({**reference, "PASS_TO_PASS": ["TestNope"]}, FIX)
    assert unknown.status == "error" and "'TestNope'" in unknown.reason
    wrong_package = _score({**reference, "PASS_TO_PASS": ["nope.TestMul"]}, FIX)
    assert wrong_package.status == "error" and "nope.TestMul" in wrong_package.reason
    not_go = _score({**reference, "PASS_TO_PASS": ["tests/test_x.py::test_y"]}, FIX)
    assert not_go.status == "error" and "not a Go test name" in not_go.reason
    outside = _score({**reference, "PASS_TO_PASS": ["../x.TestMul"]}, FIX)
    assert outside.status == "error" and "outside the repository" in outside.reason


def test_a_repository_without_go_mod_is_an_error(tmp_path: Path) -> None:
    from tiny_repo import git

    git(tmp_path, "init", "-q")
    (tmp_path / "calc.go").write_text("package calc\n")
    (tmp_path / "calc_test.go").write_text(
        'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {}\n')
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    reference = {"repo": str(tmp_path), "base_commit": git(tmp_path, "rev-parse", "HEAD"),
                 "FAIL_TO_PASS": ["TestAdd"], "PASS_TO_PASS": []}
    score = _score(reference, diff_of(tmp_path, {"calc.go": "package calc\n\n// x\n"}))
    assert score.status == "error" and "no go.mod" in score.reason, score.reason


def test_a_run_past_its_budget_is_a_timeout(task: tuple[Path, dict[str, object], Path]
                                            ) -> None:
    hang = diff_of(task[0], {"calc.go": CALC.replace("\treturn a - b", "\tfor {\n\t}")})
    score = _score(task[1], hang, time_budget_s=20)
    assert score.status == "timeout", (score.reason, score.details)


def test_edits_to_tests_are_put_back_and_the_fix_still_pays(
        task: tuple[Path, dict[str, object], Path]) -> None:
    repo = task[0]
    edited = diff_of(repo, {"calc_test.go": CALC_TEST.replace("!= 5", "!= -1"),
                            "strs/testdata/want.txt": "nope\n"})
    score = _score(task[1], FIX + edited[edited.index("diff --git"):])
    assert score.value == 1.0, (score.reason, score.details)
    assert {"calc_test.go", "strs/testdata/want.txt"} <= set(score.details["discarded"])


@pytest.mark.parametrize("name", sorted(GO_TAMPERING))
def test_tampering_is_paid_zero(name: str, task: tuple[Path, dict[str, object], Path]) -> None:
    repo, reference, outside = task
    score = _score(reference, go_patch_of(name, repo, outside))
    assert (score.value, score.status) == (0.0, "ok"), (
        f"{name} paid {score.value} ({score.status}): {score.reason} {score.details}")
    assert "does not apply" not in score.reason


def test_the_corpus_is_large_enough() -> None:
    assert len(GO_TAMPERING) >= 15


def _driver_run(task: tuple[Path, dict[str, object], Path], name: str, driver: str) -> object:
    import json
    from types import SimpleNamespace

    from rewardkit_code.sandboxes import shared_sandbox_pool
    from rewardkit_repo.workspace import prepare
    from rewardkit_sandbox import SandboxLimits

    repo, reference, outside = task
    workspace = prepare(str(reference["repo"]), str(reference["base_commit"]),
                        go_patch_of(name, repo, outside), "", go_runner.is_protected)
    try:
        header = go_runner.build_header(workspace, ["TestAdd"], 60)
    finally:
        workspace.close()
    pool = shared_sandbox_pool(None, (go_runner.goroot(),))
    result = pool.run(driver + "\nmain()\n", stdin=json.dumps(header),
                      limits=SandboxLimits(wall_time_s=65, cpu_time_s=240,
                                           memory_bytes=2048 << 20, file_size_bytes=256 << 20,
                                           open_files=512, disk_bytes=1 << 30, processes=256))
    assert str(result.status) == "ok", result.stderr
    return go_runner._verdict(json.loads(result.stdout), header["tests"], {},
                              SimpleNamespace(partial=False, time_budget_s=60))


def test_the_execute_only_binary_is_what_closes_proc_self_mem(
        task: tuple[Path, dict[str, object], Path]) -> None:
    # proc_self_mem_open exits 0 from init when it could open its own memory: with a
    # readable test binary (a weakened driver) it can, with ours it cannot
    from importlib import resources

    driver = resources.files("rewardkit_repo").joinpath("_go_driver.py").read_text()
    assert "os.chmod(binary, 0o111)" in driver
    weakened = driver.replace("os.chmod(binary, 0o111)", "os.chmod(binary, 0o755)")
    assert _driver_run(task, "proc_self_mem_open", weakened).details["tests"] == {
        "TestAdd": "no record (exit 0)"}
    assert _driver_run(task, "proc_self_mem_open", driver).details["tests"] == {
        "TestAdd": "failed"}


def test_a_build_past_its_budget_is_a_timeout(task: tuple[Path, dict[str, object], Path]
                                              ) -> None:
    # a budget the build itself cannot meet: timeout, not a crash of the driver
    score = _score(task[1], FIX, time_budget_s=0.3)
    assert score.status == "timeout", (score.reason, score.details)


@pytest.mark.parametrize("name", ["cgi_handler_shell_writes_channel",
                                  "os_exec_shell_writes_channel"])
def test_a_record_from_a_child_process_is_tampering_even_past_the_import_rule(
        name: str, task: tuple[Path, dict[str, object], Path]) -> None:
    # the driver alone (no forbidden-import check): the shell these patches start inherits
    # the socket, reads the nonce and answers with a passing record; the kernel's sender
    # pid on what arrives shows it is not the test's process
    from importlib import resources

    driver = resources.files("rewardkit_repo").joinpath("_go_driver.py").read_text()
    score = _driver_run(task, name, driver)
    assert score.value == 0.0
    assert score.details["tests"] == {"TestAdd": "tampered"}
    assert "another process" in score.reason, score.reason


def _module(folder: Path, test_file: str, test_source: str) -> str:
    """A git repository of one Go module at ``folder``: ``m.go`` (``Two()``) and one test
    file, committed; its base commit."""
    from tiny_repo import git

    git(folder, "init", "-q")
    (folder / "go.mod").write_text("module example.com/m\n\ngo 1.19\n")
    (folder / "m.go").write_text("package m\n\nfunc Two() int { return 2 }\n")
    (folder / test_file).write_text(test_source)
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "base")
    return git(folder, "rev-parse", "HEAD")


def test_a_test_patch_and_the_repository_s_own_test_main(tmp_path: Path) -> None:
    # the FAIL_TO_PASS test arrives with the test patch; the package's own TestMain (a
    # base test file) runs around the harness's wrapper
    base = _module(tmp_path, "main_test.go", (
        'package m\n\nimport (\n\t"os"\n\t"testing"\n)\n\nvar ready bool\n\n'
        "func TestMain(m *testing.M) {\n\tready = true\n\tos.Exit(m.Run())\n}\n\n"
        'func TestTwo(t *testing.T) {\n\tif !ready || Two() != 2 {\n\t\tt.Fatal("no")\n\t}\n}\n'))
    test_patch = diff_of(tmp_path, {"three_test.go": (
        'package m\n\nimport "testing"\n\nfunc TestThree(t *testing.T) {\n'
        '\tif !ready || Three() != 3 {\n\t\tt.Fatal("no")\n\t}\n}\n')})
    fix = diff_of(tmp_path, {"m.go": "package m\n\nfunc Two() int { return 2 }\n\n"
                                     "func Three() int { return 3 }\n"})
    wrong = diff_of(tmp_path, {"m.go": "package m\n\nfunc Two() int { return 2 }\n\n"
                                       "func Three() int { return 4 }\n"})
    reference = {"repo": str(tmp_path), "base_commit": base, "test_patch": test_patch,
                 "FAIL_TO_PASS": ["TestThree"], "PASS_TO_PASS": ["TestTwo"]}
    honest = _score(reference, fix)
    assert honest.value == 1.0, (honest.reason, honest.details)
    assert _score(reference, wrong).details["tests"] == {"TestThree": "failed",
                                                        "TestTwo": "passed"}


def test_the_build_has_the_build_environment_and_the_tests_gos_defaults(tmp_path: Path
                                                                        ) -> None:
    """The go command, compiler and linker get GO_BUILD_ENV (as the code reward's Go
    builds do); the test binary runs with Go's defaults: no GOGC, collection at 100%."""
    from rewardkit_repo.workspace import Workspace
    from rewardkit_sandbox.languages.runner import GO_BUILD_ENV

    base = _module(tmp_path, "env_test.go", (
        'package m\n\nimport (\n\t"os"\n\t"runtime/debug"\n\t"testing"\n)\n\n'
        "func TestDefaults(t *testing.T) {\n"
        '\tif os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || '
        "debug.SetGCPercent(100) != 100 || Two() != 2 {\n\t\tt.Fatal(\"not Go's defaults\")"
        "\n\t}\n}\n"))
    reference = {"repo": str(tmp_path), "base_commit": base,
                 "FAIL_TO_PASS": ["TestDefaults"], "PASS_TO_PASS": []}
    score = _score(reference, diff_of(tmp_path, {"m.go": "package m\n\n// two\nfunc Two() "
                                                         "int { return 2 }\n"}))
    assert score.value == 1.0, (score.reason, score.details)
    header = go_runner.build_header(Workspace(str(tmp_path), [], [], []), ["TestDefaults"],
                                    10.0)
    assert header["build_env"] == GO_BUILD_ENV and GO_BUILD_ENV["GOGC"] == "off"
