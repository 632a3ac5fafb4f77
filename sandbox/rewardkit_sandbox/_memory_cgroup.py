"""A memory cgroup per slot: a task's memory counted whole.

Rlimits count per process and miss memory: RLIMIT_DATA does not count ``MAP_SHARED``
mappings, and a task of several processes gets the limit once per process. A memory
cgroup counts every page the task's processes charge, shared memory and tmpfs files
included, and its OOM killer ends the task when the total passes the limit.

The pool (as root, or as the owner of a delegated cgroup) creates one cgroup per slot
under or beside the cgroup it runs in: cgroup v2 where the memory controller can be
had there (``memory.max``, ``memory.swap.max`` 0), else a writable cgroup v1
memory hierarchy (``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``). The
zygote sets the limit before each task (tasks have their own limits) and each task child
joins the cgroup before it drops its privileges; the zygote itself stays outside. Where
neither is available, the rlimits stay the limit (``memory_cgroup`` layer: missing).

Standard library only, and ``os`` alone on the zygote's side (every module there is
paid per task).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_names = itertools.count()


def _mounts() -> list[tuple[str, str, str, str]]:
    """(root, mount point, file system type, super options) of every mount."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            before, _, after = line.partition(" - ")
            fields, tail = before.split(), after.split()
            if len(fields) >= 5 and len(tail) >= 3:
                found.append((fields[3], fields[4], tail[0], tail[2]))
    return found


def _own_cgroups() -> dict[str, str]:
    """Controller ("" for cgroup v2) -> our cgroup's path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) == 3:
                for controller in parts[1].split(",") if parts[1] else [""]:
                    paths.setdefault(controller, parts[2])
    return paths


def _folder(mount_root: str, mount_point: str, path: str) -> str | None:
    """Where cgroup ``path`` lies under a mount of the hierarchy rooted at ``mount_root``."""
    root = mount_root.rstrip("/")
    if root and path != root and not path.startswith(root + "/"):
        return None
    return os.path.join(mount_point, path[len(root):].lstrip("/"))


def _v2_parent() -> tuple[str | None, str]:
    """Where the slots' cgroups go: under our cgroup when it may enable the memory
    controller for its children (it holds no process, or is the hierarchy's root), else
    beside it, under its parent, when our cgroup has the controller (the parent enables
    it) and we may write there (root in a container, a delegated subtree)."""
    path = _own_cgroups().get("")
    if path is None:
        return None, "no cgroup v2 hierarchy in /proc/self/cgroup"
    for root, point, kind, _ in _mounts():
        if kind != "cgroup2":
            continue
        folder = _folder(root, point, path)
        if folder is None or not os.path.isdir(folder):
            continue
        try:
            with open(os.path.join(folder, "cgroup.subtree_control")) as handle:
                enabled = handle.read().split()
            with open(os.path.join(folder, "cgroup.controllers")) as handle:
                available = handle.read().split()
        except OSError as error:
            return None, f"cgroup v2 at {folder}: {error.strerror}"
        if "memory" in enabled:
            return folder, ""
        if "memory" not in available:
            return None, f"cgroup v2 at {folder}: no memory controller in cgroup.controllers"
        try:  # refused (EBUSY) where our cgroup holds processes and is not the root
            with open(os.path.join(folder, "cgroup.subtree_control"), "w") as handle:
                handle.write("+memory")
            return folder, ""
        except OSError as error:
            refused = error.strerror
        parent = os.path.dirname(folder.rstrip("/"))
        if os.path.normpath(folder) != os.path.normpath(point) and os.access(parent, os.W_OK):
            return parent, ""
        return None, (
            f"cgroup v2 at {folder}: +memory in its cgroup.subtree_control refused "
            f"({refused}) and its parent is not ours to write (docs/sandbox.md, Memory)"
        )
    return None, "no cgroup v2 mount holds our cgroup"


def _v1_parent() -> tuple[str | None, str]:
    path = _own_cgroups().get("memory")
    if path is None:
        return None, "no cgroup v1 memory hierarchy"
    for root, point, kind, options in _mounts():
        if kind == "cgroup" and "memory" in options.split(","):
            folder = _folder(root, point, path)
            if folder is not None and os.path.isdir(folder):
                return folder, ""
    return None, "no cgroup v1 memory mount holds our cgroup"


class MemoryCgroups:
    """The pool's per-slot memory cgroups; ``detail`` says which kind, or why none."""

    def __init__(self, size: int) -> None:
        self.version = 0
        self.slots: list[str] = []
        problems = []
        for version, find in ((2, _v2_parent), (1, _v1_parent)):
            parent, problem = find()
            if parent is None:
                problems.append(problem)
                continue
            try:
                self._create(parent, size, version)
            except OSError as error:
                self.close()
                problems.append(f"cgroup v{version} at {parent}: {error}")
                continue
            self.version = version
            limit = "memory.max" if version == 2 else "memory.limit_in_bytes"
            self.detail = (
                f"cgroup v{version} memory cgroup per slot under {parent} ({limit} = the "
                "task's memory limit: every process, shared memory and tmpfs files count)"
            )
            return
        self.detail = (
            "address space only (RLIMIT_AS; RLIMIT_DATA for java/node/go under their "
            f"limit plus the runtime's reservation): {'; '.join(problems)}"
        )

    def _create(self, parent: str, size: int, version: int) -> None:
        for name in os.listdir(parent):  # left by a pool whose process was killed
            owner = name.split("-")[2] if name.startswith("rewardkit-sandbox-") else ""
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(parent, name))
        base = f"rewardkit-sandbox-{os.getpid()}-{next(_names)}"
        for index in range(size):
            folder = os.path.join(parent, f"{base}-slot{index}")
            os.mkdir(folder, 0o755)
            self.slots.append(folder)
            if version == 2:
                for name in ("memory.max", "memory.events", "cgroup.procs"):
                    if not os.path.exists(os.path.join(folder, name)):
                        raise OSError(errno.ENOENT, f"{name} missing (memory not enabled)")
                swap = os.path.join(folder, "memory.swap.max")
                if os.path.exists(swap):
                    with open(swap, "w") as handle:
                        handle.write("0")
            else:
                # the OOM killer, not a pause, ends a task at its limit
                with open(os.path.join(folder, "memory.oom_control"), "w") as handle:
                    handle.write("0")

    def for_slot(self, index: int) -> dict[str, Any] | None:
        """What the slot's zygote needs (see :class:`SlotMemory`), or None."""
        if not self.version:
            return None
        folder = self.slots[index]
        if self.version == 2:
            return {"folder": folder, "limit": "memory.max", "swap": None,
                    "events": "memory.events", "join": "cgroup.procs"}
        swap = "memory.memsw.limit_in_bytes"
        return {"folder": folder, "limit": "memory.limit_in_bytes",
                "swap": swap if os.path.exists(os.path.join(folder, swap)) else None,
                "events": "memory.oom_control", "join": "tasks"}

    def close(self) -> None:
        """Remove the cgroups (each is empty once its zygote and tasks are gone)."""
        for folder in self.slots:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        self.slots = []


class SlotMemory:
    """The zygote's side: set a task's limit, let a task child join, count OOM kills.

    Opened once at start-up, before the zygote's mounts, and kept open: the limit files
    as the zygote (the limit is set before each fork), and the file the children join
    by, writing ``0`` (themselves) into it before they drop their privileges.

    Under cgroup v1 that file is ``tasks`` (move the calling thread), not ``cgroup.procs``
    (move its whole thread group): the kernel takes its global threadgroup lock for
    writing, and so waits for an RCU grace period (~10-25 ms of wall time on a busy
    machine whenever no other cgroup write came just before), only for a thread group;
    for the calling thread alone it skips it (~0.1 ms). A task child has one thread (a
    fork copies only the thread that forked) and joins before it runs anything, so the
    whole process moves, and every thread or process it starts later is born in the
    cgroup. Under v2 a thread cannot leave its domain alone: ``cgroup.procs``.
    """

    def __init__(self, config: dict[str, Any]) -> None:
        folder = config["folder"]
        join = str(config.get("join") or "cgroup.procs")
        self.procs = os.open(os.path.join(folder, join), os.O_WRONLY | os.O_CLOEXEC)
        self.limit = os.open(os.path.join(folder, config["limit"]), os.O_WRONLY | os.O_CLOEXEC)
        self.swap = -1
        if config.get("swap"):
            self.swap = os.open(os.path.join(folder, config["swap"]), os.O_WRONLY | os.O_CLOEXEC)
        self.events = os.open(os.path.join(folder, config["events"]), os.O_RDONLY | os.O_CLOEXEC)
        self.current = -1

    def set_limit(self, limit: int) -> None:
        """The cgroup's limit, ``limit`` bytes (and as much memory + swap, cgroup v1):
        the smaller first when it shrinks, the larger first when it grows (v1 keeps
        memory <= memory + swap)."""
        if limit == self.current:
            return
        value = str(limit).encode()
        shrinks = self.current < 0 or limit < self.current  # -1: unlimited so far
        order = [self.limit, self.swap] if shrinks else [self.swap, self.limit]
        for fd in order:
            if fd >= 0:
                os.write(fd, value)
        self.current = limit

    def oom_kills(self) -> int:
        """How many processes the cgroup's OOM killer ended so far."""
        text = os.pread(self.events, 4096, 0).decode()
        for line in text.splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def join(self) -> None:
        """Move the calling process (a task child, still privileged, with one thread)
        into the cgroup."""
        os.write(self.procs, b"0")


def raise_oom_score(adjustment: int) -> None:
    """Offer this process (and what it forks) to the OOM killer before the trainer:
    raising ``oom_score_adj`` needs no privilege. Best effort (no /proc: nothing)."""
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
        handle.write(str(adjustment))
