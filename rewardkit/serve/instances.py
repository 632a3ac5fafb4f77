"""``rewardkit serve CONFIG --instances N``: N server processes on one address.

The parent process binds the address first (``SO_REUSEPORT``, never listening: it holds
the port, a ``--port 0`` picks it), then starts N children, each the same ``rewardkit
serve`` command line with ``--instances 1``, that port and ``SO_REUSEPORT``: each child is
a whole instance (its own micro-batcher, worker pool and metrics) listening on the same
port, and the kernel spreads the incoming connections over the listening instances (no
process in between). A connection stays with the instance that accepted it.

The parent supervises:

- it writes ``--port-file`` once every instance accepts connections; an instance that
  fails before that stops the others, and the parent exits 1;
- an instance that dies while serving (a crash, a kill) is started again (its socket
  left the port's group when it died, so the others took its connections meanwhile);
  one that dies again within ``QUICK_DEATH_S`` of its start ``MAX_QUICK_DEATHS`` times
  in a row stops the service (exit 1): something is wrong with it, not with a request;
- SIGTERM or SIGINT is passed on to every instance, each drains as a lone service does
  (its batches in progress answered), and the parent exits 0 when every instance
  exited 0, else 1;
- each instance asks the kernel for SIGTERM when the parent dies (``PR_SET_PDEATHSIG``),
  so a killed parent leaves no instance holding the port.

Each instance answers ``/health`` and ``/metrics`` for itself (which one: ``instance`` in
the health answer, and the ``X-Rewardkit-Instance`` header on every answer).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: an instance that dies this soon after its start died "quickly" (see MAX_QUICK_DEATHS)
QUICK_DEATH_S = 10.0
#: quick deaths in a row after which the service stops instead of starting it again
MAX_QUICK_DEATHS = 3
_PR_SET_PDEATHSIG = 1
_POLL_S = 0.1


class InstancesError(Exception):
    """The instances could not be started (the message says why)."""


@dataclass
class _Instance:
    number: int
    port_file: Path
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    quick_deaths: int = 0
    restarts: int = 0
    exit_codes: list[int] = field(default_factory=list)


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to ``(host, port)`` with ``SO_REUSEPORT`` and never listening: it
    holds the port for the instances (``port`` 0: a free one) and takes no connection."""
    if not hasattr(socket, "SO_REUSEPORT"):
        raise InstancesError("--instances needs SO_REUSEPORT, which this system lacks")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InstancesError(f"cannot bind {host}:{port}: {exc.strerror or exc}") from None
    return sock


def die_with_parent(parent: int) -> None:
    """In an instance: SIGTERM from the kernel when the parent dies (Linux), and exit
    at once when it died before this was asked (the instance was adopted)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        raise SystemExit(1)


def child_command(config: str) -> list[str]:
    """The command line this process was started with (the interpreter, its options and
    the ``rewardkit serve`` arguments), for the instances: plugins and rewards registered
    by the program that runs the CLI are registered in them too."""
    argv = list(getattr(sys, "orig_argv", []))
    if len(argv) < 2 or "serve" not in sys.argv[1:] or config not in sys.argv[1:]:
        raise InstancesError("--instances starts the same command line again for each "
                             "instance; run rewardkit serve as a command (not main() "
                             "called in a program)")
    return [sys.executable, *argv[1:]]


def _say(message: str) -> None:
    print(f"rewardkit serve: {message}", file=sys.stderr, flush=True)


class Supervisor:
    """The parent of ``--instances N``: starts, watches, restarts and stops them."""

    def __init__(self, command: Sequence[str], instances: int, host: str, port: int,
                 folder: Path) -> None:
        self.command = list(command)
        self.host = host
        self.port = port
        self.stopping = False
        self.instances = [_Instance(k, folder / f"instance-{k}.port")
                          for k in range(instances)]

    def _start(self, inst: _Instance) -> None:
        inst.port_file.unlink(missing_ok=True)
        args = [*self.command, "--port", str(self.port), "--port-file", str(inst.port_file),
                "--instances", "1",
                "--instance-of", f"{inst.number}/{len(self.instances)}/{os.getpid()}"]
        inst.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        inst.started = time.monotonic()

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Ask every live instance to drain (from the signal handler too)."""
        self.stopping = True
        for inst in self.instances:
            if inst.proc is not None and inst.proc.poll() is None:
                with contextlib.suppress(OSError):
                    inst.proc.send_signal(signum)

    def start_all(self) -> None:
        """Start every instance and wait until each accepts connections; raises
        :class:`InstancesError` (after stopping the others) when one exits first."""
        for inst in self.instances:
            self._start(inst)
        while not self.stopping:
            for inst in self.instances:
                assert inst.proc is not None
                code = inst.proc.poll()
                if code is not None:
                    self.stop()
                    self.wait_all()
                    raise InstancesError(f"instance {inst.number} exited ({code}) before "
                                         "it accepted connections")
            if all(inst.port_file.exists() for inst in self.instances):
                return
            time.sleep(_POLL_S)

    def watch(self) -> None:
        """Until :meth:`stop`: start again an instance that died."""
        while not self.stopping:
            for inst in self.instances:
                assert inst.proc is not None
                code = inst.proc.poll()
                if code is None or self.stopping:
                    continue
                lived = time.monotonic() - inst.started
                inst.quick_deaths = inst.quick_deaths + 1 if lived < QUICK_DEATH_S else 0
                if inst.quick_deaths >= MAX_QUICK_DEATHS:
                    _say(f"instance {inst.number} exited ({code}) {MAX_QUICK_DEATHS} times "
                         f"within {QUICK_DEATH_S:g} s of its start: stopping the service")
                    inst.exit_codes.append(code)
                    self.stop()
                    return
                inst.restarts += 1
                _say(f"instance {inst.number} (pid {inst.proc.pid}) exited ({code}) after "
                     f"{lived:.1f} s: starting it again")
                self._start(inst)
            time.sleep(_POLL_S)

    def wait_all(self) -> list[int]:
        """Wait for every instance to exit; their exit codes."""
        codes = []
        for inst in self.instances:
            if inst.proc is not None:
                codes.append(inst.proc.wait())
        return codes


def run_instances(command: Sequence[str], instances: int, host: str, port: int,
                  port_file: str | None) -> int:
    """Serve with ``instances`` processes on ``host:port`` until SIGTERM or SIGINT; the
    exit code (0: every instance drained and exited 0)."""
    reserved = reserve_port(host, port)
    bound = reserved.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="rewardkit-serve-") as tmp:
        supervisor = Supervisor(command, instances, host, bound, Path(tmp))

        def on_signal(signum: int, frame: Any) -> None:
            _say(f"{signal.Signals(signum).name}: draining {instances} instance(s)")
            supervisor.stop(signal.SIGTERM)

        previous = {sig: signal.signal(sig, on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            try:
                supervisor.start_all()
            except InstancesError as exc:
                _say(f"error: {exc}")
                return 1
            if port_file and not supervisor.stopping:
                tmp_file = Path(f"{port_file}.tmp")
                tmp_file.write_text(f"{bound}\n", encoding="utf-8")
                tmp_file.replace(port_file)
            _say(f"{instances} instances on http://{host}:{bound} (SO_REUSEPORT: the "
                 "kernel spreads connections over them), pids "
                 + " ".join(str(i.proc.pid) for i in supervisor.instances if i.proc))
            supervisor.watch()
            codes = supervisor.wait_all()
        finally:
            supervisor.stop()
            supervisor.wait_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            reserved.close()
    failed = [c for inst in supervisor.instances for c in inst.exit_codes] + \
        [c for c in codes if c != 0]
    _say(f"stopped ({instances} instances" + (f"; exit codes {codes}" if failed else "")
         + ")")
    return 0 if not failed else 1
