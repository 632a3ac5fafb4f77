"""Kernel confinement primitives: prctl, namespaces, mounts, rlimits, credentials, seccomp.

Runs inside the zygote (``python -I -S``), so it depends on the standard library only.
The seccomp rules are compiled to BPF by the pool with the ``pyseccomp`` binding of the
system libseccomp (``compile_seccomp_bpf``); the zygote only loads the bytes, so it
never imports pyseccomp (nor the ``subprocess``/``threading``/``random`` that come with
it, whose at-fork hooks every task child would run).  Every function either succeeds or
raises ``OSError``; the caller decides whether a missing layer is fatal.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

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
    "pidfd_getfd",
    "process_madvise",
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


def prctl_get(option: int) -> int:
    """Call a prctl(2) that answers in its return value (``PR_GET_*``)."""
    result = _libc.prctl(
        option, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
    )
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def loopback_up() -> None:
    """Set ``IFF_UP`` on ``lo`` of the current network namespace (SIOCGIFFLAGS, then
    SIOCSIFFLAGS on an AF_INET datagram socket), through libc: the zygote imports no
    ``socket`` (every module it holds costs each fork)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    fd = _libc.socket(2, 2, 0)  # AF_INET, SOCK_DGRAM
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    try:
        name = b"lo".ljust(16, b"\0")  # struct ifreq: the name, then a 24-byte union
        request = ctypes.create_string_buffer(name, 40)
        if _libc.ioctl(fd, ctypes.c_ulong(siocgifflags), request) != 0:
            _check(-1)
        flags = int.from_bytes(request.raw[16:18], "little") | iff_up
        request = ctypes.create_string_buffer(name + flags.to_bytes(2, "little"), 40)
        if _libc.ioctl(fd, ctypes.c_ulong(siocsifflags), request) != 0:
            _check(-1)
    finally:
        os.close(fd)


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


class _SockFilterProgram(ctypes.Structure):
    """``struct sock_fprog``: the length (in instructions) and address of a BPF program."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SeccompProgram:
    """A compiled seccomp BPF program, loaded without libseccomp.

    libseccomp's ``seccomp_load`` regenerates the BPF from its rule database on every
    call (~0.3 ms).  The rules are compiled once (``compile_seccomp_bpf``, in the pool)
    and the zygote loads the bytes with one ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
    &prog)``, the very program ``seccomp_load`` would have installed.
    """

    _INSTRUCTION_BYTES = 8  # struct sock_filter: u16 code, u8 jt, u8 jf, u32 k

    def __init__(self, bpf: bytes) -> None:
        if not bpf or len(bpf) % self._INSTRUCTION_BYTES:
            raise ValueError(f"not a BPF program: {len(bpf)} bytes")
        self.bpf = bytes(bpf)
        self._buffer = ctypes.create_string_buffer(self.bpf, len(self.bpf))
        self._program = _SockFilterProgram(
            len(self.bpf) // self._INSTRUCTION_BYTES, ctypes.addressof(self._buffer)
        )
        self._address = ctypes.c_ulong(ctypes.addressof(self._program))
        self._zero = ctypes.c_ulong(0)
        self._option = ctypes.c_int(PR_SET_SECCOMP)
        self._mode = ctypes.c_ulong(SECCOMP_MODE_FILTER)

    @property
    def instructions(self) -> int:
        return len(self.bpf) // self._INSTRUCTION_BYTES

    def load(self) -> None:
        """Install the filter on this thread; needs no-new-privs (or CAP_SYS_ADMIN).

        Filters survive fork and cannot be removed: the zygote loads it on itself once,
        and every task child starts under it.
        """
        _check(_libc.prctl(self._option, self._mode, self._address, self._zero, self._zero))


def compile_seccomp_bpf(deny_network_sockets: bool) -> bytes:
    """Build the filter with libseccomp and export its BPF program (see ``SeccompProgram``)."""
    syscall_filter = build_seccomp_filter(deny_network_sockets)
    handle = os.memfd_create("rewardkit-seccomp", 0)
    try:
        with os.fdopen(os.dup(handle), "wb") as exported:
            syscall_filter.export_bpf(exported)
        size = os.fstat(handle).st_size
        bpf = os.pread(handle, size, 0)
    finally:
        os.close(handle)
    SeccompProgram(bpf)  # validates the size
    return bpf


def build_seccomp_filter(deny_network_sockets: bool) -> Any:
    """A libseccomp filter allowing everything except the syscalls listed above.

    Namespace creation through clone(2) is refused; clone3(2) answers ENOSYS so libc
    falls back to clone(2), where the flags can be inspected.  Without a network
    namespace, socket(2) for any family but AF_UNIX is refused as well.
    """
    import socket

    import pyseccomp as seccomp  # ImportError, or RuntimeError without libseccomp

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
    # A task may make itself non-dumpable, never dumpable again: a compiled program that
    # starts non-dumpable (its binary is execute-only) cannot reopen /proc/self/mem and
    # read its harness's secret back (docs/sandbox.md, "Test verdicts").
    syscall_filter.add_rule(
        seccomp.ERRNO(errno.EPERM), "prctl",
        seccomp.Arg(0, seccomp.EQ, PR_SET_DUMPABLE), seccomp.Arg(1, seccomp.NE, 0)
    )
    if deny_network_sockets:
        syscall_filter.add_rule(
            seccomp.ERRNO(errno.EACCES), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX)
        )
    return syscall_filter
