"""The zygote: a freshly exec'd, single-threaded process that forks one confined child per task.

Started by ``SandboxPool`` as ``python -I -S -c <bootstrap> <config json>`` with a
scrubbed environment and one end of a unix socket.  At start it enters its own network
and mount namespaces where the kernel allows, becomes a child subreaper, probes every
layer in a throw-away child, and reports them (``{"event": "ready", "layers": ...}``).
Then, per request (the program, its limits, and stdin as a blob): create a private work
directory and the task's pipes, fork the task child (new process group, rlimits,
per-slot uid, no-new-privs, seccomp), feed stdin and drain stdout/stderr up to their
caps, enforce wall time, kill the whole task (process group, then every process of the
slot uid), reap everything, remove the files, and answer ``{"event": "finished", ...}``
with stdout and stderr.

Standard library only, and few modules of it: a task child inherits everything the
zygote holds, and pays (in copy-on-write faults) for every page it touches.  No
``threading`` or ``random``: their at-fork hooks would run in every child.

This module serves tasks (fork, feed, drain, supervise, report); the zygote's other jobs
live beside it: :mod:`._zygote_mounts` (namespaces and mounts), :mod:`._zygote_probes`
(layer probes), :mod:`._zygote_workdir` (work directories) and :mod:`._zygote_reaping`
(kill and reap).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import resource
import select
import signal
import sys
import time

from rewardkit_sandbox import _confinement as confinement
from rewardkit_sandbox import _harness as harness
from rewardkit_sandbox._protocol import Channel
from rewardkit_sandbox._zygote_mounts import SCRATCH_DIRS, NamespacesAndMounts
from rewardkit_sandbox._zygote_probes import LayerProbes, layer
from rewardkit_sandbox._zygote_workdir import WorkDirectories, _shared_temp_dir

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from typing import Any, NoReturn

_REPORT_LIMIT_BYTES = 4 * 1024 * 1024
_KILL_GRACE_S = 5.0
_READ_CHUNK = 65536
_GC_EVERY_OBJECTS = 20000


class _Output:
    """Keeps up to ``cap`` bytes of one output stream; ``truncated`` once more was written."""

    __slots__ = ("cap", "data", "truncated")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> bool:
        """Keep what fits; True once more than the cap was written."""
        room = self.cap - len(self.data)
        if len(chunk) > room:
            if room > 0:
                self.data += chunk[:room]
            self.truncated = True
        else:
            self.data += chunk
        return self.truncated


class Zygote(NamespacesAndMounts, LayerProbes, WorkDirectories):
    """One slot's zygote; ``serve`` handles requests until the socket closes."""

    def __init__(self, config: dict[str, Any], channel: Channel) -> None:
        self.channel = channel
        self.pid = os.getpid()
        self.uid: int = config["uid"]
        self.gid: int = config["gid"]
        self.layers: dict[str, dict[str, Any]] = {}
        bootstrap_paths = set(config["bootstrap_paths"])
        self.child_path = [p for p in sys.path if p not in bootstrap_paths]
        self.child_path += list(config["import_paths"])
        self.seccomp_program: confinement.SeccompProgram | None = None
        # Keep fds 0-3 taken, so that no pipe of a task is created there: the child moves
        # its pipes onto 0-3 and must not overwrite one it has not moved yet.
        while (placeholder := os.open(os.devnull, os.O_RDWR)) < 3:
            pass
        if placeholder > 3:
            os.close(placeholder)

        self._enter_subreaper()
        self._enter_network_namespace()
        self._enter_mount_namespace(config["disk_bytes"], config["hidden_paths"])
        self._check_environment()
        self.uid_isolation = os.geteuid() == 0
        self._load_seccomp_program(config)
        self._confine_self()
        self._probe_child_layers()
        self._probe_process_group_kill()
        self._prepare_children(config.get("preload") or [])

    # -- start-up: what the namespaces, mounts and probes do not cover -------------------

    def _check_environment(self) -> None:
        leaked = [name for name in os.environ if _looks_secret(name)]
        cuda = os.environ.get("CUDA_VISIBLE_DEVICES", None) == ""
        if leaked or not cuda:
            problems = ", ".join(leaked) or "CUDA_VISIBLE_DEVICES not empty"
            self.layers["scrubbed_environment"] = layer(False, problems)
        else:
            names = ",".join(sorted(os.environ))
            self.layers["scrubbed_environment"] = layer(True, f"only {names}; no CUDA")

    def _load_seccomp_program(self, config: dict[str, Any]) -> None:
        """The pool compiled the filter (with and without a network rule) to BPF."""
        programs = config.get("seccomp_bpf") or {}
        bpf = programs.get("netns" if self.netns else "no_netns")
        self.seccomp_error = str(config.get("seccomp_error") or "no seccomp program")
        if bpf is None:
            return
        try:
            self.seccomp_program = confinement.SeccompProgram(bytes.fromhex(bpf))
        except ValueError as error:
            self.seccomp_error = f"bad seccomp program: {error}"
        else:
            self.seccomp_error = ""

    def _prepare_children(self, preload: list[str]) -> None:
        """Do once here what every task child would otherwise repeat.

        Anything a child initialises lazily it pays for in every task, plus the
        copy-on-write faults of what it allocates: the AST types compile() creates on first
        use (~1.3 ms a task), ``ast`` imported by traceback to place its carets, the json
        encoder, the stdio streams, the task's environment, ``sys.argv``, ``sys.path``.

        With the private /tmp, the work directory has one name for the zygote's life
        (created empty before, removed after every task; only this slot's tasks, one at a
        time, see that /tmp), so HOME/TMPDIR are set here too.  In the shared /tmp each
        task gets a fresh unpredictable name and the child sets them.
        """
        self.workdir_base = "/tmp" if self.mountns else _shared_temp_dir()
        self.fixed_workdir = (
            f"/tmp/rewardkit-task-{os.urandom(6).hex()}" if "/tmp" in self.mounted else ""
        )
        self.scratch_mounts = [path for path in SCRATCH_DIRS if path in self.mounted]
        umask = os.umask(0o077)
        os.umask(umask)
        self.chmod_workdir = bool(umask & 0o700)
        harness.warm_up()
        self.task_stdio = _task_stdio()
        os.environ.clear()
        os.environ.update(_task_environment(self.fixed_workdir or self.workdir_base))
        sys.path[:] = self.child_path
        sys.argv[:] = ["main.py"]
        self.preload_failed: dict[str, str] = {}
        for name in preload:
            try:
                __import__(name)
            except Exception as error:  # reported to the pool, which warns
                self.preload_failed[name] = f"{type(error).__name__}: {error}"
        # The path finders of the task's sys.path, with their directory listings: an
        # import that is not preloaded then skips that work too.
        import importlib.machinery

        importlib.machinery.PathFinder.find_spec("_rewardkit_sandbox_warm_up_")

    def _confine_self(self) -> None:
        """Set no-new-privs and load the seccomp filter here, once, for every task child.

        Both survive fork and can never be undone, so each child starts under them (a
        per-task load costs the kernel ~0.1 ms of filter validation).  Nothing the zygote
        does after start-up (fork, wait, kill, pipes, files, set*id, rlimits, prctl) is
        on the deny list; the namespaces and mounts it needed are in place already.
        """
        self.nnp_error = ""
        # Inherited by every child, so set once here: no core files, no supplementary
        # groups (a child checks; if this failed, it drops them itself).
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        self.groups_dropped = False
        if os.geteuid() == 0:
            with contextlib.suppress(OSError):
                os.setgroups([])
                self.groups_dropped = True
        try:
            confinement.prctl(confinement.PR_SET_NO_NEW_PRIVS, 1)
        except OSError as error:
            self.nnp_error = str(error)
        if self.seccomp_program is None:
            return
        try:
            self.seccomp_program.load()
        except OSError as error:
            self.seccomp_error = f"loading the filter failed: {error}"
            self.seccomp_program = None

    # -- serving ---------------------------------------------------------------------

    def serve(self) -> NoReturn:
        while True:
            request = self.channel.receive()
            if request is None:
                os._exit(0)
            if request.get("op") != "run":
                continue
            reply = self._run_task(request, request.get("stdin") or b"")
            if reply.get("pool_gone"):  # the task is dead and its files removed
                os._exit(0)
            self.channel.send(reply)
            if reply.get("fatal"):
                os._exit(1)
            if gc.get_count()[0] > _GC_EVERY_OBJECTS:  # gc is off here; keep the heap tidy
                gc.collect()
                gc.freeze()


    def _run_task(self, request: dict[str, Any], stdin: bytes) -> dict[str, Any]:
        reply: dict[str, Any] = {"event": "finished"}
        limits = request["limits"]
        stdout = _Output(int(limits["stdout_bytes"]))
        stderr = _Output(int(limits["stderr_bytes"]))
        try:
            workdir = self._make_workdir()
        except OSError as error:
            reply["infra_error"] = f"could not create the work directory: {error}"
            return reply
        opened: list[int] = []
        try:
            for _ in range(4):
                opened += os.pipe()
        except OSError as error:
            for fd in opened:
                os.close(fd)
            self._clean_files(workdir)
            reply["infra_error"] = f"could not create the task's pipes: {error}"
            return reply
        stdin_read, stdin_write, stdout_read, stdout_write = opened[:4]
        stderr_read, stderr_write, report_read, report_write = opened[4:]
        pending = memoryview(stdin)
        if pending:  # most of it fits in the pipe before the child even starts
            os.set_blocking(stdin_write, False)
            pending = _feed(stdin_write, pending)
        if not pending:
            os.close(stdin_write)
            stdin_write = -1
        try:
            pid = os.fork()
        except OSError as error:
            for fd in opened:
                if fd != opened[1] or stdin_write >= 0:  # stdin's write end may be closed
                    os.close(fd)
            self._clean_files(workdir)
            reply["infra_error"] = f"fork failed: {error}"
            return reply
        if pid == 0:
            self._enter_task(
                request, (stdin_read, stdout_write, stderr_write, report_write), workdir
            )
        for fd in (stdin_read, stdout_write, stderr_write, report_write):
            os.close(fd)
        outputs = {stdout_read: stdout, stderr_read: stderr}
        try:
            self._supervise(pid, request, reply, outputs, report_read, stdin_write, pending)
        finally:
            for fd in (stdout_read, stderr_read, report_read):
                os.close(fd)
            if not self._clean_files(workdir):
                reply["retire"] = "files of the task could not be removed"
        reply["stdout_truncated"] = stdout.truncated
        reply["stderr_truncated"] = stderr.truncated
        reply["stdout"] = bytes(stdout.data)
        reply["stderr"] = bytes(stderr.data)
        return reply

    def _supervise(
        self,
        pid: int,
        request: dict[str, Any],
        reply: dict[str, Any],
        outputs: dict[int, _Output],
        report_fd: int,
        stdin_fd: int,
        pending: memoryview,
    ) -> None:
        pidfd = os.pidfd_open(pid)
        deadline = time.monotonic() + float(request["limits"]["wall_time_s"])
        report = bytearray()
        kill_reason: str | None = None
        readers: list[int] = [pidfd, self.channel.fd, report_fd, *outputs]
        writers: list[int] = [stdin_fd] if stdin_fd >= 0 else []
        pool_gone = False
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if kill_reason is not None:  # killed, yet not dead within the grace
                        reply["infra_error"] = "task did not die after SIGKILL"
                        reply["fatal"] = True
                        return
                    kill_reason = "timeout"
                    self._kill_task(pid)
                    deadline = time.monotonic() + _KILL_GRACE_S
                    continue
                ready, writable, _ = select.select(readers, writers, [], remaining)
                for fd in ready:
                    if fd == pidfd:
                        continue
                    if fd == report_fd:
                        chunk = os.read(report_fd, _READ_CHUNK)
                        if not chunk:
                            readers.remove(report_fd)
                        elif len(report) < _REPORT_LIMIT_BYTES:
                            report += chunk
                    elif fd in outputs:
                        chunk = os.read(fd, _READ_CHUNK)
                        if not chunk:
                            readers.remove(fd)
                        elif outputs[fd].add(chunk) and kill_reason is None:
                            kill_reason = "output_limit"
                            self._kill_task(pid)
                            deadline = time.monotonic() + _KILL_GRACE_S
                    elif fd == self.channel.fd:
                        message = self.channel.receive()
                        if message is None:
                            pool_gone = True
                            readers.remove(self.channel.fd)
                            kill_reason = kill_reason or "pool closed"
                            self._kill_task(pid)
                        elif message.get("op") == "kill" and kill_reason is None:
                            kill_reason = str(message.get("reason", "killed"))
                            self._kill_task(pid)
                            deadline = time.monotonic() + _KILL_GRACE_S
                if writable:
                    pending = _feed(stdin_fd, pending)
                    if not pending:  # all fed (or the reader is gone): the program sees EOF
                        writers.clear()
                        os.close(stdin_fd)
                        stdin_fd = -1
                if pidfd in ready:
                    break
        finally:
            os.close(pidfd)
            if stdin_fd >= 0:
                os.close(stdin_fd)
        _, status, usage = os.wait4(pid, 0)
        self._kill_task(pid, main_child_reaped=True)
        if not self._reap_descendants(time.monotonic() + _KILL_GRACE_S):
            reply["infra_error"] = "processes of the task survived SIGKILL"
            reply["fatal"] = True
        # Every writer is dead now: what is left in the pipes is all there is.
        report += _read_rest(report_fd, _REPORT_LIMIT_BYTES)
        for fd, output in outputs.items():
            if fd in readers:
                output.add(_read_rest(fd, output.cap + 1))
        if pool_gone:
            reply["pool_gone"] = True
            return
        reply["cpu_time_s"] = round(usage.ru_utime + usage.ru_stime, 6)
        reply["max_rss_kib"] = usage.ru_maxrss
        if os.WIFSIGNALED(status):
            reply["signal"] = os.WTERMSIG(status)
        else:
            reply["exit_code"] = os.WEXITSTATUS(status)
        reply["kill_reason"] = kill_reason
        self._parse_report(bytes(report), reply)

    @staticmethod
    def _parse_report(report: bytes, reply: dict[str, Any]) -> None:
        """Trust records in order: setup first; candidate code cannot fake a setup error."""
        if report == harness.SETUP_DONE_RECORD:  # a program that ran and reported nothing
            reply["tests"] = []
            return
        setup_done = False
        tests: list[dict[str, Any]] = []
        for line in report.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            if not setup_done:
                if "setup_error" in record:
                    reply["infra_error"] = "task setup failed: " + str(record["setup_error"])
                    return
                setup_done = record.get("setup") == "ok"
                continue
            if record.get("memory") is True:
                reply["memory"] = True
            elif isinstance(record.get("test"), dict):
                tests.append(record["test"])
        if not setup_done:
            reply["setup_incomplete"] = True
        reply["tests"] = tests

    # -- inside the task child ----------------------------------------------------------

    def _enter_task(
        self, request: dict[str, Any], fds: tuple[int, int, int, int], workdir: str
    ) -> NoReturn:
        try:
            # A new process group in the zygote's own terminal-less session (the pool starts
            # each zygote with setsid).  setsid() per task would also give a new session but
            # costs ~3 ms on kernels with sched autogroup, more than the rest of a task.
            os.setpgid(0, 0)
            gc.enable()
            for target, fd in enumerate(fds):  # every fd is > 3 (see __init__)
                os.dup2(fd, target)
            os.closerange(4, 1 << 16)  # the control socket included
            os.chdir(workdir)
            limits = request["limits"]
            for which, soft, hard in limits["rlimits"]:  # RLIMIT_CORE=0 is inherited
                resource.setrlimit(which, (soft, hard))
            if self.uid_isolation:
                if not self.groups_dropped:  # normally done once, in the zygote
                    os.setgroups([])
                os.setresgid(self.gid, self.gid, self.gid)
                os.setresuid(self.uid, self.uid, self.uid)
                if os.geteuid() != self.uid or os.getegid() != self.gid:
                    raise OSError(errno.EPERM, "uid change did not take effect")
            # After the uid change, which resets both (dumpable to fs.suid_dumpable).
            confinement.prctl(confinement.PR_SET_DUMPABLE, 0)
            confinement.prctl(confinement.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != self.pid:
                os._exit(harness.SETUP_FAILED_EXIT_CODE)
            # Inherited from the zygote (_confine_self): no-new-privs, the seccomp filter,
            # RLIMIT_CORE=0; the environment, sys.argv and sys.path (_prepare_children).
            if not self.fixed_workdir:
                os.environ["HOME"] = os.environ["TMPDIR"] = workdir
            sys.stdin, sys.stdout, sys.stderr = self.task_stdio
        except BaseException as error:
            harness.write_report(3, {"setup_error": f"{type(error).__name__}: {error}"})
            os._exit(harness.SETUP_FAILED_EXIT_CODE)
        harness.report_setup_done(3)
        tests = request.get("tests")
        if tests is None:
            harness.run_program(request["code"], 3)
        harness.run_tests(
            request["code"],
            list(tests),
            float(request.get("test_timeout_s") or limits["wall_time_s"]),
            bool(request.get("stop_on_first_failure")),
            3,
        )


def _feed(fd: int, pending: memoryview) -> memoryview:
    """Write what the (non-blocking) pipe takes; empty once done or the reader is gone."""
    try:
        while pending:
            pending = pending[os.write(fd, pending[:_READ_CHUNK]) :]
    except BlockingIOError:
        return pending
    except OSError:  # the program closed stdin or exited
        return pending[:0]
    return pending


def _read_rest(fd: int, limit: int) -> bytes:
    """Read what a pipe still holds, without blocking, keeping at most ``limit`` bytes."""
    os.set_blocking(fd, False)
    rest = bytearray()
    while True:
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            break
        if not chunk:
            break
        if len(rest) < limit:
            rest += chunk[: limit - len(rest)]
    return bytes(rest)


def _task_stdio() -> tuple[Any, Any, Any]:
    """Text streams on fds 0-2 for the task children, built once, as on the task's pipes.

    Opening them costs every child ~0.2 ms (fstat, isatty, lseek of each, the objects);
    they are built here while fds 0-2 point at a pipe, so what ``open`` caches about its
    descriptor (not a tty, not seekable, block size) is what a child's pipes have.  The
    zygote never uses them; the child swaps them in after moving its pipes onto 0-2.
    """
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    read_end, write_end = os.pipe()
    try:
        os.dup2(read_end, 0)
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        streams = (
            open(0, encoding="utf-8", errors="replace", closefd=False),  # noqa: SIM115
            open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False),  # noqa: SIM115
            open(  # noqa: SIM115
                2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1
            ),
        )
        for stream in streams:
            stream.seekable()
            stream.isatty()
    finally:
        for target, fd in enumerate(saved):
            os.dup2(fd, target)
            os.close(fd)
        os.close(read_end)
        os.close(write_end)
    return streams


_SECRET_MARKERS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
_SECRET_PREFIXES = ("AWS_", "HF_", "HUGGING", "OPENAI", "ANTHROPIC", "WANDB", "GITHUB", "GH_")


def _looks_secret(name: str) -> bool:
    upper = name.upper()
    return upper.startswith(_SECRET_PREFIXES) or any(m in upper for m in _SECRET_MARKERS)


def _task_environment(workdir: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
    }


def main() -> NoReturn:
    config = json.loads(sys.argv[1])
    channel = Channel(config["socket_fd"])
    zygote = Zygote(config, channel)
    # Keep the zygote's objects out of every child's garbage collections: fewer pages
    # touched after fork, so fewer copy-on-write faults per task.
    gc.collect()
    gc.freeze()
    gc.disable()
    channel.send(
        {
            "event": "ready",
            "pid": os.getpid(),
            "layers": zygote.layers,
            "preload_failed": zygote.preload_failed,
        }
    )
    zygote.serve()


if __name__ == "__main__":
    main()
