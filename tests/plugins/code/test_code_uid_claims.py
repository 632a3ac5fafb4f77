"""Sandbox uid blocks are claimed once per node, in a folder nobody else can plant
(issue 37.13, 37.14).

Before: the claims lived under ``tempfile.gettempdir()``, so two scoring processes with
different ``TMPDIR`` both took block 0 (the same slot uids), and one's end-of-task sweep
(``kill(-1)`` as the slot uid) killed the other's running program with signal 9; and
another local user could make that folder first (``0777``, lock files as links) and have
root create files where the links point, or hold every block.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rewardkit_code import sandboxes
from rewardkit_code.sandboxes import UID_BLOCK, UID_START

from rewardkit.execution.node_folders import UnsafeFolderError, state_root

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="uid blocks are claimed as root")

OTHER_USER = 54321  # the local user who planted the folder

#: one scoring process: prints its pool's uids, then scores `samples` programs that
#: sleep `sleep_s` and echo their stdin, each with a limit of `timeout_s`; two slots, and
#: the node budget of both processes has two (a program of each can run at once)
SCORER = """
import json, sys
from rewardkit_code.sandboxes import shared_sandbox_pool
from rewardkit import RewardSet, Sample
samples, sleep_s, timeout_s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
pool = shared_sandbox_pool(2)  # the reward's pool below (concurrency 2)
print(json.dumps(pool.slot_uids + pool.judge_uids), flush=True)
program = f"import time\\ntime.sleep({sleep_s})\\nprint(input())"
config = {"rewards": {"code": {"reward": "code_execution",
                               "params": {"concurrency": 2, "timeout_s": timeout_s}}}}
rows = [Sample(completion=f"```python\\n{program}\\n```",
               reference=[{"stdin": "7", "stdout": "7"}]) for _ in range(samples)]
scores = RewardSet.from_dict(config).score(rows).scores("code")
print(json.dumps([[s.status.value, s.value, s.reason] for s in scores]), flush=True)
"""


def _scorer(tmp: Path, budget: Path, *args: object) -> subprocess.Popen[str]:
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "RK_BUDGET_DIR": str(budget)}
    return subprocess.Popen([sys.executable, "-c", SCORER, *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_scoring_processes_with_different_tmpdirs_claim_different_uids(tmp_path: Path) -> None:
    # the slow program runs 6 s while the other process's programs time out one after
    # another (each timeout ends in its uid sweep): with shared uids, signal 9 in the
    # slow one, scored as a crash
    slow = _scorer(tmp_path / "a", tmp_path / "budget", 1, 6, 60)
    assert slow.stdout is not None
    slow_uids = set(json.loads(slow.stdout.readline()))
    sweeping = _scorer(tmp_path / "b", tmp_path / "budget", 8, 30, 1)
    slow_out, slow_err = slow.communicate(timeout=240)
    sweep_out, sweep_err = sweeping.communicate(timeout=240)
    assert slow.returncode == sweeping.returncode == 0, (slow_err[-2000:], sweep_err[-2000:])
    sweep_uids = set(json.loads(sweep_out.splitlines()[0]))
    assert slow_uids.isdisjoint(sweep_uids), (slow_uids, sweep_uids)
    assert json.loads(slow_out.splitlines()[-1]) == [["ok", 1.0, "all 1 cases passed"]]
    assert {row[0] for row in json.loads(sweep_out.splitlines()[-1])} == {"ok"}


def test_the_claims_live_in_a_root_only_folder_of_the_node() -> None:
    run = os.lstat("/run")
    if (run.st_uid, run.st_mode & 0o022) == (0, 0):  # only root may make folders there
        assert state_root() == "/run"
    assert os.path.join(state_root(), "rewardkit-code-uids") == sandboxes.UID_CLAIMS
    claim, first = sandboxes._claim_uid_block()
    try:
        info = os.lstat(sandboxes.UID_CLAIMS)
        assert (info.st_uid, info.st_mode & 0o7777) == (0, 0o700)
        assert (first - UID_START) % UID_BLOCK == 0
    finally:
        os.close(claim)


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    """A claim folder another user made, 0777, whose lock files are links to files of
    root's that do not exist yet (root would make them); and where they point."""
    victim = tmp_path / "root-only"
    victim.mkdir(mode=0o700)
    folder = tmp_path / "claims"
    folder.mkdir()
    for block in range(sandboxes.UID_BLOCKS):
        os.symlink(victim / f"made-by-root-{block}", folder / f"block-{block}.lock")
        os.lchown(folder / f"block-{block}.lock", OTHER_USER, OTHER_USER)
    os.chown(folder, OTHER_USER, OTHER_USER)
    folder.chmod(0o777)
    return folder, victim


def test_a_claim_folder_another_user_planted_is_refused(tmp_path: Path) -> None:
    folder, victim = _planted(tmp_path)
    with pytest.raises(UnsafeFolderError, match=f"belongs to uid {OTHER_USER}"):
        sandboxes._claim_uid_block(str(folder))
    assert list(victim.iterdir()) == []


def test_a_claim_folder_open_to_everyone_is_refused_even_when_root_owns_it(
    tmp_path: Path,
) -> None:
    folder, victim = _planted(tmp_path)
    os.chown(folder, 0, 0)  # still 0777: anyone can swap the lock files
    with pytest.raises(UnsafeFolderError, match="mode 0777"):
        sandboxes._claim_uid_block(str(folder))
    assert list(victim.iterdir()) == []


def test_a_lock_file_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    folder, victim = _planted(tmp_path)
    os.chown(folder, 0, 0)
    folder.chmod(0o700)
    with pytest.raises(UnsafeFolderError, match="symbolic link"):
        sandboxes._claim_uid_block(str(folder))
    assert list(victim.iterdir()) == []


def test_a_claim_folder_that_is_a_link_to_a_folder_of_roots_is_refused(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "root-only"
    victim.mkdir(mode=0o700)
    link = tmp_path / "claims"
    link.symlink_to(victim)
    os.lchown(link, OTHER_USER, OTHER_USER)
    with pytest.raises(UnsafeFolderError, match="symbolic link"):
        sandboxes._claim_uid_block(str(link))
    assert list(victim.iterdir()) == []


def test_a_reward_on_a_node_with_a_planted_folder_gets_a_clear_error_score(
    tmp_path: Path,
) -> None:
    folder, victim = _planted(tmp_path)
    script = (
        "import sys\n"
        "from rewardkit_code import sandboxes\n"
        "sandboxes.UID_CLAIMS = sys.argv[1]\n"
        "from rewardkit import RewardSet, Sample\n"
        "config = {'rewards': {'code': {'reward': 'code_execution'}}}\n"
        "row = Sample(completion='```python\\nprint(1)\\n```', "
        "reference=[{'stdin': '', 'stdout': '1'}])\n"
        "score = RewardSet.from_dict(config).score([row]).scores('code')[0]\n"
        "print(score.status.value, score.reason)\n"
    )
    env = {**os.environ, "RK_BUDGET_DIR": str(tmp_path / "budget")}
    done = subprocess.run([sys.executable, "-c", script, str(folder)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("error "), done.stdout
    assert f"node folder {folder} belongs to uid {OTHER_USER}" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert list(victim.iterdir()) == []
