"""A budget's folder is used only when it is safe (issue 37.14).

The budget's files live at a fixed path, so another local user can make it first: a
link to a folder of root's (before: root created ``slot-*.lock``, ``settings``, ``rate``
there, as the link's target passed the ownership check), a folder of theirs or one
anyone may write (they could swap its files for links). Each is refused with an error
that names the path and what is wrong; the real folders are planted here as root, the
"other user" being a uid that owns them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rewardkit_sandbox.budget import ExecutionBudget, runtime_directory

from rewardkit.execution.node_folders import UnsafeFolderError, state_root

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plants other users' files as root")

OTHER_USER = 54321


def _victim(tmp_path: Path) -> Path:
    """A folder of root's that nothing should write into."""
    victim = tmp_path / "root-only"
    victim.mkdir(mode=0o700)
    return victim


def test_a_base_folder_that_is_a_link_to_a_folder_of_roots_is_refused(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "rewardkit-budget-0"
    link.symlink_to(victim)
    os.lchown(link, OTHER_USER, OTHER_USER)
    refusal = f"{re.escape(str(link))}.*symbolic link of uid {OTHER_USER}"
    with pytest.raises(UnsafeFolderError, match=refusal):
        ExecutionBudget("local-sandbox", slots=2, directory=str(link))
    assert list(victim.iterdir()) == []


def test_a_base_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "rewardkit-budget-0"
    base.mkdir(mode=0o777)
    os.chown(base, OTHER_USER, OTHER_USER)
    with pytest.raises(UnsafeFolderError, match=f"folder of uid {OTHER_USER}"):
        ExecutionBudget("local-sandbox", slots=2, directory=str(base))
    assert list(base.iterdir()) == []


def test_a_base_folder_anyone_may_write_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "rewardkit-budget-0"
    base.mkdir()
    base.chmod(0o777)
    with pytest.raises(UnsafeFolderError, match="mode 0777, not sticky"):
        ExecutionBudget("local-sandbox", slots=2, directory=str(base))
    assert list(base.iterdir()) == []


def test_a_budget_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    base = tmp_path / "budgets"
    base.mkdir(mode=0o700)
    (base / "local-sandbox").symlink_to(victim)
    with pytest.raises(UnsafeFolderError, match="local-sandbox is a symbolic link"):
        ExecutionBudget("local-sandbox", slots=2, directory=str(base))
    assert list(victim.iterdir()) == []


def test_a_lock_file_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    folder = tmp_path / "budgets" / "local-sandbox"
    folder.mkdir(parents=True, mode=0o700)
    (folder / "size.lock").symlink_to(victim / "made-by-root")
    with pytest.raises(UnsafeFolderError, match=r"size\.lock is a symbolic link"):
        ExecutionBudget("local-sandbox", slots=2, directory=str(folder.parent))
    assert list(victim.iterdir()) == []


def test_a_safe_folder_is_made_private_and_used(tmp_path: Path) -> None:
    budget = ExecutionBudget("fine", slots=1, directory=str(tmp_path / "new" / "budgets"))
    with budget.acquire() as ticket:
        assert ticket.slot == 0
    for folder in (tmp_path / "new", tmp_path / "new" / "budgets", Path(budget.directory)):
        info = os.lstat(folder)
        assert (info.st_uid, info.st_mode & 0o7777) == (0, 0o700), folder


def test_roots_budgets_live_where_no_other_user_can_make_folders() -> None:
    run = os.lstat("/run")
    if (run.st_uid, run.st_mode & 0o022) != (0, 0):
        pytest.skip("/run may be written by others here")
    assert state_root() == "/run"
    env = {k: v for k, v in os.environ.items() if k != "RK_BUDGET_DIR"}
    shown = subprocess.run(
        [sys.executable, "-c",
         "from rewardkit_sandbox.budget import runtime_directory; print(runtime_directory())"],
        env=env, capture_output=True, text=True, check=True,
    )
    assert shown.stdout.strip() == "/run/rewardkit-budget-0"
    assert runtime_directory() == os.environ.get("RK_BUDGET_DIR", "/run/rewardkit-budget-0")


def test_an_unsafe_budget_folder_is_a_clear_error_score(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "planted"
    link.symlink_to(victim)
    os.lchown(link, OTHER_USER, OTHER_USER)
    script = (
        "from rewardkit import RewardSet, Sample\n"
        "config = {'rewards': {'code': {'reward': 'code_execution'}}}\n"
        "row = Sample(completion='```python\\nprint(1)\\n```', "
        "reference=[{'stdin': '', 'stdout': '1'}])\n"
        "score = RewardSet.from_dict(config).score([row]).scores('code')[0]\n"
        "print(score.status.value, score.reason)\n"
    )
    env = {**os.environ, "RK_BUDGET_DIR": str(link)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("error "), done.stdout
    assert f"{link}, above a node folder, is a symbolic link of uid {OTHER_USER}" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert list(victim.iterdir()) == []
