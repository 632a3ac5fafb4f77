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
import stat
import sys
import time

from rewardkit_sandbox import _confinement as confinement
from rewardkit_sandbox import _harness as harness
from rewardkit_sandbox._protocol import Channel

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from typing import Any, NoReturn

_REPORT_LIMIT_BYTES = 4 * 1024 * 1024
_KILL_GRACE_S = 5.0
_SCRATCH_DIRS = ("/tmp", "/dev/shm", "/var/tmp")
_READ_CHUNK = 65536
# tmpfs sizes a directory as 2 * BOGO_DIRENT_SIZE plus BOGO_DIRENT_SIZE per entry.
_TMPFS_DIRENT = 20
_TMPFS_EMPTY_DIR = 2 * _TMPFS_DIRENT
_GC_EVERY_OBJECTS = 20000


def _layer(active: bool, detail: str) -> dict[str, Any]:
    return {"active": active, "detail": detail}


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


class Zygote:
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

    # -- start-up: enter what the kernel allows, then probe -----------------------------

    def _enter_subreaper(self) -> None:
        try:
            confinement.prctl(confinement.PR_SET_CHILD_SUBREAPER, 1)
            self.layers["child_subreaper"] = _layer(True, "orphans of a task are reaped here")
        except OSError as error:
            self.layers["child_subreaper"] = _layer(False, f"prctl failed: {error}")

    def _enter_network_namespace(self) -> None:
        try:
            confinement.unshare(confinement.CLONE_NEWNET)
            self.netns = True
            self.layers["network_namespace"] = _layer(True, "empty namespace, loopback down")
        except OSError as error:
            self.netns = False
            self.layers["network_namespace"] = _layer(
                False, f"unshare(CLONE_NEWNET) failed: {error}; seccomp denies inet sockets"
            )

    def _enter_mount_namespace(self, disk_bytes: int, hidden_paths: list[str]) -> None:
        self.mountns = False
        self.mounted: list[str] = []
        try:
            confinement.unshare(confinement.CLONE_NEWNS)
            confinement.mount("none", "/", None, confinement.MS_REC | confinement.MS_PRIVATE, None)
            flags = confinement.MS_NOSUID | confinement.MS_NODEV
            # import paths inside a scratch directory (a venv in /tmp) vanish under the
            # private tmpfs: hold them by descriptor now, bind them back below
            in_scratch = _paths_inside(self.child_path, _SCRATCH_DIRS)
            handles = {item: os.open(item, os.O_PATH | os.O_DIRECTORY) for item in in_scratch}
            try:
                confinement.mount("tmpfs", "/tmp", "tmpfs", flags,
                                  f"size={disk_bytes},mode=1777")
                self.mounted.append("/tmp")
                for path in _SCRATCH_DIRS[1:]:
                    if os.path.isdir(path):
                        confinement.mount("tmpfs", path, "tmpfs", flags, "size=8m,mode=1777")
                        self.mounted.append(path)
                if handles:
                    self._reexpose(handles)
            finally:
                for handle in handles.values():
                    os.close(handle)
            hidden = [path for path in hidden_paths if self._hide(path)]
        except OSError as error:
            self.layers["mount_namespace"] = _layer(
                False, f"{error}; work dirs in the shared /tmp, no disk quota, paths not hidden"
            )
            return
        self.mountns = True
        detail = f"private tmpfs /tmp ({disk_bytes // (1024 * 1024)} MiB)"
        if hidden:
            detail += ", hidden: " + " ".join(hidden)
        self.layers["mount_namespace"] = _layer(True, detail)

    def _reexpose(self, handles: dict[str, int]) -> None:
        """Bind the import paths held by ``handles`` read-only under a read-only tmpfs on
        ``_REEXPOSE_ROOT`` (outside every scratch directory, so task clean-up never meets
        them) and point the children's ``sys.path`` there."""
        if not os.path.isdir(_REEXPOSE_ROOT):
            raise OSError(f"import paths {sorted(handles)} are inside a scratch directory "
                          f"and there is no {_REEXPOSE_ROOT} to show them again under")
        flags = confinement.MS_NOSUID | confinement.MS_NODEV
        confinement.mount("tmpfs", _REEXPOSE_ROOT, "tmpfs", flags, "size=1m,mode=755")
        moved: dict[str, str] = {}
        for index, (item, handle) in enumerate(sorted(handles.items())):
            target = os.path.join(_REEXPOSE_ROOT, f"import-{index}")
            os.mkdir(target, 0o755)
            _bind_read_only(handle, target, flags)
            moved[item] = target
        confinement.mount("tmpfs", _REEXPOSE_ROOT, "tmpfs",
                          confinement.MS_REMOUNT | confinement.MS_RDONLY | flags,
                          "size=1m,mode=755")
        self.child_path = [moved.get(os.path.realpath(p), p) for p in self.child_path]

    def _hide(self, path: str) -> bool:
        """Cover ``path`` with an empty read-only tmpfs, re-exposing the import paths in it.

        The interpreter's own library may live under a hidden path (``/root/.pyenv``):
        those directories are bind-mounted back, read-only, through an ``O_PATH``
        descriptor opened before the cover went on.
        """
        path = os.path.realpath(path)
        if not os.path.isdir(path) or path == "/":
            return False
        for scratch in _SCRATCH_DIRS:
            if scratch == path or scratch.startswith(path + os.sep):
                return False
        visible = sorted(
            {
                os.path.realpath(item)
                for item in self.child_path
                if os.path.isdir(item) and os.path.realpath(item).startswith(path + os.sep)
            }
        )
        if any(os.path.realpath(item) == path for item in self.child_path):
            return False
        handles = {item: os.open(item, os.O_PATH | os.O_DIRECTORY) for item in visible}
        try:
            flags = confinement.MS_NOSUID | confinement.MS_NODEV
            confinement.mount("tmpfs", path, "tmpfs", flags, "size=1m,mode=755")
            for item, handle in handles.items():
                os.makedirs(item, mode=0o755, exist_ok=True)
                _bind_read_only(handle, item, flags)
            confinement.mount(
                "tmpfs",
                path,
                "tmpfs",
                confinement.MS_REMOUNT | confinement.MS_RDONLY | flags,
                "size=1m,mode=755",
            )
        finally:
            for handle in handles.values():
                os.close(handle)
        return True

    def _check_environment(self) -> None:
        leaked = [name for name in os.environ if _looks_secret(name)]
        cuda = os.environ.get("CUDA_VISIBLE_DEVICES", None) == ""
        if leaked or not cuda:
            problems = ", ".join(leaked) or "CUDA_VISIBLE_DEVICES not empty"
            self.layers["scrubbed_environment"] = _layer(False, problems)
        else:
            names = ",".join(sorted(os.environ))
            self.layers["scrubbed_environment"] = _layer(True, f"only {names}; no CUDA")

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
        self.scratch_mounts = [path for path in _SCRATCH_DIRS if path in self.mounted]
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

    def _probe_child_layers(self) -> None:
        """See, in a throw-away child, which per-task layers hold."""
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            outcome = self._confine_probe()
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
            "uid_isolation": f"uid {self.uid}, gid {self.gid}, no groups",
            "no_new_privs": "PR_SET_NO_NEW_PRIVS (set in the zygote, inherited)",
            "seccomp": "libseccomp deny-list (ptrace, mount, bpf, namespaces, ...)",
        }
        if self.seccomp_program is not None:
            details["seccomp"] += (
                f"; {self.seccomp_program.instructions} BPF instructions,"
                " loaded in the zygote, inherited"
            )
        for name, detail in details.items():
            error = outcome.get(name, "probe child died")
            self.layers[name] = _layer(error is None, detail if error is None else error)
        if not self.netns and self.layers["seccomp"]["active"]:
            self.layers["seccomp"]["detail"] += " + socket() other than AF_UNIX"
        self.uid_isolation = self.layers["uid_isolation"]["active"]

    def _confine_probe(self) -> dict[str, str | None]:
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
                confinement.drop_privileges(self.uid, self.gid)
                outcome["uid_isolation"] = None
            except OSError as error:
                outcome["uid_isolation"] = str(error)
        try:
            inherited = confinement.prctl_get(confinement.PR_GET_NO_NEW_PRIVS) == 1
            outcome["no_new_privs"] = None if inherited else (self.nnp_error or "not set")
        except OSError as error:
            outcome["no_new_privs"] = str(error)
        if self.seccomp_program is None:
            outcome["seccomp"] = self.seccomp_error or "no filter"
        else:
            try:
                confinement.unshare(0)
                outcome["seccomp"] = "filter loaded but unshare(2) still allowed"
            except OSError as error:
                outcome["seccomp"] = None if error.errno == errno.EPERM else str(error)
        return outcome

    def _probe_process_group_kill(self) -> None:
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
            self._reap_descendants(time.monotonic() + 2.0)
            detail = "killpg(SIGKILL) of the task's process group"
            self.layers["process_group_kill"] = _layer(killed, detail)
        except OSError as error:
            self.layers["process_group_kill"] = _layer(False, f"killpg failed: {error}")

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

    def _make_workdir(self) -> str:
        while True:
            workdir = self.fixed_workdir or (
                f"{self.workdir_base}/rewardkit-task-{os.urandom(6).hex()}"
            )
            try:
                os.mkdir(workdir, 0o700)
            except FileExistsError:
                if self.fixed_workdir:  # the last task's was not removed: never reuse it
                    raise
                continue
            break
        try:
            if self.uid_isolation:
                os.chown(workdir, self.uid, self.gid)
            if self.chmod_workdir:
                os.chmod(workdir, 0o700)
        except OSError:
            os.rmdir(workdir)
            raise
        return workdir

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

    # -- ending a task: kill, reap, clean -----------------------------------------------

    def _kill_task(self, pid: int, main_child_reaped: bool = False) -> None:
        """SIGKILL the task's process group, then everything its uid runs (or our children)."""
        if not main_child_reaped:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        elif not self._has_live_children():
            return
        if self.uid_isolation:
            self._kill_everything_of_uid()
        else:
            self._kill_children()

    def _has_live_children(self) -> bool:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True

    def _kill_everything_of_uid(self) -> None:
        # kill(-1) as the slot uid reaches every process of that uid and nothing else; the
        # kernel refuses new forks of a process with a fatal signal pending, so it is final.
        killer = os.fork()
        if killer == 0:
            try:
                os.setresuid(self.uid, self.uid, self.uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(killer, 0)

    def _kill_children(self) -> None:
        for child in _children_of(self.pid):
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(child, signal.SIGKILL)

    def _reap_descendants(self, deadline: float) -> bool:
        """Reap until no child is left; orphans reparent here (subreaper).  False on timeout."""
        pause = 0.0002
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid:
                continue
            if time.monotonic() > deadline:
                return False
            if not self.uid_isolation:
                self._kill_children()
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def _clean_files(self, workdir: str) -> bool:
        """Remove what the task left; False when the private scratch space is not empty."""
        if self.mountns and self._only_an_empty_workdir(workdir):
            with contextlib.suppress(OSError):
                os.rmdir(workdir)
                return True
        _remove_tree(workdir)
        for directory in _SCRATCH_DIRS:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                try:
                    if not self.mountns and entry.stat(follow_symlinks=False).st_uid != self.uid:
                        continue
                    if not self.mountns and not self.uid_isolation:
                        continue
                    _remove_tree(entry.path)
                except OSError:
                    continue
        if not self.mountns:
            return True
        try:
            return all(os.lstat(path).st_size == _TMPFS_EMPTY_DIR for path in self.scratch_mounts)
        except OSError:
            return False

    def _only_an_empty_workdir(self, workdir: str) -> bool:
        """True when the task left nothing: a few lstat() instead of listing directories.

        Only on the zygote's own tmpfs mounts, where a directory's size counts its entries
        exactly: /tmp holds one entry (the work directory, an empty directory), and the
        other scratch directories none.
        """
        try:
            info = os.lstat(workdir)
            if not stat.S_ISDIR(info.st_mode) or info.st_size != _TMPFS_EMPTY_DIR:
                return False
            for directory in self.scratch_mounts:
                expected = _TMPFS_EMPTY_DIR + (_TMPFS_DIRENT if directory == "/tmp" else 0)
                if os.lstat(directory).st_size != expected:
                    return False
        except OSError:
            return False
        return "/tmp" in self.scratch_mounts and os.path.dirname(workdir) == "/tmp"


#: where import paths from inside a scratch directory are shown again (under a tmpfs)
_REEXPOSE_ROOT = "/mnt"


def _paths_inside(paths: list[str], roots: tuple[str, ...]) -> list[str]:
    """The existing directories of ``paths`` (resolved) that lie inside one of ``roots``."""
    found = set()
    for item in paths:
        real = os.path.realpath(item)
        if os.path.isdir(real) and any(real.startswith(root + os.sep) for root in roots):
            found.add(real)
    return sorted(found)


def _bind_read_only(handle: int, target: str, flags: int) -> None:
    """Bind-mount the directory held by the O_PATH descriptor ``handle`` on ``target``,
    read-only."""
    confinement.mount(f"/proc/self/fd/{handle}", target, None,
                      confinement.MS_BIND | confinement.MS_REC, None)
    confinement.mount("none", target, None,
                      confinement.MS_REMOUNT | confinement.MS_BIND | confinement.MS_RDONLY | flags,
                      None)


def _remove_tree(path: str) -> None:
    """``rm -rf path`` as root over a tree the task wrote: never follows a symlink.

    Descends by directory descriptors opened with O_NOFOLLOW (like shutil.rmtree's safe
    variant, without its imports), iteratively, so depth costs descriptors, not stack.
    Whatever cannot be removed stays; the caller checks.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(path, flags)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)  # a file, a symlink, or already gone
        return
    # (directory fd, names still to remove in it, its own name in the parent)
    stack: list[tuple[int, list[str], str]] = []
    try:
        stack.append((top, os.listdir(top), ""))
    except OSError:
        os.close(top)
        return
    while stack:
        fd, names, own_name = stack[-1]
        if not names:
            stack.pop()
            os.close(fd)
            if stack:
                with contextlib.suppress(OSError):
                    os.rmdir(own_name, dir_fd=stack[-1][0])
            continue
        name = names.pop()
        try:
            os.unlink(name, dir_fd=fd)
            continue
        except IsADirectoryError:
            pass
        except OSError:
            continue
        try:
            child = os.open(name, flags, dir_fd=fd)
        except OSError:
            continue
        try:
            stack.append((child, os.listdir(child), name))
        except OSError:
            os.close(child)
    with contextlib.suppress(OSError):
        os.rmdir(path)


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


def _shared_temp_dir() -> str:
    """Where work directories go without a mount namespace (``tempfile.gettempdir``'s pick)."""
    for candidate in (os.environ.get("TMPDIR"), os.environ.get("TEMP"), os.environ.get("TMP")):
        if candidate and os.path.isdir(candidate):
            return os.path.abspath(candidate)
    for candidate in ("/tmp", "/var/tmp", "/usr/tmp"):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return os.getcwd()


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


def _children_of(pid: int) -> list[int]:
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                children.extend(int(item) for item in listing.read().split())
    return children


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
