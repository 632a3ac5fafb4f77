"""The zygote's start-up, part 2: which per-task layers hold, seen in throw-away children.

rlimits, the uid change, no-new-privs and seccomp are tried in one forked probe child;
killing a process group in another.  Guarantees: every layer is reported as what a
child actually got, never as what was asked for.  Standard library only (see
:mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import time

from rewardkit_sandbox import _confinement as confinement

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rewardkit_sandbox.zygote.reaping import Reaper


def layer(active: bool, detail: str) -> dict[str, Any]:
    """One entry of the layer report the zygote sends when ready."""
    return {"active": active, "detail": detail}


class ProbeConfinement:
    """What the probe child confines itself with: the zygote's, as set up so far."""

    __slots__ = ("gid", "netns", "nnp_error", "seccomp_error", "seccomp_program", "uid")

    def __init__(
        self,
        uid: int,
        gid: int,
        netns: bool,
        seccomp_program: confinement.SeccompProgram | None,
        seccomp_error: str,
        nnp_error: str,
    ) -> None:
        self.uid = uid
        self.gid = gid
        self.netns = netns
        self.seccomp_program = seccomp_program
        self.seccomp_error = seccomp_error
        self.nnp_error = nnp_error


def probe_child_layers(
    layers: dict[str, dict[str, Any]],
    confine: ProbeConfinement,
) -> bool:
    """See, in a throw-away child, which per-task layers hold; record them in ``layers``.

    Returns whether tasks run as the slot uid (uid isolation holds)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        outcome = _confine_probe(confine)
        os.write(write_fd, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write_fd)
    raw = b""
    while chunk := os.read(read_fd, 65536):
        raw += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    outcome = json.loads(raw) if raw else {}
    details = {
        "rlimits": "AS, CPU, FSIZE, NOFILE, NPROC, CORE=0",
        "uid_isolation": f"uid {confine.uid}, gid {confine.gid}, no groups",
        "no_new_privs": "PR_SET_NO_NEW_PRIVS (set in the zygote, inherited)",
        "seccomp": "libseccomp deny-list (ptrace, mount, bpf, namespaces, ...)",
    }
    if confine.seccomp_program is not None:
        details["seccomp"] += (
            f"; {confine.seccomp_program.instructions} BPF instructions,"
            " loaded in the zygote, inherited"
        )
    for name, detail in details.items():
        error = outcome.get(name, "probe child died")
        layers[name] = layer(error is None, detail if error is None else error)
    if not confine.netns and layers["seccomp"]["active"]:
        layers["seccomp"]["detail"] += " + socket() other than AF_UNIX"
    return bool(layers["uid_isolation"]["active"])

def _confine_probe(confine: ProbeConfinement) -> dict[str, str | None]:
    outcome: dict[str, str | None] = {}
    try:
        os.setsid()
        confinement.set_rlimits(
            {"CPU": 5, "AS": 1 << 30, "FSIZE": 1 << 20, "NOFILE": 64, "NPROC": 64}
        )
        outcome["rlimits"] = None
    except OSError as error:
        outcome["rlimits"] = str(error)
    if os.geteuid() != 0:
        outcome["uid_isolation"] = "not started as root: tasks share the pool's uid"
    else:
        try:
            confinement.drop_privileges(confine.uid, confine.gid)
            outcome["uid_isolation"] = None
        except OSError as error:
            outcome["uid_isolation"] = str(error)
    try:
        inherited = confinement.prctl_get(confinement.PR_GET_NO_NEW_PRIVS) == 1
        outcome["no_new_privs"] = None if inherited else (confine.nnp_error or "not set")
    except OSError as error:
        outcome["no_new_privs"] = str(error)
    if confine.seccomp_program is None:
        outcome["seccomp"] = confine.seccomp_error or "no filter"
    else:
        try:
            confinement.unshare(0)
            outcome["seccomp"] = "filter loaded but unshare(2) still allowed"
        except OSError as error:
            outcome["seccomp"] = None if error.errno == errno.EPERM else str(error)
    return outcome

def probe_process_group_kill(layers: dict[str, dict[str, Any]], reaper: Reaper) -> None:
    """Kill a two-member process group with killpg and see both die."""
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_read)
        os.setsid()
        if os.fork() == 0:  # a member of the group that is not its leader
            os.write(ready_write, b"x")
            time.sleep(60)
            os._exit(0)
        time.sleep(60)
        os._exit(0)
    os.close(ready_write)
    os.read(ready_read, 1)  # the group exists and has its second member
    os.close(ready_read)
    try:
        os.killpg(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        reaper.reap_descendants(time.monotonic() + 2.0)
        detail = "killpg(SIGKILL) of the task's process group"
        layers["process_group_kill"] = layer(killed, detail)
    except OSError as error:
        layers["process_group_kill"] = layer(False, f"killpg failed: {error}")
