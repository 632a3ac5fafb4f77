"""A task's clean-up (rewardkit_sandbox.zygote.workdir): why the zygote is retired when its
scratch space is not empty again.

A world-writable folder the pool found (another test worker's /run/rk-ww-<pid>, say) and
then removed on the host takes the zygote's tmpfs over it with it (the kernel detaches a
mount on a removed folder): every zygote of every pool that covered it is retired at its
next task, all at once.  That is right (a folder made there again would be the host's,
shared), and the reason says so instead of "files of the task could not be removed"."""

from __future__ import annotations

from pathlib import Path

from rewardkit_sandbox.zygote.workdir import WorkDirectories


def _directories(scratch: list[Path], base: Path) -> WorkDirectories:
    # mountns=True: the scratch folders are taken as the zygote's own tmpfs mounts
    return WorkDirectories(
        uid=0, gid=0, uid_isolation=False, mountns=True, fixed_workdir="",
        workdir_base=str(base), chmod_workdir=False, scratch_dirs=(),
        scratch_mounts=[str(path) for path in scratch],
    )


def test_a_scratch_folder_removed_outside_is_named_as_gone(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    directories = _directories([gone], tmp_path)
    workdir = directories.make()
    gone.rmdir()
    assert directories.clean(workdir) is False
    assert directories.why_not_clean() == (
        f"scratch folders {[str(gone)]} were removed outside the sandbox (their tmpfs is gone)"
    )


def test_files_left_in_a_scratch_folder_are_named_as_such(tmp_path: Path) -> None:
    # on a plain folder (not tmpfs) the size check never holds: the task's files reason
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    directories = _directories([scratch], tmp_path)
    assert directories.clean(directories.make()) is False
    assert directories.why_not_clean() == "files of the task could not be removed"
