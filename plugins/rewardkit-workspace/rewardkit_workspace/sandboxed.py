"""Command and HTTP criteria, run in the sandbox against a copy of the workspace.

One sandbox task per row: a small Python program (:data:`PROGRAM`) receives the private
copy as a tar stream on its stdin, unpacks it in its own working directory, runs every
command (and starts every service) there as the sandbox's unprivileged uid, with no network
and the pool's limits, and reports the raw facts (exit status, captured output, HTTP status
and body) after a one-time secret it read before any workspace program ran. The verdict is
decided here, from those facts.

Why the workspace cannot write the verdict: the programs' output goes to pipes of the
reporting program, never to the sandbox's stdout; the reporting program makes itself
non-dumpable before it starts one (so ``/proc/<pid>/fd`` and ``/proc/<pid>/mem`` are closed
to them, and seccomp refuses ptrace); a report without the secret is no report. A program
that kills the reporter gets its criteria failed, not passed. Programs are looked up on a
fixed ``PATH`` (a ``python3`` planted in the workspace is not the one run), with
``PYTHONSAFEPATH``/``PYTHONNOUSERSITE`` set and ``HOME`` outside the workspace.

The sandbox gives each slot a private network namespace with only its own loopback up
(``rewardkit_sandbox``'s ``network_namespace`` layer), so the service an HTTP criterion
starts is reached on 127.0.0.1 inside the same task. Where there is no such namespace
(seccomp refuses inet sockets) or loopback stayed down, an HTTP criterion is an error
naming that, never a pass.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import tarfile
from typing import Any

from rewardkit_sandbox import SandboxLimits, Status

from rewardkit_workspace.criteria import Criterion, Outcome

#: the program the sandbox runs; argv-free, everything comes on stdin
PROGRAM = r'''
import ctypes, http.client, io, json, os, shutil, signal, socket, subprocess, sys, tarfile, time
header = json.loads(sys.stdin.buffer.readline())
archive = sys.stdin.buffer.read()
sys.stdin.close()
ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
nonce = header["nonce"]
home = os.path.abspath("home")
os.mkdir(home)
with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
    tar.extractall("ws", filter="data")
ws = os.path.abspath("ws")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
env = {"PATH": SAFE_PATH, "HOME": home, "LANG": "C.UTF-8", "PYTHONSAFEPATH": "1",
       "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": home}
CAP = header["output_bytes"]

def program(argv):
    if "/" in argv[0]:
        return argv
    found = shutil.which(argv[0], path=SAFE_PATH)
    return [found] + argv[1:] if found else None

def command(check):
    argv = program(check["run"])
    if argv is None:
        return {"error": "program not found on " + SAFE_PATH}
    try:
        done = subprocess.run(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=header["timeout_s"],
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    except OSError as error:
        return {"error": "cannot run: " + str(error)}
    return {"exit_code": done.returncode,
            "stdout": done.stdout[:CAP].decode("utf-8", "replace")}

def service(check):
    argv = program(check["start"])
    if argv is None:
        return {"error": "program not found on " + SAFE_PATH}
    proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + header["timeout_s"]
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", check["port"]), timeout=1).close()
                break
            except OSError as error:
                if error.errno == 101:
                    return {"unavailable": "the sandbox has no loopback network"}
                if time.monotonic() > deadline or proc.poll() is not None:
                    return {"error": "the service did not listen on port %d" % check["port"]}
                time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", check["port"], timeout=5)
        conn.request("GET", check["url_path"])
        reply = conn.getresponse()
        return {"status": reply.status,
                "body": reply.read(CAP).decode("utf-8", "replace")}
    except (OSError, http.client.HTTPException) as error:
        return {"error": "request failed: " + str(error)}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()

results = [command(c) if c["type"] == "command" else service(c) for c in header["checks"]]
sys.stdout.write("\n" + nonce + json.dumps(results) + "\n")
sys.stdout.flush()
'''


class SandboxUnavailable(Exception):
    """The sandbox could not run the checks at all (the row is an error, not a 0)."""


def _tar_of(root: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(folder, name)
                tar.add(path, arcname=os.path.relpath(path, root), recursive=False)
    return buffer.getvalue()


def run_checks(criteria: list[Criterion], root: str, timeout_s: float,
               output_bytes: int = 64 * 1024) -> list[Outcome]:
    """The outcome of each command/HTTP criterion, run in one sandbox task."""
    from rewardkit_code.sandboxes import shared_sandbox_pool

    nonce = secrets.token_hex(16)
    header = {"nonce": nonce, "timeout_s": timeout_s, "output_bytes": output_bytes,
              "checks": [{"type": c.type, "run": c.run, "start": c.start, "port": c.port,
                          "url_path": c.url_path} for c in criteria]}
    stdin = json.dumps(header).encode() + b"\n" + _tar_of(root)
    limits = SandboxLimits(wall_time_s=timeout_s * len(criteria) + 10.0,
                           cpu_time_s=timeout_s * len(criteria) + 10.0,
                           memory_bytes=1024 * 1024 * 1024, processes=64, open_files=256,
                           stdout_bytes=len(criteria) * 2 * output_bytes + 65536)
    try:
        result = shared_sandbox_pool(1).run(PROGRAM, stdin=stdin, limits=limits)
    except Exception as error:  # SandboxUnavailableError, a zygote that cannot start
        raise SandboxUnavailable(f"{type(error).__name__}: {error}") from None
    if result.status is Status.SANDBOX_ERROR:
        raise SandboxUnavailable(result.error or "sandbox error")
    facts: list[dict[str, Any]] | None = None
    for line in result.stdout.splitlines():
        if line.startswith(nonce):
            facts = json.loads(line[len(nonce):])
    if facts is None or len(facts) != len(criteria):
        why = f"no report from the sandbox ({result.status.value}"
        why += f", exit {result.exit_code})" if result.exit_code is not None else ")"
        return [Outcome(False, why) for _ in criteria]
    return [_judge(c, f) for c, f in zip(criteria, facts, strict=True)]


def _judge(criterion: Criterion, facts: dict[str, Any]) -> Outcome:
    if "unavailable" in facts:
        raise SandboxUnavailable(facts["unavailable"])
    if "error" in facts:
        return Outcome(False, str(facts["error"]))
    if criterion.type == "command":
        if facts["exit_code"] != criterion.exit_code:
            return Outcome(False, f"exit status {facts['exit_code']}")
        out = str(facts["stdout"])
        if criterion.stdout_contains is not None and criterion.stdout_contains not in out:
            return Outcome(False, "stdout lacks the text")
        if criterion.stdout_equals is not None and out.strip() != criterion.stdout_equals.strip():
            return Outcome(False, f"stdout is {out.strip()[:100]!r}")
        return Outcome(True)
    if facts["status"] != criterion.status:
        return Outcome(False, f"HTTP status {facts['status']}")
    if criterion.body_contains is not None and criterion.body_contains not in facts["body"]:
        return Outcome(False, "body lacks the text")
    return Outcome(True)
