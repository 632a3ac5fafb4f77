"""Claims on sandbox uids, one lock file per uid, so that two pools (in one process or in
two processes of the node: two reward services, two Ray workers, two test runs) never
share a slot or judge uid.  Sharing one is not harmless: the zygote's end-of-task sweep
and the pool's clean-up of a broken zygote kill every process of the uid
(``kill_every_process_of_uid``), the other pool's running task included.

A claim is an exclusive ``flock`` on ``uid-<N>.lock`` in :data:`CLAIMS_FOLDER` (a node
folder of root's, mode 0700: ``/run/rewardkit-sandbox-uids`` where only root may write
``/run``; checked by :mod:`rewardkit.execution.node_folders`), held on a descriptor the
pool keeps open.  The kernel drops it when the descriptor closes: at ``close()``, or when
the process dies, however (SIGKILL too), so a dead pool's uids are free at once and a
lock file left behind claims nothing.  The files are never removed (another process may
hold one open).

Forks: an flock belongs to the open file description, which a fork shares.  The
descriptors are close-on-exec (a zygote started with ``subprocess`` never holds them),
and a child made with ``os.fork`` closes its copies at once (``os.register_at_fork``):
its parent's claim then ends with its parent, never later because a forked worker lives
on.  Closing a copy never unlocks the parent's (only ``LOCK_UN`` would, which is never
called), so the parent keeps its claim.

Only root claims: without root a pool's tasks run as the pool's own uid.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import weakref

#: the node's folder of uid claims, under ``state_root()`` (``/run`` for root)
CLAIMS_FOLDER_NAME = "rewardkit-sandbox-uids"
#: where a pool without an explicit ``uid_base`` looks for free uids: [60000, 64000)
#: (rewardkit-code's pools claim blocks of their own from 64000 up)
DEFAULT_UID_BASE = 60000
DEFAULT_UID_END = 64000


class UidsTakenError(RuntimeError):
    """The uids asked for are claimed by another live pool (or no free range is left)."""


def claims_folder() -> str:
    from rewardkit.execution.node_folders import state_root

    return os.path.join(state_root(), CLAIMS_FOLDER_NAME)


_live: weakref.WeakSet[UidClaim] = weakref.WeakSet()
_live_lock = threading.Lock()


class UidClaim:
    """Uids ``first .. first + count - 1``, held until :meth:`release` (or process exit)."""

    def __init__(self, first: int, count: int, fds: list[int], folder: str) -> None:
        self.first = first
        self.count = count
        self.folder = folder
        self._fds = fds
        with _live_lock:
            _live.add(self)

    @property
    def uids(self) -> range:
        return range(self.first, self.first + self.count)

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def release(self) -> None:
        """Close the lock descriptors (the kernel frees the uids).  Idempotent."""
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _forget_in_child(self) -> None:
        # the parent's lock stays: only closing its own last copy or LOCK_UN ends it
        self.release()


def _after_fork_in_child() -> None:
    for claim in list(_live):
        claim._forget_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _lock_path(folder: str, uid: int) -> str:
    return os.path.join(folder, f"uid-{uid}.lock")


def _holder(folder: str, uid: int) -> str:
    """Who holds ``uid``'s lock, as its file says (the pid the claimer wrote)."""
    with contextlib.suppress(OSError, ValueError), open(_lock_path(folder, uid)) as file:
        return f"pid {int(file.read().strip())}"
    return "another process"


def _try_claim(first: int, count: int, folder: str) -> UidClaim | int:
    """The claim of ``first .. first + count - 1``, or the first of them that is taken
    (every lock this call took is released then)."""
    from rewardkit.execution.node_folders import open_private_file

    fds: list[int] = []
    try:
        for uid in range(first, first + count):
            fd = open_private_file(_lock_path(folder, uid))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                for held in fds:
                    os.close(held)
                fds = []
                return uid
            fds.append(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        for held in fds:
            os.close(held)
        raise
    return UidClaim(first, count, fds, folder)


def claim_uids(count: int, base: int | None = None, folder: str | None = None) -> UidClaim:
    """Claim ``count`` consecutive uids.

    ``base`` given: exactly ``base .. base + count - 1``, else :class:`UidsTakenError`
    (the caller named those uids for a reason: its own claimed block, rules or quotas
    keyed on them; running as others would break it silently).  ``base`` None: the
    first range in [``DEFAULT_UID_BASE``, ``DEFAULT_UID_END``) that no live pool claims
    and no process runs as (a pool that claimed nothing: an older rewardkit); else
    :class:`UidsTakenError`.  ``UnsafeFolderError`` when the claims folder is not root's
    own (see :mod:`rewardkit.execution.node_folders`).
    """
    from rewardkit.execution.node_folders import private_folder
    from rewardkit_sandbox.audit import processes_of_uids

    folder = private_folder(folder or claims_folder())
    if base is not None:
        got = _try_claim(base, count, folder)
        if isinstance(got, int):
            raise UidsTakenError(
                f"sandbox uid {got} (of uid_base={base}, uids {base}..{base + count - 1}) "
                f"is claimed by another live SandboxPool ({_holder(folder, got)}, lock file "
                f"{_lock_path(folder, got)}): leave uid_base out to take the next free "
                "range, or choose other uids"
            )
        return got
    start = DEFAULT_UID_BASE
    while start + count <= DEFAULT_UID_END:
        got = _try_claim(start, count, folder)
        if isinstance(got, int):
            start = got + 1
            continue
        busy = processes_of_uids(set(got.uids))
        if not busy:
            return got
        got.release()
        start = max(process.uid for process in busy) + 1
    raise UidsTakenError(
        f"no {count} free consecutive sandbox uids in {DEFAULT_UID_BASE}.."
        f"{DEFAULT_UID_END - 1}: other live pools claim them (lock files in {folder}) "
        "or processes run as them; close some pools or give a smaller size"
    )
