"""What the sandbox tests check after every hostile program: limits, processes, files."""

from __future__ import annotations

import os

from rewardkit_sandbox import SandboxLimits, SandboxPool

SLOT_UID_BASE = 61000
TEST_LIMITS = SandboxLimits(
    wall_time_s=2.0,
    cpu_time_s=1.0,
    memory_bytes=256 * 1024 * 1024,
    file_size_bytes=1024 * 1024,
    open_files=64,
    processes=16,
    stdout_bytes=64 * 1024,
    stderr_bytes=64 * 1024,
    disk_bytes=8 * 1024 * 1024,
)


def processes_of_uids(uids: set[int]) -> list[tuple[int, int, str]]:
    """(pid, real uid, name) of every live process whose real uid is in ``uids``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        uid = int(fields["Uid"].split()[0])
        if uid in uids and fields.get("State", "").split()[0] != "Z":
            found.append((int(entry), uid, fields["Name"].strip()))
    return found


def leftover_files(pool: SandboxPool) -> list[str]:
    """Files left in any zygote's private /tmp, /dev/shm and /var/tmp."""
    leftovers = []
    for slot in pool._slots:
        if slot.process is None:
            continue
        for directory in ("tmp", "dev/shm", "var/tmp"):
            root = f"/proc/{slot.process.pid}/root/{directory}"
            try:
                leftovers += [f"{root}/{name}" for name in os.listdir(root)]
            except OSError:
                continue
    return leftovers
