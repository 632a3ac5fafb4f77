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

This module starts the zygote and executes tasks (spawn the child, report); the zygote's
other jobs are objects it holds, each given only the state it needs, beside it in this
package: :mod:`.mounts` (namespaces and mounts, at start-up), :mod:`.probes` (layer
probes, at start-up), :mod:`.workdir` (work directories), :mod:`.supervision` (serving
a running task: stdin, outputs, wall time), :mod:`.reaping` (kill and reap),
:mod:`.judge` (the slot's judge process) and :mod:`.judging` (a task's tests, each
judged by it).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import resource
import signal
import sys

from rewardkit_sandbox import _calls
from rewardkit_sandbox import _confinement as confinement
from rewardkit_sandbox import _harness as harness
from rewardkit_sandbox._memory_cgroup import SlotMemory, raise_oom_score
from rewardkit_sandbox._protocol import Channel
from rewardkit_sandbox.zygote.forker import Forker
from rewardkit_sandbox.zygote.judge import Judge
from rewardkit_sandbox.zygote.judging import Judging
from rewardkit_sandbox.zygote.mounts import NamespacesAndMounts
from rewardkit_sandbox.zygote.probes import (
    ProbeConfinement,
    layer,
    probe_child_layers,
    probe_process_group_kill,
)
from rewardkit_sandbox.zygote.reaping import Reaper
from rewardkit_sandbox.zygote.supervision import (
    REPORT_LIMIT_BYTES,
    Stuck,
    Task,
    TaskSupervisor,
    feed,
    pipes,
    read_rest,
)
from rewardkit_sandbox.zygote.workdir import WorkDirectories, shared_temp_dir

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from typing import Any, NoReturn

_GC_EVERY_OBJECTS = 20000
_CHILD_FDS = 6  # a candidate's 0-5: stdio, report, its link to the judge
#: the OOM killer takes the zygote and its tasks (and judges) before anything of the
#: trainer's (0): a task's own flood, machine- or container-wide, ends the task
OOM_SCORE_ADJ = 1000


class Zygote:
    """One slot's zygote; ``serve`` handles requests until the socket closes.

    Its collaborators: ``judge`` (the slot's judge process), ``reaper`` (kills and reaps
    a task, sparing the judge), ``supervisor`` (serves a running task),
    ``judging`` (runs a task's tests) and ``workdirs`` (the tasks' work directories).
    """

    def __init__(self, config: dict[str, Any], channel: Channel) -> None:
        self.channel = channel
        self.pid = os.getpid()
        self.uid: int = config["uid"]
        self.gid: int = config["gid"]
        self.layers: dict[str, dict[str, Any]] = {}
        bootstrap_paths = set(config["bootstrap_paths"])
        child_path = [p for p in sys.path if p not in bootstrap_paths]
        child_path += list(config["import_paths"])
        self.seccomp_program: confinement.SeccompProgram | None = None
        # Keep fds 0-5 taken, so that no pipe of a task is created there: a child moves
        # its descriptors onto 0-5 and must not overwrite one it has not moved yet.
        while (placeholder := os.open(os.devnull, os.O_RDWR)) < _CHILD_FDS - 1:
            pass
        if placeholder > _CHILD_FDS - 1:
            os.close(placeholder)
        self.devnull = os.open(os.devnull, os.O_RDWR)  # test children's stdin, judges' stdio
        raise_oom_score(OOM_SCORE_ADJ)  # inherited by every child
        self._open_slot_memory(config)
        # read before the mounts hide the package's folder (it may be under /work, /home)
        self.trusted_programs = _trusted_programs()

        mounts = NamespacesAndMounts(self.layers, child_path)
        mounts.enter_subreaper()
        mounts.enter_network_namespace()
        mounts.enter_mount_namespace(config)
        self.child_path = mounts.child_path
        self.netns = mounts.netns
        self._check_environment()
        self._load_seccomp_program(config)
        self._confine_self()
        self.uid_isolation = probe_child_layers(self.layers, ProbeConfinement(
            self.uid, self.gid, self.netns, self.seccomp_program, self.seccomp_error,
            self.nnp_error,
        ))
        self.judge = Judge(config.get("judge_uid", self.uid), self.devnull, self._enter_task)
        # started at the end of start-up (start_forker), once the children's state is final
        self.forker = Forker(self._run_child, self.pid)
        self.forker_wanted = bool(config.get("forker"))
        self.reaper = Reaper(self.pid, self.uid, self.uid_isolation, self.judge, self.forker)
        probe_process_group_kill(self.layers, self.reaper)
        self.supervisor = TaskSupervisor(channel, self.reaper, self.judge)
        self.judging = Judging(self.supervisor, self.judge, self._spawn_child, self.devnull)
        self._prepare_children(config.get("preload") or [], mounts)

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

    def _open_slot_memory(self, config: dict[str, Any]) -> None:
        """The slot's memory cgroup (made by the pool), opened before the mounts."""
        self.slot_memory: SlotMemory | None = None
        detail = str(config.get("memory_cgroup_detail") or "not set up by the pool")
        if config.get("memory_cgroup"):
            try:
                self.slot_memory = SlotMemory(config["memory_cgroup"])
            except OSError as error:
                detail = f"the slot's cgroup could not be opened: {error}"
        self.layers["memory_cgroup"] = layer(self.slot_memory is not None, detail)

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

    def _prepare_children(self, preload: list[str], mounts: NamespacesAndMounts) -> None:
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
        workdir_base = "/tmp" if mounts.mountns else shared_temp_dir()
        self.fixed_workdir = (
            f"/tmp/rewardkit-task-{os.urandom(6).hex()}" if "/tmp" in mounts.mounted else ""
        )
        scratch_mounts = [path for path in mounts.scratch_dirs if path in mounts.mounted]
        umask = os.umask(0o077)
        os.umask(umask)
        self.workdirs = WorkDirectories(
            self.uid, self.gid, self.uid_isolation, mounts.mountns, self.fixed_workdir,
            workdir_base, bool(umask & 0o700), mounts.scratch_dirs, scratch_mounts,
        )
        harness.warm_up()
        self.task_stdio = _task_stdio()
        os.environ.clear()
        os.environ.update(_task_environment(self.fixed_workdir or workdir_base))
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
        if os.geteuid() != 0:
            # Tasks then run as our own uid: keep them out of /proc/<zygote>/mem and /fd
            # (a task's tests are in a memory file here). As root, the slot uids are.
            with contextlib.suppress(OSError):
                confinement.prctl(confinement.PR_SET_DUMPABLE, 0)
        if self.seccomp_program is None:
            return
        try:
            self.seccomp_program.load()
        except OSError as error:
            self.seccomp_error = f"loading the filter failed: {error}"
            self.seccomp_program = None

    def start_forker(self) -> None:
        """Hand the forking of task children to the forker (:mod:`.forker`), with
        per-slot uids only: a candidate then runs as another uid than the forker."""
        if not self.forker_wanted:
            self.forker.why = "off (the default; REWARDKIT_SANDBOX_FORKER=1 turns it on)"
            return
        if not self.uid_isolation:
            self.forker.why = "tasks would run as the forker's own uid"
            return
        keep: list[int] = [self.devnull]
        if self.slot_memory is not None:
            memory = self.slot_memory
            keep += [fd for fd in (memory.procs, memory.limit, memory.swap, memory.events)
                     if fd >= 0]
        self.forker.start(tuple(keep))

    # -- serving ---------------------------------------------------------------------

    def serve(self) -> NoReturn:
        while True:
            request = self.channel.receive()
            if request is None:
                os._exit(0)
            if request.get("op") != "run":
                continue
            tests_fd = -1
            if request.get("tests_bytes") is not None:
                # The tests arrive after the request, raw, and go straight into a memory
                # file that only judges inherit: no candidate forked later finds them in
                # the zygote's memory (the channel wipes its buffers).
                tests_fd = os.memfd_create("rewardkit-tests", os.MFD_CLOEXEC)
                self.channel.receive_raw(tests_fd, int(request["tests_bytes"]))
            try:
                reply = self._execute_task(request, request.get("stdin") or b"", tests_fd)
            finally:
                if tests_fd >= 0:
                    os.close(tests_fd)
            if reply.get("pool_gone"):  # the task is dead and its files removed
                os._exit(0)
            self.channel.send(reply)
            if reply.get("fatal"):
                os._exit(1)
            if gc.get_count()[0] > _GC_EVERY_OBJECTS:  # gc is off here; keep the heap tidy
                gc.collect()
                gc.freeze()


    def _execute_task(self, request: dict[str, Any], stdin: bytes, tests_fd: int) -> dict[str, Any]:
        reply: dict[str, Any] = {"event": "finished"}
        limits = request["limits"]
        task = Task(limits)
        try:
            workdir = self.workdirs.make()
        except OSError as error:
            reply["infra_error"] = f"could not create the work directory: {error}"
            return reply
        oom_kills = -1
        if self.slot_memory is not None:
            try:
                self.slot_memory.set_limit(int(limits["memory_bytes"]))
                oom_kills = self.slot_memory.oom_kills()
            except (OSError, ValueError) as error:  # usage the cgroup cannot reclaim
                self.workdirs.clean(workdir)
                reply["infra_error"] = f"could not set the slot's memory limit: {error}"
                reply["retire"] = "its memory cgroup refused a limit"
                return reply
        try:
            stdout_read, stdout_write, stderr_read, stderr_write = pipes(2)
        except OSError as error:
            self.workdirs.clean(workdir)
            reply["infra_error"] = f"could not create the task's pipes: {error}"
            return reply
        task.outputs = {stdout_read: task.stdout, stderr_read: task.stderr}
        task.open_outputs = [stdout_read, stderr_read]
        writers = [stdout_write, stderr_write]  # the task's ends: closed once it has them
        try:
            if request.get("test_spans") is None:
                self._execute_program(request, stdin, task, writers, workdir, reply)
            else:
                self.judging.judge_tests(request, task, writers, workdir, reply, tests_fd)
        except Stuck as stuck:
            reply["infra_error"] = str(stuck)
            reply["fatal"] = True
        finally:
            for fd in writers:
                os.close(fd)
            writers.clear()
            if not reply.get("fatal"):
                self.supervisor.end_task(task, reply)
            if oom_kills >= 0 and self.slot_memory is not None:
                with contextlib.suppress(OSError, ValueError):
                    if self.slot_memory.oom_kills() > oom_kills:
                        reply["memory"] = True  # the cgroup's OOM killer ended a process
            for fd in (stdout_read, stderr_read):
                os.close(fd)
            if not self.workdirs.clean(workdir):
                reply["retire"] = self.workdirs.why_not_clean()
        if task.pool_gone:
            reply["pool_gone"] = True
        reply["kill_reason"] = task.kill_reason
        reply["stdout_truncated"] = task.stdout.truncated
        reply["stderr_truncated"] = task.stderr.truncated
        reply["stdout"] = bytes(task.stdout.data)
        reply["stderr"] = bytes(task.stderr.data)
        return reply

    def _spawn_child(
        self,
        request: dict[str, Any],
        fds: tuple[int, ...],
        workdir: str,
        role: str = "program",
    ) -> int:
        """Fork a confined child on ``fds`` (as its 0, 1, ...) running the program
        (``role`` "program") or a test's candidate ("candidate"): through the forker when
        there is one (its child is ours), else here."""
        try:
            pid = self.forker.spawn(request, fds, workdir, role)
        except OSError:
            # the forker failed once it had the request (and is gone now): fork here
            # unless it made a child before it went
            if self.reaper.children_left():
                raise
            pid = None
        if pid is not None:
            return pid
        pid = os.fork()
        if pid:
            return pid
        self._run_child(request, fds, workdir, role)

    def _run_child(
        self, request: dict[str, Any], fds: tuple[int, ...], workdir: str, role: str
    ) -> NoReturn:
        """The body of a freshly forked child (here or in the forker): confinement, then
        the program or the candidate; it never returns.  Reads only ``request``'s
        ``code`` and ``limits["rlimits"]`` (what the forker is sent)."""
        try:
            self._enter_task(request, fds, workdir)
            if role == "program":
                code = request["code"]
                harness.run_program(code, 3, self.trusted_programs.get(code))
            harness.run_candidate(request["code"], 3, _calls.Link(4, 5))
        finally:
            os._exit(harness.SETUP_FAILED_EXIT_CODE)

    def _execute_program(
        self,
        request: dict[str, Any],
        stdin: bytes,
        task: Task,
        writers: list[int],
        workdir: str,
        reply: dict[str, Any],
    ) -> None:
        """The program as ``__main__`` in one child, fed ``stdin``."""
        try:
            stdin_read, stdin_write = os.pipe()
        except OSError as error:
            reply["infra_error"] = f"could not create the task's pipes: {error}"
            return
        pending = memoryview(stdin)
        if pending:  # most of it fits in the pipe before the child even starts
            os.set_blocking(stdin_write, False)
            pending = feed(stdin_write, pending)
        if not pending:
            os.close(stdin_write)
            stdin_write = -1
        task.stdin_fd, task.pending = stdin_write, pending
        try:
            ran = self._spawn_and_supervise(request, task, (stdin_read, *writers), workdir)
        finally:
            if task.stdin_fd >= 0:
                os.close(task.stdin_fd)
                task.stdin_fd = -1
        if isinstance(ran, str):
            reply["infra_error"] = ran
            return
        status, usage, report = ran
        _exit_status(status, usage, reply)
        self._parse_report(report, reply)

    def _spawn_and_supervise(
        self,
        request: dict[str, Any],
        task: Task,
        stdio: tuple[int, ...],
        workdir: str,
    ) -> tuple[int, Any, bytes] | str:
        """Fork the program's child on ``stdio`` (``stdio[0]`` is closed here once it is
        forked) and serve the task until that child exits.

        Returns its wait status, resource use and report; or why it could not be started.
        """
        try:
            report_read, report_write = os.pipe()
        except OSError as error:
            return f"could not create the task's pipes: {error}"
        try:
            try:
                pid = self._spawn_child(request, (*stdio, report_write), workdir)
            except OSError as error:
                return f"fork failed: {error}"
            finally:
                os.close(report_write)
                os.close(stdio[0])
            self.supervisor.watch(task, pid, None)
            _, status, usage = os.wait4(pid, 0)
            # Read once the child is gone (its few records fit in the pipe: a program that
            # fills it with more only blocks itself).
            report = read_rest(report_read, REPORT_LIMIT_BYTES)
        finally:
            os.close(report_read)
        return status, usage, report

    @staticmethod
    def _parse_report(report: bytes, reply: dict[str, Any]) -> None:
        """Trust records in order: setup first; candidate code cannot fake a setup error."""
        if report == harness.SETUP_DONE_RECORD:  # a program that ran and reported nothing
            reply["tests"] = []
            return
        setup_done = False
        tests: list[dict[str, Any]] = []
        harness_records: list[str] = []
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
            elif isinstance(record.get("harness"), str) and len(harness_records) < 4:
                # a compiled test program's harness says it finished (see languages._harnesses)
                harness_records.append(record["harness"][:100])
            elif isinstance(record.get("test"), dict):
                tests.append(record["test"])
        if not setup_done:
            reply["setup_incomplete"] = True
        reply["tests"] = tests
        if harness_records:
            reply["harness"] = harness_records

    # -- inside the task child ----------------------------------------------------------

    def _enter_task(
        self, request: dict[str, Any], fds: tuple[int, ...], workdir: str, uid: int = -1
    ) -> None:
        """Confine this (freshly forked) child and put ``fds`` on 0-3; exits on failure."""
        try:
            # A new process group in the zygote's own terminal-less session (the pool starts
            # each zygote with setsid).  setsid() per task would also give a new session but
            # costs ~3 ms on kernels with sched autogroup, more than the rest of a task.
            os.setpgid(0, 0)
            if self.slot_memory is not None and uid < 0:  # a candidate's (not a judge)
                self.slot_memory.join()
            gc.enable()
            for target, fd in enumerate(fds):  # every fd is > 5 (see __init__)
                os.dup2(fd, target)
            os.closerange(len(fds), 1 << 16)  # the control socket included
            os.chdir(workdir)
            limits = request["limits"]
            for which, soft, hard in limits["rlimits"]:  # RLIMIT_CORE=0 is inherited
                resource.setrlimit(which, (soft, hard))
            if self.uid_isolation:
                if not self.groups_dropped:  # normally done once, in the zygote
                    os.setgroups([])
                uid = self.uid if uid < 0 else uid
                gid = self.gid if uid == self.uid else uid
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)
                if os.geteuid() != uid or os.getegid() != gid:
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



def _exit_status(status: int, usage: Any, reply: dict[str, Any]) -> None:
    """The program child's exit (code or signal) and resource use, into the reply."""
    reply["cpu_time_s"] = round(usage.ru_utime + usage.ru_stime, 6)
    reply["max_rss_kib"] = usage.ru_maxrss
    if os.WIFSIGNALED(status):
        reply["signal"] = os.WTERMSIG(status)
    else:
        reply["exit_code"] = os.WEXITSTATUS(status)


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


#: the compiled-language driver's entry points (``rewardkit_sandbox.languages``)
_DRIVER_ENTRIES = ("build", "execute")


def _trusted_programs() -> dict[str, harness.Precompiled]:
    """The compiled-language driver's two programs (its source, then ``build()`` or
    ``execute()``, exactly as ``rewardkit_sandbox.languages`` sends them), compiled once
    here from the package's own file: a task child running one of them starts from this
    code instead of compiling the ~300-line driver again (several ms of CPU in every
    build task and run task). Only this trusted source is kept, never a task's: a request whose
    code is anything else is compiled in its child as before. Read at start-up, before
    the zygote's mounts hide the folder the package may lie in."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "languages", "_driver.py")
    try:
        with open(path, encoding="utf-8") as handle:
            driver = handle.read()
    except OSError:  # a package without the languages: every program is compiled
        return {}
    programs = [f"{driver}\n{entry}()\n" for entry in _DRIVER_ENTRIES]
    return {source: harness.precompile(source) for source in programs}


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
    zygote.start_forker()
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
