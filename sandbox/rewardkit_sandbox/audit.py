"""Checking that nothing outlived its task: processes of the slot uids, files left in the
zygotes' private scratch directories. Used by the tests and the benchmark, and by anyone
who wants to verify a pool after a run.

>>> from rewardkit_sandbox import SandboxPool
>>> with SandboxPool(size=1) as pool:
...     _ = pool.run("import os; os.fork()")
...     assert not processes_of_uids(set(pool.slot_uids))
...     assert not leftover_files(pool)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the pool asks processes_of_uids which uids are busy: no import cycle
    from rewardkit_sandbox.pool import SandboxPool

#: the scratch directories every zygote mounts privately (relative to its root)
SCRATCH_DIRS = ("tmp", "dev/shm", "var/tmp")


class LiveProcess(NamedTuple):
    pid: int
    uid: int
    command: str


def processes_of_uids(uids: set[int]) -> list[LiveProcess]:
    """Every live (not zombie) process whose real uid is in ``uids``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # gone meanwhile
        uid = int(fields["Uid"].split()[0])
        if uid in uids and fields.get("State", "").split()[:1] != ["Z"]:
            found.append(LiveProcess(int(entry), uid, command[:80] or fields["Name"].strip()))
    return found


def leftover_files(pool: SandboxPool, host_tmp: bool = True) -> list[str]:
    """Entries left in any live zygote's private scratch directories (/tmp, /dev/shm,
    /var/tmp and every other world-writable folder the pool found, such as /run/lock; seen
    through /proc/<zygote>/root), plus (``host_tmp``) task directories left in the host's
    /tmp and anything a slot or judge uid owns in the host's world-writable folders."""
    directories = sorted({*SCRATCH_DIRS, *(path.lstrip("/") for path in pool.world_writable_dirs)})
    leftovers = []
    for pid in pool.zygote_pids():
        for directory in directories:
            root = f"/proc/{pid}/root/{directory}"
            try:
                leftovers += [f"{root}/{name}" for name in os.listdir(root)]
            except OSError:
                continue
    if host_tmp:
        leftovers += [f"/tmp/{name}" for name in os.listdir("/tmp")
                      if name.startswith("rewardkit-task-")]
        uids = {*pool.slot_uids, *pool.judge_uids}
        for directory in pool.world_writable_dirs:
            leftovers += [entry.path for entry in _entries(directory)
                          if _owner(entry) in uids and entry.path not in leftovers]
    return leftovers


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError:
        return []


def _owner(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_uid
    except OSError:
        return -1  # gone meanwhile
