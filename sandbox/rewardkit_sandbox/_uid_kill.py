"""Kill every process of a uid, at once: the one way the pool and the zygote end a task
that may be forking faster than it can be listed.  Standard library only (the zygote
imports it)."""

from __future__ import annotations

import os
import signal


def kill_every_process_of_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` and nothing else.

    A forked helper becomes ``uid`` and calls kill(-1): the kernel signals every process
    of that uid at once, and refuses new forks to a process with a fatal signal pending,
    so a fork bomb cannot outrun it.  The helper only makes syscalls, so forking from a
    threaded process (the pool) is safe.  Needs root (to become ``uid``).
    """
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
