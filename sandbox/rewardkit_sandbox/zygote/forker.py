"""The slot's forker: a quiet copy of the zygote that forks the task children for it.

Every fork write-protects all of the forking process's pages, so each page the zygote
wrote between two tasks (the request, the supervision loop, the reply: ~250 pages a
HumanEval task) was a copy-on-write fault, and the zygote's CPU was mostly the kernel's
page-fault handling.  The forker is forked from the zygote once, at the end of start-up
(the heap frozen, the task children's state prepared), and then only receives a spawn
request, forks, and answers the child's pid: a few pages written between two forks.
Its children are made with ``CLONE_PARENT``, so they are the zygote's children exactly
as before (it waits for them, its subreaper sweep and ``getppid()`` checks hold) and are
confined by the zygote's own code (:meth:`Zygote._run_child`) after the fork.

It holds nothing of a task but the candidate's code, its rlimits and work directory,
and the descriptors it is sent (closed once forked): never the tests, the control
channel, the judge or a task's pipes.  It runs as the zygote's uid under the zygote's
seccomp filter and no-new-privs, dies with the zygote (``PR_SET_PDEATHSIG`` and its
socket's EOF), and is used only with per-slot uids (a candidate cannot signal it).  If
the clone cannot be made exactly like ``os.fork`` (another libc or architecture: the
child's cached thread id must be set by the kernel), a start-up probe fails, or the
forker dies, the zygote forks its children itself as before.  Standard library only
(see :mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import _socket
import contextlib
import ctypes
import marshal
import os
import signal
import struct

from rewardkit_sandbox import _confinement as confinement

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from collections.abc import Callable
    from typing import Any, NoReturn

    #: the zygote's body of a freshly forked child (request, fds, workdir, role)
    RunChild = Callable[[dict[str, Any], tuple[int, ...], str, str], NoReturn]

CLONE_PARENT = 0x00008000
CLONE_CHILD_CLEARTID = 0x00200000
CLONE_CHILD_SETTID = 0x01000000
#: clone(2)'s number and whether its last two arguments come as (child_tid, tls)
_CLONE = {"x86_64": (56, True), "aarch64": (220, False)}
_GETTID = {"x86_64": 186, "aarch64": 178}
#: a request bigger than this (a very long program) is forked by the zygote itself
MESSAGE_LIMIT = 65536
_MAX_FDS = 8
_PID = struct.Struct("i")
#: a probe child's exit code when its thread id and parent are right
_PROBE_OK = 0
_PROBE_BAD = 3
#: how far into glibc's thread descriptor the cached thread id is looked for
_TID_SEARCH_INTS = 512


class _TooBig(Exception):
    """A request the forker's one message cannot hold."""


class _NotSent(Exception):
    """The request did not reach the forker (it is gone): nothing was forked."""


class Clone:
    """``fork()`` made with ``CLONE_PARENT`` (the child is the caller's parent's child),
    Python's fork hooks around it as ``os.fork`` runs them, and the child's cached thread
    id in libc's thread descriptor set by the kernel (``CLONE_CHILD_SETTID``) as libc's
    own fork does.  ``available`` is False (with ``why``) where that cannot be done."""

    def __init__(self) -> None:
        self.available = False
        self.why = ""
        self._tid_address = 0
        machine = os.uname().machine
        try:
            libc_name = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError):
            libc_name = ""
        if machine not in _CLONE or not libc_name.startswith("glibc"):
            self.why = f"no raw clone for {machine} / {libc_name or 'this libc'}"
            return
        self._number, self._tid_then_tls = _CLONE[machine]
        libc = ctypes.PyDLL(None, use_errno=True)  # the GIL stays held across the call
        self._syscall = libc.syscall
        self._syscall.restype = ctypes.c_long
        self._syscall.argtypes = [ctypes.c_long] * 6
        pthread_self = libc.pthread_self
        pthread_self.restype = ctypes.c_void_p
        tid = self._syscall(_GETTID[machine], 0, 0, 0, 0, 0)
        descriptor = pthread_self()
        if not descriptor or tid <= 0:
            self.why = "no thread descriptor"
            return
        words = (ctypes.c_int * _TID_SEARCH_INTS).from_address(descriptor)
        found = [index for index in range(_TID_SEARCH_INTS) if words[index] == tid]
        if len(found) != 1:
            self.why = f"the thread id is at {len(found)} places of the thread descriptor"
            return
        self._tid_address = descriptor + 4 * found[0]
        self._gettid = _GETTID[machine]
        self._api = ctypes.pythonapi
        self.available = True

    def __call__(self) -> int:
        """0 in the child, the child's pid in the parent; ``OSError`` if it failed."""
        flags = CLONE_PARENT | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | signal.SIGCHLD
        api = self._api
        api.PyOS_BeforeFork()
        if self._tid_then_tls:
            pid = self._syscall(self._number, flags, 0, 0, self._tid_address, 0)
        else:
            pid = self._syscall(self._number, flags, 0, 0, 0, self._tid_address)
        if pid == 0:
            api.PyOS_AfterFork_Child()
            return 0
        error = ctypes.get_errno()
        api.PyOS_AfterFork_Parent()
        if pid < 0:
            raise OSError(error, os.strerror(error))
        return int(pid)

    def child_is_right(self, parent: int) -> bool:
        """In a child: its cached thread id is its own and its parent is ``parent``."""
        tid = self._syscall(self._gettid, 0, 0, 0, 0, 0)
        cached = ctypes.c_int.from_address(self._tid_address).value
        return tid == os.getpid() == cached and os.getppid() == parent


class Forker:
    """The zygote's end of its forker (``pid`` 0 while there is none).

    ``run_child``: the zygote's body of a forked child, run in the forker's children;
    ``zygote_pid``: the parent its children must see.
    """

    def __init__(self, run_child: RunChild, zygote_pid: int) -> None:
        self.run_child = run_child
        self.zygote_pid = zygote_pid
        self.pid = 0
        self.why = "not started"
        self._socket: Any = None

    def start(self, keep: tuple[int, ...]) -> None:
        """Fork the forker (now, with the zygote's state final) and probe it once; on any
        failure there is none and ``why`` says why.  ``keep``: descriptors its children
        need from the zygote (the slot's cgroup files); every other one the zygote holds
        is closed in it but 0-5 (kept taken, see ``Zygote``)."""
        clone = Clone()
        if not clone.available:
            self.why = clone.why
            return
        try:
            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        except OSError as error:
            self.why = f"no socket: {error}"
            return
        try:
            pid = os.fork()
        except OSError as error:
            ours.close()
            theirs.close()
            self.why = f"fork failed: {error}"
            return
        if pid == 0:
            try:
                ours.close()
                self._serve(clone, theirs, keep)
            finally:
                os._exit(1)
        theirs.close()
        self.pid, self._socket = pid, ours
        try:
            probe = self._ask(("probe", "", [], "/"), ())
            _, status = os.waitpid(probe, 0)
        except (OSError, _NotSent) as error:
            self.stop(f"its probe failed: {error}")
            return
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != _PROBE_OK:
            self.stop("its probe child had the wrong thread id or parent")
            return
        self.why = ""

    def spawn(
        self, request: dict[str, Any], fds: tuple[int, ...], workdir: str, role: str
    ) -> int | None:
        """Fork a child through the forker: its pid; None when the zygote must fork it
        itself (no forker, a request too big for one message, or the forker gone before
        it got the request: it is stopped then, and the zygote forks from now on);
        ``OSError`` when it failed after getting the request (it is stopped too; the
        zygote forks the child itself unless one was made: a child it made is the
        zygote's, and dies in the task's sweep)."""
        if not self.pid:
            return None
        message = (role, request["code"], request["limits"]["rlimits"], workdir)
        try:
            return self._ask(message, fds)
        except _TooBig:
            return None
        except _NotSent as error:
            self.stop(f"it failed: {error}")
            return None
        except OSError as error:
            self.stop(f"it failed: {error}")
            raise

    def _ask(self, message: tuple[Any, ...], fds: tuple[int, ...]) -> int:
        payload = marshal.dumps(message)
        if len(payload) > MESSAGE_LIMIT or len(fds) > _MAX_FDS:
            raise _TooBig
        ancillary = []
        if fds:
            packed = struct.pack(f"{len(fds)}i", *fds)
            ancillary.append((_socket.SOL_SOCKET, _socket.SCM_RIGHTS, packed))
        try:
            self._socket.sendmsg([payload], ancillary)
        except OSError as error:
            raise _NotSent(str(error)) from error
        answer = self._socket.recv(_PID.size)
        if len(answer) != _PID.size:
            raise OSError(0, "the forker is gone")
        (pid,) = _PID.unpack(answer)
        if pid < 0:
            raise OSError(-pid, os.strerror(-pid))
        return int(pid)

    def stop(self, why: str) -> None:
        """Kill and reap the forker; the zygote forks its children itself from now on."""
        self.why = why
        pid, self.pid = self.pid, 0
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)

    def gone(self) -> None:
        """The forker exited and was reaped (by the zygote's reaper)."""
        self.pid = 0
        self.why = "it exited"
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    # -- inside the forker -------------------------------------------------------------

    def _serve(self, clone: Clone, sock: Any, keep: tuple[int, ...]) -> NoReturn:
        """The forker's loop: a request, a fork, the pid (or -errno) back; exits at EOF."""
        confinement.prctl(confinement.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != self.zygote_pid:
            os._exit(1)
        own = sock.fileno()
        for fd in _open_descriptors():
            if fd > 5 and fd != own and fd not in keep:
                with contextlib.suppress(OSError):
                    os.close(fd)
        # Every page this loop writes is a copy-on-write fault after each fork: names are
        # bound once here, and a message makes few objects.
        ancillary_space = _socket.CMSG_SPACE(_MAX_FDS * 4)
        receive, send, loads, close = sock.recvmsg, sock.send, marshal.loads, os.close
        arrays = [struct.Struct(f"{count}i").unpack for count in range(_MAX_FDS + 1)]
        pack_pid, rights = _PID.pack, _socket.SCM_RIGHTS
        run_child, zygote_pid, exit_now = self.run_child, self.zygote_pid, os._exit
        while True:
            message, ancillary, _, _ = receive(MESSAGE_LIMIT, ancillary_space)
            if not message:
                exit_now(0)
            fds: tuple[int, ...] = ()
            for _, kind, data in ancillary:  # SOL_SOCKET: the only level a unix socket sends
                if kind == rights:
                    fds += arrays[len(data) // 4](data[: len(data) // 4 * 4])
            role, code, rlimits, workdir = loads(message)
            try:
                pid = clone()
            except OSError as error:
                pid = -(error.errno or 1)
            if pid == 0:
                if role == "probe":
                    exit_now(_PROBE_OK if clone.child_is_right(zygote_pid) else _PROBE_BAD)
                run_child({"code": code, "limits": {"rlimits": rlimits}}, fds, workdir, role)
            for fd in fds:
                close(fd)
            del message, ancillary, code, rlimits, workdir
            send(pack_pid(pid))


def _open_descriptors() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/fd")]
