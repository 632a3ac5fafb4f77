"""What the rewardkit-code tests look at in /proc: processes of sandbox slot uids."""

from __future__ import annotations

import os
import time

from rewardkit_code import sandboxes
from rewardkit_sandbox import audit

#: every uid a rewardkit-code pool may give its task children
CODE_UIDS = range(
    sandboxes.UID_START, sandboxes.UID_START + sandboxes.UID_BLOCK * sandboxes.UID_BLOCKS
)


def own_task_uids() -> set[int]:
    """The slot uids of the pools this process holds: the uid blocks whose lock files it
    has open (another test session's pools on the machine are not ours to judge)."""
    uids: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        directory, name = os.path.split(target)
        if os.path.basename(directory) == "rewardkit-code-uids" and name.startswith("block-"):
            block = int(name.removeprefix("block-").removesuffix(".lock"))
            start = sandboxes.UID_START + block * sandboxes.UID_BLOCK
            uids.update(range(start, start + sandboxes.UID_BLOCK))
    return uids


def judge_uids() -> set[int]:
    """The uids of our pools' judges: each slot's judge lives as long as its zygote."""
    return {uid for pool in list(sandboxes._pools.values()) for uid in pool.judge_uids}


def task_processes() -> list[audit.LiveProcess]:
    """(pid, uid, command) of every live process running as a slot uid of our pools."""
    return audit.processes_of_uids(own_task_uids() - judge_uids())


def wait_for_no_task_processes(seconds: float = 3.0) -> list[audit.LiveProcess]:
    """Task processes still alive after ``seconds`` (the zygote reaps right after a run)."""
    deadline = time.monotonic() + seconds
    while True:
        left = task_processes()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)
