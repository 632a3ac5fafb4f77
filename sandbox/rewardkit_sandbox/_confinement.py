"""Kernel confinement primitives: prctl, namespaces, mounts, rlimits, credentials, seccomp.

Runs inside the zygote (``python -I -S``), so it depends on the standard library and the
``pyseccomp`` binding of the system libseccomp only.  Every function either succeeds or
raises ``OSError``; the caller decides whether a missing layer is fatal.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
from typing import Any

try:  # imported at once: the zygote hides the paths it came from before it needs it
    import pyseccomp as seccomp

    SECCOMP_UNAVAILABLE = ""
except Exception as error:  # ImportError, or RuntimeError when libseccomp is missing
    seccomp = None
    SECCOMP_UNAVAILABLE = f"{type(error).__name__}: {error}"

_libc = ctypes.CDLL(None, use_errno=True)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_NAMESPACE_FLAGS = (
    CLONE_NEWNS,
    CLONE_NEWCGROUP,
    CLONE_NEWUTS,
    CLONE_NEWIPC,
    CLONE_NEWUSER,
    CLONE_NEWPID,
    CLONE_NEWNET,
)

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

# Syscalls a task never needs and that widen the kernel attack surface or escape the
# other layers.  They fail with EPERM rather than killing, so programs see an error.
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "iopl",
    "ioperm",
    "quotactl",
    "syslog",
    "personality",
    "io_uring_setup",
    "fanotify_init",
    "lookup_dcookie",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "vhangup",
)


def _check(result: int) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def prctl(option: int, value: int = 0) -> None:
    """Call prctl(2) with one argument."""
    _check(
        _libc.prctl(
            option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        )
    )


def unshare(flags: int) -> None:
    """Call unshare(2) (``os.unshare`` only exists from Python 3.12)."""
    _check(_libc.unshare(ctypes.c_int(flags)))


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    """Call mount(2)."""
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        )
    )


def set_rlimits(limits: dict[str, int]) -> None:
    """Apply the task's rlimits; keys name ``resource.RLIMIT_*`` without the prefix."""
    cpu = limits["CPU"]
    # Soft CPU limit sends SIGXCPU, the hard one a second later SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for name in ("AS", "FSIZE", "NOFILE", "NPROC"):
        value = limits[name]
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def drop_privileges(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` with no supplementary groups, irreversibly."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError(errno.EPERM, "uid change did not take effect")


def build_seccomp_filter(deny_network_sockets: bool) -> Any:
    """A libseccomp filter allowing everything except the syscalls listed above.

    Namespace creation through clone(2) is refused; clone3(2) answers ENOSYS so libc
    falls back to clone(2), where the flags can be inspected.  Without a network
    namespace, socket(2) for any family but AF_UNIX is refused as well.
    """
    import socket

    if seccomp is None:
        raise RuntimeError(SECCOMP_UNAVAILABLE)
    syscall_filter = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            syscall_filter.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, RuntimeError, ValueError):
            continue  # not a syscall on this architecture
    syscall_filter.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in _NAMESPACE_FLAGS:
        syscall_filter.add_rule(
            seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag)
        )
    if deny_network_sockets:
        syscall_filter.add_rule(
            seccomp.ERRNO(errno.EACCES), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX)
        )
    return syscall_filter
