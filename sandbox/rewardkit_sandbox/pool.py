"""``SandboxPool``: a thread-safe pool of zygotes, one per concurrent slot."""

from __future__ import annotations

import functools
import json
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit_sandbox._memory_cgroup import MemoryCgroups
from rewardkit_sandbox._protocol import Channel, ProtocolError
from rewardkit_sandbox._uid_claims import UidClaim, UidsTakenError, claim_uids
from rewardkit_sandbox._uid_kill import kill_every_process_of_uid
from rewardkit_sandbox._verdict import verdict
from rewardkit_sandbox.layers import REQUIRED_LAYERS, LayerReport
from rewardkit_sandbox.limits import SandboxLimits, limits_message
from rewardkit_sandbox.result import SandboxResult, Status
from rewardkit_sandbox.zygote.mounts import find_world_writable

logger = logging.getLogger("rewardkit_sandbox")

_PACKAGE_DIR = str(Path(__file__).resolve().parent)
# Runs under ``python -I -S``: registers this package without executing its __init__
# (the zygote needs the standard library only).
_BOOTSTRAP = """\
import json, sys, types
config = json.loads(sys.argv[1])
sys.path[:0] = config["bootstrap_paths"]
package = types.ModuleType("rewardkit_sandbox")
package.__path__ = [config["package_dir"]]
sys.modules["rewardkit_sandbox"] = package
from rewardkit_sandbox.zygote.server import main
main()
"""
_ZYGOTE_START_TIMEOUT_S = 30.0
# The zygote answers within wall_time_s plus its kill grace (5 s); past this, it is lost.
_BACKSTOP_GRACE_S = 10.0


class SandboxUnavailableError(RuntimeError):
    """The machine lacks a layer the pool was told to require; the message says which."""


class SandboxUidsTakenError(SandboxUnavailableError):
    """The pool's uids are claimed by another live pool (an explicit ``uid_base``), or
    no free range is left; the message says which uid and who holds it."""


@dataclass(frozen=True)
class SandboxTask:
    """One program to run, for ``SandboxPool.run_many``; fields as in ``SandboxPool.run``."""

    code: str
    stdin: str | bytes | None = None
    tests: Sequence[str] | None = None
    test_timeout_s: float | None = None
    stop_on_first_failure: bool = False
    limits: SandboxLimits | None = None


class _Slot:
    def __init__(self, index: int, uid: int) -> None:
        self.index = index
        self.uid = uid
        self.process: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.channel: Channel | None = None


@functools.lru_cache(maxsize=1)
def _seccomp_programs() -> dict[str, Any]:
    """The seccomp filter compiled to BPF once per process, with and without the socket rule.

    The zygote loads the bytes once, on itself (one prctl), and every task child inherits
    the filter; libseccomp itself never enters the zygote.
    """
    from rewardkit_sandbox import _confinement

    try:
        return {
            "seccomp_bpf": {
                "netns": _confinement.compile_seccomp_bpf(deny_network_sockets=False).hex(),
                "no_netns": _confinement.compile_seccomp_bpf(deny_network_sockets=True).hex(),
            }
        }
    except Exception as error:  # ImportError, missing libseccomp, ...
        return {"seccomp_error": f"{type(error).__name__}: {error}"}


#: the environment switch of the slots' forkers (``rewardkit_sandbox.zygote.forker``)
FORKER_SWITCH = "REWARDKIT_SANDBOX_FORKER"


def forker_enabled() -> bool:
    """Whether new zygotes hand the forking of task children to a forker (with slot uids):
    only with ``REWARDKIT_SANDBOX_FORKER=1`` (read when a zygote starts). Off by default:
    on a quiet machine it cost more than it saved (docs/performance.md, issue 42 item 4)."""
    return os.environ.get(FORKER_SWITCH, "0") == "1"


def _zygote_environment() -> dict[str, str]:
    """An allow-list, not a deny-list: nothing of the trainer's environment is inherited."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        # Resolve every symbol at start-up: lazy binding would redo it (and dirty the GOT)
        # in every task child.  Tasks get their own environment (no LD_BIND_NOW).
        "LD_BIND_NOW": "1",
    }


def _default_hidden_paths() -> list[str]:
    """Home directories and the current directory (usually the repository).

    The zygote re-exposes, read-only, the interpreter's library and ``import_paths``
    found under them; paths holding ``/tmp`` or ``/`` itself are never hidden.
    """
    hidden: list[str] = []
    for path in ("/root", "/home", os.getcwd()):
        real = os.path.realpath(path)
        if real != "/" and real not in hidden:
            hidden.append(real)
    return hidden


def _shutdown(slots: list[_Slot], cgroups: MemoryCgroups, claim: UidClaim | None) -> None:
    for slot in slots:
        if slot.sock is not None:
            slot.sock.close()
            slot.sock = None
            slot.channel = None
    for slot in slots:
        if slot.process is not None:
            try:
                slot.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                slot.process.kill()
                slot.process.wait()
            slot.process = None
    cgroups.close()
    if claim is not None:  # the zygotes (and their tasks) are gone: the uids are free
        claim.release()


#: Standard-library modules the zygotes import once, so that programs importing them do
#: not pay for it in every task (``from typing import List`` alone costs a task ~4 ms).
#: Not ``random`` nor ``threading``: their at-fork hooks would run in every task.
DEFAULT_PRELOAD: tuple[str, ...] = (
    "typing",
    "math",
    "collections",
    "itertools",
    "functools",
    "operator",
    "heapq",
    "bisect",
    "string",
    "re",
    "copy",
)


class SandboxPool:
    """Runs untrusted Python programs in confined children of pre-started zygotes.

    One zygote per slot, each with its own unprivileged uid (``uid_base + slot``) when
    the pool runs as root, and one for the slot's judge (``uid_base + size + slot``, the
    process that runs assert tests).  As root the pool claims those ``2 * size`` uids
    for its life (a lock file per uid, ``rewardkit_sandbox._uid_claims``), so no other
    pool of the node, in this process or another, uses them: without ``uid_base`` it
    takes the first free range from 60000 up (below 64000); an explicit ``uid_base``
    that another live pool claims is a ``SandboxUidsTakenError``.  ``run`` is
    thread-safe: it waits for a free slot.  A zygote that dies is replaced on the slot's
    next use; the run it was serving ends with ``Status.SANDBOX_ERROR``.  Missing
    isolation layers are logged as warnings and listed in ``layers.missing``; without the
    ``require_layers`` the pool refuses to start (``SandboxUnavailableError``).

    ``preload``: modules every zygote imports at start (as the pool's user, before any
    task: list trusted modules only); a program importing them finds them loaded.  Each
    one makes every fork a little dearer; ``()`` preloads nothing.

    >>> with SandboxPool(size=1) as pool:
    ...     pool.run("print(input()[::-1])", stdin="abc").stdout
    'cba\\n'
    """

    def __init__(
        self,
        size: int | None = None,
        limits: SandboxLimits | None = None,
        *,
        uid_base: int | None = None,
        import_paths: Sequence[str] = (),
        hidden_paths: Sequence[str] | None = None,
        require_layers: Sequence[str] = REQUIRED_LAYERS,
        max_code_bytes: int = 4 * 1024 * 1024,
        preload: Sequence[str] = DEFAULT_PRELOAD,
    ) -> None:
        self.size = size or len(os.sched_getaffinity(0))
        self._preload = [str(name) for name in preload]
        self.limits = limits or SandboxLimits()
        self.max_code_bytes = max_code_bytes
        self.missing_layer_warnings = 0
        self._import_paths = [str(path) for path in import_paths]
        self._hidden_paths = (
            list(hidden_paths) if hidden_paths is not None else _default_hidden_paths()
        )
        self._is_root = os.geteuid() == 0
        # once per pool: every zygote (a replacement too) covers the same folders
        self._world_writable = find_world_writable(self._hidden_paths)
        # as root, the slot and judge uids are this pool's alone until it closes
        self._uid_claim: UidClaim | None = None
        if self._is_root:
            try:
                self._uid_claim = claim_uids(2 * self.size, uid_base)
            except UidsTakenError as error:
                raise SandboxUidsTakenError(str(error)) from None
            uid_base = self._uid_claim.first
        elif uid_base is None:
            uid_base = 60000
        self.uid_base: int = uid_base
        self._slots = [_Slot(index, uid_base + index) for index in range(self.size)]
        # a memory cgroup per slot where the machine lets us (layer memory_cgroup)
        try:
            self._cgroups = MemoryCgroups(self.size)
        except BaseException:
            if self._uid_claim is not None:
                self._uid_claim.release()
            raise
        self._free: queue.Queue[_Slot] = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(
            self, _shutdown, self._slots, self._cgroups, self._uid_claim
        )
        self.layers: LayerReport
        try:
            for slot in self._slots:
                self._launch(slot)
            for slot in self._slots:
                self._await_ready(slot)
                self._free.put(slot)
        except BaseException:
            self.close()
            raise
        missing = [name for name in require_layers if name in self.layers.missing]
        if missing:
            self.close()
            details = "; ".join(f"{name}: {self.layers[name].detail}" for name in missing)
            raise SandboxUnavailableError(
                f"refusing to run untrusted code without {', '.join(missing)} ({details}). "
                "Run on Linux with rlimits and process groups available; "
                "`python -m rewardkit_sandbox doctor` shows every layer."
            )

    # -- zygote life cycle -----------------------------------------------------------

    def _config(self, slot: _Slot, socket_fd: int) -> dict[str, Any]:
        return {
            **_seccomp_programs(),
            "socket_fd": socket_fd,
            "package_dir": _PACKAGE_DIR,
            "bootstrap_paths": [],
            "import_paths": self._import_paths,
            "preload": self._preload,
            "hidden_paths": self._hidden_paths,
            "uid": slot.uid,
            "gid": slot.uid,
            "judge_uid": slot.uid + self.size,
            "disk_bytes": self.limits.disk_bytes,
            "world_writable": self._world_writable,
            "memory_cgroup": self._cgroups.for_slot(slot.index),
            "memory_cgroup_detail": self._cgroups.detail,
            "forker": forker_enabled(),
        }

    def _launch(self, slot: _Slot) -> None:
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            config = json.dumps(self._config(slot, child_end.fileno()))
            slot.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, config],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=_zygote_environment(),
                pass_fds=[child_end.fileno()],
                start_new_session=True,
            )
        except BaseException:
            parent_end.close()
            raise
        finally:
            child_end.close()
        parent_end.setblocking(False)  # the channel waits with poll(), up to a deadline
        slot.sock = parent_end
        slot.channel = Channel(parent_end.fileno())

    def _await_ready(self, slot: _Slot) -> None:
        assert slot.sock is not None and slot.channel is not None
        try:
            message = slot.channel.receive(time.monotonic() + _ZYGOTE_START_TIMEOUT_S)
        except (OSError, ProtocolError, ValueError) as error:
            raise SandboxUnavailableError(
                f"zygote of slot {slot.index} did not start: {error}"
            ) from error
        if message is None or message.get("event") != "ready":
            raise SandboxUnavailableError(
                f"zygote of slot {slot.index} exited during start-up (see its stderr above)"
            )
        report = LayerReport.from_message(message["layers"])
        for name, problem in (message.get("preload_failed") or {}).items():
            logger.warning(
                "sandbox zygote of slot %d could not preload %s: %s", slot.index, name, problem
            )
        with self._lock:
            first = not hasattr(self, "layers")
            self.layers = report
        if first:
            for layer in report.layers:
                if not layer.active:
                    self.missing_layer_warnings += 1
                    logger.warning(
                        "sandbox layer %r is missing (%s): %s is not guarded",
                        layer.name,
                        layer.detail,
                        layer.guards,
                    )

    def _discard(self, slot: _Slot) -> None:
        """Kill a broken zygote and everything its uid still runs."""
        if slot.sock is not None:
            slot.sock.close()
            slot.sock = None
            slot.channel = None
        if slot.process is not None:
            if slot.process.poll() is None:
                slot.process.kill()
            slot.process.wait()
            slot.process = None
        if self._is_root and self.layers["uid_isolation"].active:
            kill_every_process_of_uid(slot.uid)
            kill_every_process_of_uid(slot.uid + self.size)

    def _ensure_alive(self, slot: _Slot) -> None:
        if slot.process is None or slot.channel is None or slot.process.poll() is not None:
            logger.warning("sandbox zygote of slot %d is gone; starting a new one", slot.index)
            self._discard(slot)
            self._launch(slot)
            self._await_ready(slot)

    # -- running -----------------------------------------------------------------------

    def run(
        self,
        code: str,
        *,
        stdin: str | bytes | None = None,
        tests: Sequence[str] | None = None,
        test_timeout_s: float | None = None,
        stop_on_first_failure: bool = False,
        limits: SandboxLimits | None = None,
        raw_stdout: bool = False,
    ) -> SandboxResult:
        """Run ``code`` as a Python program in a fresh confined child and wait for it.

        With ``tests`` (assert-style snippets), each test runs in its own process after
        the program, with ``test_timeout_s`` each; ``stop_on_first_failure`` skips the rest
        after a failing one.  Otherwise ``stdin`` is fed to the program.  ``raw_stdout``:
        the program's stdout comes back as bytes (``stdout_bytes``), not decoded.
        """
        limits = limits or self.limits
        size = len(code.encode("utf-8", errors="surrogatepass"))
        if size > self.max_code_bytes:
            return SandboxResult(
                Status.FAILED, error=f"program of {size} bytes exceeds {self.max_code_bytes}"
            )
        request: dict[str, Any] = {
            "op": "run",
            "code": code,
            "test_timeout_s": test_timeout_s,
            "stop_on_first_failure": stop_on_first_failure,
            "limits": limits_message(limits),
        }
        tests_blob = b""
        if tests is not None:
            # The tests travel after the request, raw: only the zygote's judges read them.
            encoded = [test.encode("utf-8", errors="surrogatepass") for test in tests]
            spans, offset = [], 0
            for item in encoded:
                spans.append((offset, len(item)))
                offset += len(item)
            request["test_spans"] = spans
            request["tests_bytes"] = offset
            tests_blob = b"".join(encoded)
        stdin_bytes = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        slot = self._acquire()
        try:
            try:
                self._ensure_alive(slot)
            except (OSError, SandboxUnavailableError) as error:
                return SandboxResult(Status.SANDBOX_ERROR, error=f"zygote restart failed: {error}")
            return self._execute_on_slot(
                slot, request, stdin_bytes, limits, tests_blob, raw_stdout
            )
        finally:
            self._free.put(slot)

    def run_task(self, task: SandboxTask) -> SandboxResult:
        """``run`` with the fields of ``task``."""
        return self.run(
            task.code,
            stdin=task.stdin,
            tests=task.tests,
            test_timeout_s=task.test_timeout_s,
            stop_on_first_failure=task.stop_on_first_failure,
            limits=task.limits,
        )

    def run_many(self, tasks: Iterable[SandboxTask]) -> list[SandboxResult]:
        """Run tasks on all slots at once; results in the order of ``tasks``."""
        with ThreadPoolExecutor(max_workers=self.size) as executor:
            return list(executor.map(self.run_task, tasks))

    @property
    def slot_uids(self) -> list[int]:
        """The uid each slot's tasks run as (when started as root)."""
        return [slot.uid for slot in self._slots]

    @property
    def judge_uids(self) -> list[int]:
        """The uid each slot's judge (which runs the assert tests) runs as, when started
        as root: ``uid_base + size + slot``."""
        return [slot.uid + self.size for slot in self._slots]

    @property
    def world_writable_dirs(self) -> list[str]:
        """Every world-writable folder a task could reach, found when the pool started
        (/tmp, /dev/shm, /run/lock, ...); each zygote mounts a private tmpfs over each
        (layer ``private_world_writable`` says whether it could)."""
        return list(self._world_writable["paths"])

    def zygote_pids(self) -> list[int]:
        """Process ids of the live zygotes (for audits through /proc)."""
        return [slot.process.pid for slot in self._slots
                if slot.process is not None and slot.process.poll() is None]

    def close(self) -> None:
        """Stop every zygote (each kills its running task first).  Idempotent."""
        self._closed = True
        self._finalizer()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _acquire(self) -> _Slot:
        while True:
            if self._closed:
                raise RuntimeError("SandboxPool is closed")
            try:
                return self._free.get(timeout=0.5)
            except queue.Empty:
                continue

    def _execute_on_slot(
        self,
        slot: _Slot,
        request: dict[str, Any],
        stdin_bytes: bytes,
        limits: SandboxLimits,
        tests_blob: bytes = b"",
        raw_stdout: bool = False,
    ) -> SandboxResult:
        """One round trip: the zygote feeds stdin, drains and caps the outputs, and answers."""
        assert slot.sock is not None and slot.channel is not None
        started = time.monotonic()
        deadline = started + limits.wall_time_s + _BACKSTOP_GRACE_S
        finished: dict[str, Any] | None = None
        zygote_lost = False
        try:
            slot.channel.send({**request, "stdin": stdin_bytes}, deadline, tests_blob)
        except OSError as error:  # TimeoutError included
            self._discard(slot)
            return SandboxResult(Status.SANDBOX_ERROR, error=f"zygote unreachable: {error}")
        try:
            finished = slot.channel.receive(deadline)
            zygote_lost = finished is None
        except TimeoutError:
            pass
        except (OSError, ProtocolError, ValueError) as error:
            logger.warning("sandbox slot %d: lost the zygote: %s", slot.index, error)
            zygote_lost = True
        wall_time_s = time.monotonic() - started
        if finished is None or finished.get("event") != "finished":
            self._discard(slot)
            reason = "zygote died" if zygote_lost else "zygote did not answer in time"
            return SandboxResult(
                Status.SANDBOX_ERROR,
                wall_time_s=wall_time_s,
                error=f"{reason} during the run; it will be replaced",
            )
        if finished.get("fatal"):
            self._discard(slot)
        elif finished.get("retire"):
            logger.warning(
                "sandbox slot %d: %s; replacing its zygote", slot.index, finished["retire"]
            )
            self._discard(slot)
        return verdict(
            finished,
            request,
            limits,
            finished.get("stdout") or b"",
            finished.get("stderr") or b"",
            wall_time_s,
            raw_stdout,
        )


def detect_layers() -> LayerReport:
    """Start one zygote, ask which layers it has, and stop it."""
    with SandboxPool(size=1, require_layers=()) as pool:
        return pool.layers
