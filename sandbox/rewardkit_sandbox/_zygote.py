"""The zygote: a freshly exec'd, single-threaded process that forks one confined child per task.

Started by ``SandboxPool`` as ``python -I -S -c <bootstrap> <config json>`` with a
scrubbed environment and one end of a unix socket.  At start it enters its own network
and mount namespaces where the kernel allows, becomes a child subreaper, probes every
layer in a throw-away child, and reports them (``{"event": "ready", "layers": ...}``).
Then, per request: create a private work directory, fork the task child (new process group,
rlimits, per-slot uid, no-new-privs, seccomp), enforce wall time, kill the whole task
(process group, then every process of the slot uid), reap everything, remove the
files, and answer ``{"event": "finished", ...}``.

Standard library plus ``pyseccomp`` only; everything is imported before paths are hidden.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from typing import Any, NoReturn

from rewardkit_sandbox import _confinement as confinement
from rewardkit_sandbox import _harness as harness
from rewardkit_sandbox._protocol import receive_message, send_message

_REPORT_LIMIT_BYTES = 4 * 1024 * 1024
_KILL_GRACE_S = 5.0
_SCRATCH_DIRS = ("/tmp", "/dev/shm", "/var/tmp")


def _layer(active: bool, detail: str) -> dict[str, Any]:
    return {"active": active, "detail": detail}


class Zygote:
    """One slot's zygote; ``serve`` handles requests until the socket closes."""

    def __init__(self, config: dict[str, Any], sock: socket.socket) -> None:
        self.sock = sock
        self.pid = os.getpid()
        self.uid: int = config["uid"]
        self.gid: int = config["gid"]
        self.layers: dict[str, dict[str, Any]] = {}
        bootstrap_paths = set(config["bootstrap_paths"])
        self.child_path = [p for p in sys.path if p not in bootstrap_paths]
        self.child_path += list(config["import_paths"])
        self.seccomp_filter: Any = None

        self._enter_subreaper()
        self._enter_network_namespace()
        self._enter_mount_namespace(config["disk_bytes"], config["hidden_paths"])
        self._check_environment()
        self.uid_isolation = os.geteuid() == 0
        self._build_seccomp()
        self._probe_child_layers()
        self._probe_process_group_kill()

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
        try:
            confinement.unshare(confinement.CLONE_NEWNS)
            confinement.mount("none", "/", None, confinement.MS_REC | confinement.MS_PRIVATE, None)
            flags = confinement.MS_NOSUID | confinement.MS_NODEV
            confinement.mount("tmpfs", "/tmp", "tmpfs", flags, f"size={disk_bytes},mode=1777")
            for path in _SCRATCH_DIRS[1:]:
                if os.path.isdir(path):
                    confinement.mount("tmpfs", path, "tmpfs", flags, "size=8m,mode=1777")
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
                confinement.mount(
                    f"/proc/self/fd/{handle}",
                    item,
                    None,
                    confinement.MS_BIND | confinement.MS_REC,
                    None,
                )
                confinement.mount(
                    "none",
                    item,
                    None,
                    confinement.MS_REMOUNT | confinement.MS_BIND | confinement.MS_RDONLY | flags,
                    None,
                )
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

    def _build_seccomp(self) -> None:
        try:
            self.seccomp_filter = confinement.build_seccomp_filter(
                deny_network_sockets=not self.netns
            )
        except Exception as error:  # ImportError, missing libseccomp, ...
            self.seccomp_error = f"{type(error).__name__}: {error}"
        else:
            self.seccomp_error = ""

    def _probe_child_layers(self) -> None:
        """Apply every per-task layer in a throw-away child and see which ones hold."""
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
            "no_new_privs": "PR_SET_NO_NEW_PRIVS",
            "seccomp": "libseccomp deny-list (ptrace, mount, bpf, namespaces, ...)",
        }
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
            confinement.prctl(confinement.PR_SET_NO_NEW_PRIVS, 1)
            outcome["no_new_privs"] = None
        except OSError as error:
            outcome["no_new_privs"] = str(error)
        if self.seccomp_filter is None:
            outcome["seccomp"] = self.seccomp_error or "no filter"
        else:
            try:
                self.seccomp_filter.load()
                confinement.unshare(0)
                outcome["seccomp"] = "filter loaded but unshare(2) still allowed"
            except OSError as error:
                outcome["seccomp"] = None if error.errno == errno.EPERM else str(error)
            except Exception as error:
                outcome["seccomp"] = f"{type(error).__name__}: {error}"
        return outcome

    def _probe_process_group_kill(self) -> None:
        pid = os.fork()
        if pid == 0:
            os.setsid()
            if os.fork() == 0:  # a member of the group that is not its leader
                time.sleep(60)
                os._exit(0)
            time.sleep(60)
            os._exit(0)
        time.sleep(0.01)
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
            request, fds = receive_message(self.sock, max_fds=3)
            if request is None:
                os._exit(0)
            if request.get("op") != "run" or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                continue
            reply = self._run_task(request, fds)
            send_message(self.sock, reply)
            if reply.get("fatal"):
                os._exit(1)

    def _make_workdir(self) -> str:
        base = "/tmp" if self.mountns else tempfile.gettempdir()
        workdir = tempfile.mkdtemp(prefix="rewardkit-task-", dir=base)
        if self.uid_isolation:
            os.chown(workdir, self.uid, self.gid)
        os.chmod(workdir, 0o700)
        return workdir

    def _run_task(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        reply: dict[str, Any] = {"event": "finished"}
        try:
            workdir = self._make_workdir()
        except OSError as error:
            for fd in fds:
                os.close(fd)
            reply["infra_error"] = f"could not create the work directory: {error}"
            return reply
        report_read, report_write = os.pipe()
        try:
            pid = os.fork()
        except OSError as error:
            for fd in (*fds, report_read, report_write):
                os.close(fd)
            shutil.rmtree(workdir, ignore_errors=True)
            reply["infra_error"] = f"fork failed: {error}"
            return reply
        if pid == 0:
            self._enter_task(request, fds, workdir, report_write)
        for fd in (*fds, report_write):
            os.close(fd)
        try:
            self._supervise(pid, request, report_read, reply)
        finally:
            os.close(report_read)
            self._clean_files(workdir)
        return reply

    def _supervise(
        self, pid: int, request: dict[str, Any], report_fd: int, reply: dict[str, Any]
    ) -> None:
        pidfd = os.pidfd_open(pid)
        deadline = time.monotonic() + float(request["limits"]["wall_time_s"])
        report = bytearray()
        kill_reason: str | None = None
        watched: list[Any] = [pidfd, self.sock, report_fd]
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
                ready, _, _ = select.select(watched, [], [], remaining)
                if report_fd in ready:
                    chunk = os.read(report_fd, 65536)
                    if not chunk:
                        watched.remove(report_fd)
                    elif len(report) < _REPORT_LIMIT_BYTES:
                        report += chunk
                if self.sock in ready:
                    message, extra_fds = receive_message(self.sock, max_fds=3)
                    for fd in extra_fds:
                        os.close(fd)
                    if message is None:
                        pool_gone = True
                        watched.remove(self.sock)
                        kill_reason = kill_reason or "pool closed"
                        self._kill_task(pid)
                    elif message.get("op") == "kill" and kill_reason is None:
                        kill_reason = str(message.get("reason", "killed"))
                        self._kill_task(pid)
                        deadline = time.monotonic() + _KILL_GRACE_S
                if pidfd in ready:
                    break
        finally:
            os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        self._kill_task(pid, main_child_reaped=True)
        if not self._reap_descendants(time.monotonic() + _KILL_GRACE_S):
            reply["infra_error"] = "processes of the task survived SIGKILL"
            reply["fatal"] = True
        report += self._read_rest(report_fd)
        if pool_gone:
            os._exit(0)
        reply["cpu_time_s"] = round(usage.ru_utime + usage.ru_stime, 6)
        reply["max_rss_kib"] = usage.ru_maxrss
        if os.WIFSIGNALED(status):
            reply["signal"] = os.WTERMSIG(status)
        else:
            reply["exit_code"] = os.WEXITSTATUS(status)
        reply["kill_reason"] = kill_reason
        self._parse_report(bytes(report), reply)

    @staticmethod
    def _read_rest(fd: int) -> bytes:
        os.set_blocking(fd, False)
        rest = bytearray()
        while len(rest) < _REPORT_LIMIT_BYTES:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            rest += chunk
        return bytes(rest)

    @staticmethod
    def _parse_report(report: bytes, reply: dict[str, Any]) -> None:
        """Trust records in order: setup first; candidate code cannot fake a setup error."""
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
        self, request: dict[str, Any], fds: list[int], workdir: str, report_fd: int
    ) -> NoReturn:
        try:
            # A new process group in the zygote's own terminal-less session (the pool starts
            # each zygote with setsid).  setsid() per task would also give a new session but
            # costs ~3 ms on kernels with sched autogroup, more than the rest of a task.
            os.setpgid(0, 0)
            gc.enable()
            self.sock.detach()
            for target, fd in enumerate((*fds, report_fd)):
                os.dup2(fd, target)
            os.closerange(4, 1 << 16)
            os.chdir(workdir)
            limits = request["limits"]
            confinement.set_rlimits(
                {
                    "CPU": max(1, int(-(-float(limits["cpu_time_s"]) // 1))),
                    "AS": int(limits["memory_bytes"]),
                    "FSIZE": int(limits["file_size_bytes"]),
                    "NOFILE": int(limits["open_files"]),
                    "NPROC": int(limits["processes"]),
                }
            )
            if self.uid_isolation:
                confinement.drop_privileges(self.uid, self.gid)
            confinement.prctl(confinement.PR_SET_DUMPABLE, 0)
            confinement.prctl(confinement.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != self.pid:
                os._exit(harness.SETUP_FAILED_EXIT_CODE)
            if self.layers["no_new_privs"]["active"]:
                confinement.prctl(confinement.PR_SET_NO_NEW_PRIVS, 1)
            if self.layers["seccomp"]["active"]:
                self.seccomp_filter.load()
            os.environ.clear()
            os.environ.update(_task_environment(workdir))
            sys.path[:] = self.child_path
            sys.argv[:] = ["main.py"]
            _reopen_stdio()
        except BaseException as error:
            harness.write_report(3, {"setup_error": f"{type(error).__name__}: {error}"})
            os._exit(harness.SETUP_FAILED_EXIT_CODE)
        harness.write_report(3, {"setup": "ok"})
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

    def _clean_files(self, workdir: str) -> None:
        shutil.rmtree(workdir, ignore_errors=True)
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
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
                except OSError:
                    continue


def _reopen_stdio() -> None:
    """Fresh text streams on fds 0-2 (the zygote's own wrap /dev/null and may hold buffers)."""
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.stderr = open(  # noqa: SIM115
        2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1
    )


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
    sock = socket.socket(fileno=config["socket_fd"])
    zygote = Zygote(config, sock)
    # Keep the zygote's objects out of every child's garbage collections: fewer pages
    # touched after fork, so fewer copy-on-write faults per task.
    gc.freeze()
    gc.disable()
    send_message(sock, {"event": "ready", "pid": os.getpid(), "layers": zygote.layers})
    zygote.serve()


if __name__ == "__main__":
    main()
