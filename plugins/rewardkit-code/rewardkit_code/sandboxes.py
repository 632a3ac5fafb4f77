"""One sandbox pool (:func:`shared_sandbox_pool`) and one thread executor feeding it
(:func:`shared_call_threads`) per process and setting, shared by rewards.

Starting a ``SandboxPool`` costs a zygote per slot, so rewards do not own pools: they
ask for one here on first use and every reward instance with the same settings gets
the same pool. Pools are closed when the process exits. A process forked after a pool
was made (a worker) does not reuse its parent's zygotes: it makes its own.

Each pool gets its own block of slot uids. Two pools sharing a uid would share its
process limit, and the zygote's end-of-task sweep (``kill(-1)`` as the slot uid) of
one would kill the other's tasks; so every pool, in this process or another one on the
machine (trainer ranks, worker processes), claims a block of ``UID_BLOCK`` uids from
``UID_START`` up with a lock file held for the pool's life, in one fixed folder of the
node (:data:`UID_CLAIMS`, never under ``$TMPDIR``: processes with different ones would
claim the same block), checked like every node folder
(:mod:`rewardkit.execution.node_folders`: root's own, 0700, no links), and skips a block
whose uids still run a process (a pool that did not claim it). Only root claims: without
root a pool's tasks run as the pool's own uid.

Pools are per process, so every local sandbox run (``code_execution``'s programs, the
``python`` reward's children) also holds a slot of one node-wide budget,
:func:`local_budget`: ranks and workers with pools of their own still run at most that
many at once together.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from rewardkit_sandbox import SandboxPool
from rewardkit_sandbox.audit import processes_of_uids

from rewardkit import ExecutionBudget, node_budget
from rewardkit.execution.node_folders import open_private_file, private_folder, state_root

#: first slot uid of rewardkit-code pools (the sandbox's own default, 60000, and its
#: test suite's 61000 range stay free for direct SandboxPool users)
UID_START = 64000
UID_BLOCK = 256
UID_BLOCKS = 64
#: the node's folder of uid-block claims (``/run/rewardkit-code-uids`` for root)
UID_CLAIMS = os.path.join(state_root(), "rewardkit-code-uids")

_lock = threading.Lock()
_owner_pid = os.getpid()
_pools: dict[tuple[int, tuple[str, ...]], SandboxPool] = {}
_uid_claims: list[int] = []  # lock-file descriptors held for this process's pools
_executors: dict[tuple[str, int], ThreadPoolExecutor] = {}
#: objects inherited over fork: kept referenced so their finalizers never run here
_inherited: list[object] = []


#: the node-wide budget every local sandbox run holds a slot of (all processes and ranks)
LOCAL_BUDGET = "local-sandbox"


def local_budget(concurrency: int | None = None) -> ExecutionBudget:
    """The node's budget of local sandbox runs: ``concurrency`` slots, by default the
    node's CPU count (the same for every process, so they share the same slots)."""
    return node_budget(LOCAL_BUDGET, slots=concurrency or os.cpu_count() or 1)


#: the most ``concurrency`` a reward may ask for: a run in flight holds a lock file and a
#: socket or a sandbox slot (a zygote), and a process has 1,024 descriptors by default
MOST_CONCURRENCY = 256
#: the most sandbox slots one local pool has: each slot takes a task uid and a judge uid
#: of the process's claimed block
MOST_LOCAL_SLOTS = UID_BLOCK // 2


def default_slots() -> int:
    """Sandbox slots when a reward does not say: the CPUs this process may use."""
    return len(os.sched_getaffinity(0))


def _forget_if_forked() -> None:
    global _owner_pid
    if os.getpid() != _owner_pid:
        _inherited.extend([*_pools.values(), *_executors.values(), *_uid_claims])
        _pools.clear()
        _executors.clear()
        _uid_claims.clear()
        _owner_pid = os.getpid()


def shared_sandbox_pool(
    slots: int | None = None, import_paths: Sequence[str] = ()
) -> SandboxPool:
    """The process's sandbox pool (zygotes, slot uids) with ``slots`` slots (default: CPU
    count) and ``import_paths``.

    Raises ``rewardkit_sandbox.SandboxUnavailableError`` when the machine cannot confine
    untrusted code; the reward reports that as an error score.
    """
    key = (slots or default_slots(), tuple(import_paths))
    with _lock:
        _forget_if_forked()
        pool = _pools.get(key)
        if pool is None:
            if key[0] > MOST_LOCAL_SLOTS:  # a slot uid and a judge uid per slot
                raise ValueError(
                    f"at most {MOST_LOCAL_SLOTS} sandbox slots per pool, got {key[0]}"
                )
            claim, uid_base = _claim_uid_block()
            try:
                pool = SandboxPool(size=key[0], import_paths=list(key[1]), uid_base=uid_base)
            except BaseException:
                if claim >= 0:
                    os.close(claim)
                raise
            if claim >= 0:
                _uid_claims.append(claim)
            _pools[key] = pool
        return pool


def _claim_uid_block(directory: str | None = None) -> tuple[int, int]:
    """(lock descriptor, first uid) of a uid block no other live pool holds and no
    process runs as, claimed in ``directory`` (default :data:`UID_CLAIMS`); (-1,
    ``UID_START``) without root. ``UnsafeFolderError`` when the folder or a lock file in
    it is not safe (another user's, open to others, a link)."""
    if os.geteuid() != 0 and directory is None:
        return -1, UID_START
    directory = private_folder(directory or UID_CLAIMS)
    busy = 0
    for block in range(UID_BLOCKS):
        fd = open_private_file(os.path.join(directory, f"block-{block}.lock"))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        start = UID_START + block * UID_BLOCK
        if processes_of_uids(set(range(start, start + UID_BLOCK))):
            os.close(fd)  # a pool that claimed nothing (older rewardkit, another TMPDIR)
            busy += 1
            continue
        return fd, start
    raise RuntimeError(
        f"all {UID_BLOCKS} sandbox uid blocks are taken (lock files in {directory}; "
        f"{busy} of them unclaimed but running processes)"
    )


def shared_call_threads(name: str, threads: int) -> ThreadPoolExecutor:
    """The process's thread executor named ``name`` with ``threads`` threads, on which a
    reward's blocking calls (a sandbox run, a remote sandbox request) wait.

    Not :func:`rewardkit.execution.ray.shared_executor` (the Ray actors a reward set's
    chunks go to) nor :func:`rewardkit.execution.pool.shared_pool` (its worker
    processes): those run reward calls, these threads wait on one.
    Blocking calls run here so an async reward keeps every slot busy.
    """
    key = (name, threads)
    with _lock:
        _forget_if_forked()
        executor = _executors.get(key)
        if executor is None:
            executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
            _executors[key] = executor
        return executor


@atexit.register
def close_all() -> None:
    """Stop every pool this process started (also run at interpreter exit)."""
    with _lock:
        _forget_if_forked()
        pools = list(_pools.values())
        executors = list(_executors.values())
        claims = list(_uid_claims)
        _pools.clear()
        _executors.clear()
        _uid_claims.clear()
    for executor in executors:
        executor.shutdown(wait=False, cancel_futures=True)
    for pool in pools:
        pool.close()
    for claim in claims:
        os.close(claim)
