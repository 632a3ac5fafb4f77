"""The trusted driver of one ``repo_tests`` Go run, executed *inside* the sandbox.

Standard library only: :mod:`rewardkit_repo.go_runner` sends this module's source as the
task's program. It reads one JSON header from stdin (the prepared workspace's files, the
harness files written after the patch, the Go toolchain, the wanted tests), makes itself
non-dumpable, writes the workspace, builds one test binary per package with ``go test -c``
(private GOCACHE/GOPATH, no proxy, no cgo, no vet), then runs each wanted test in a
process of its own through the harness's wrapper test. The binary is made execute-only
before it runs, so the kernel marks that process non-dumpable: its ``/proc/self`` (memory,
descriptors, executable) is root's, closed to the code under test. The wrapper reads a
nonce from descriptor 3 (a socket: ``/proc/self/fd/3`` cannot be opened) only after the
test function has ended, and writes its record back over the same socket. The driver
prints one JSON object: per test, the raw bytes read from the socket, the nonce sent and
the exit code; plus the build log's tail. It judges nothing: the reward checks outside.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Any

_LOG_TAIL = 3000
_PR_SET_DUMPABLE = 4


def _nondumpable() -> None:
    """Close this driver's /proc/PID (memory with the nonces) to the code under test,
    which runs as the same uid."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _write(root: str, files: dict[str, list[Any]]) -> None:
    for name, (mode, data) in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a harness file replaces whatever had its name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, int(mode))
        with os.fdopen(fd, "wb") as handle:
            handle.write(base64.b64decode(str(data)))


def _run_one(image: bytes, index: int, cwd: str, env: dict[str, str], wrapper: str,
             nonce: str, deadline: float) -> dict[str, object]:
    # a fresh copy of the binary as built, per test: an earlier test's process (killed
    # with its group before this one starts) may have rewritten the last copy
    binary = os.path.abspath(f"run{index}-{os.urandom(8).hex()}.test")
    fd = os.open(binary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
    with os.fdopen(fd, "wb") as handle:
        handle.write(image)
    os.chmod(binary, 0o111)  # execute-only: the kernel makes the process non-dumpable
    ours, theirs = socket.socketpair()
    # the kernel stamps what arrives with the sender's pid: a record written by a child
    # the code under test started (it would inherit the socket) is told apart
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    env = {**env, "REWARDKIT_GO_FD": str(theirs.fileno())}
    ours.sendall(nonce.encode() + b"\n")
    with open(os.devnull, "wb") as devnull:
        child = subprocess.Popen(
            [binary, "-test.run", f"^{wrapper}$", "-test.count=1", "-test.v=false"],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=devnull, stderr=devnull,
            pass_fds=(theirs.fileno(),), start_new_session=True,
        )
    theirs.close()
    chunks: list[bytes] = []
    senders: set[int] = set()
    timed_out = False
    while True:
        if time.monotonic() > deadline:
            timed_out = True
            break
        if select.select([ours], [], [], 0.05)[0]:
            try:
                chunk, ancillary, _, _ = ours.recvmsg(65536, socket.CMSG_SPACE(12))
            except OSError:  # reset: the process ended with the nonce unread
                chunk, ancillary = b"", []
            if chunk:
                stamped = [struct.unpack("iII", data[:12])[0] for level, kind, data in ancillary
                           if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS]
                senders.update(stamped or [-1])
            if not chunk:
                break
            chunks.append(chunk)
            if sum(map(len, chunks)) > 1 << 20:
                break
        elif child.poll() is not None:
            break
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)
    code = child.wait()
    ours.close()
    return {"raw": b"".join(chunks).decode("utf-8", "replace"), "exit": code,
            "timed_out": timed_out, "pid": child.pid, "senders": sorted(senders)}


def main() -> None:
    _nondumpable()
    header = json.loads(sys.stdin.buffer.read())
    deadline = time.monotonic() + float(header["budget_s"])
    workspace = os.path.abspath("workspace")
    os.mkdir(workspace)
    _write(workspace, header["files"])
    _write(workspace, header["harness"])
    home = os.path.abspath("gohome")
    for sub in ("cache", "path", "tmp"):
        os.makedirs(os.path.join(home, sub))
    # the empty cache starts as a copy of the seed (written before any code under test
    # runs; the copy is this run's, gone with its work directory)
    seed = header.get("gocache") or {}
    _write(os.path.join(home, "cache"), {name: [0o644, data] for name, data in seed.items()})
    env = {"PATH": f"{header['goroot']}/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home,
           "GOROOT": header["goroot"], "GOCACHE": f"{home}/cache", "GOPATH": f"{home}/path",
           "GOTMPDIR": f"{home}/tmp", "TMPDIR": f"{home}/tmp", "GOENV": "off",
           "GOFLAGS": "-mod=readonly", "GOPROXY": "off", "GONOSUMDB": "*", "GOSUMDB": "off",
           "GO111MODULE": "on", "GOWORK": "off", "CGO_ENABLED": "0", "GOTOOLCHAIN": "local",
           "GOMAXPROCS": "2", **header.get("build_env", {})}
    log: list[str] = []
    binaries: dict[str, bytes | None] = {}
    for index, package in enumerate(header["packages"]):
        binary = os.path.abspath(f"t{index}.test")
        try:
            build = subprocess.run(
                [f"{header['goroot']}/bin/go", "test", "-c", "-vet=off", "-o", binary,
                 "./" + package if package else "."],
                cwd=workspace, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                timeout=max(1.0, deadline - time.monotonic()), check=False)
        except subprocess.TimeoutExpired:
            sys.stdout.write(json.dumps({"results": {}, "log": "\n".join(log)[-_LOG_TAIL:],
                                         "timed_out": True}))
            sys.stdout.flush()
            return
        log.append((build.stdout + build.stderr).decode("utf-8", "replace"))
        if build.returncode == 0 and os.path.isfile(binary):
            with open(binary, "rb") as handle:
                binaries[package] = handle.read()
            os.unlink(binary)
        else:
            binaries[package] = None
    cache_files = sum(len(names) for _, _, names in os.walk(os.path.join(home, "cache")))
    run_env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home,
               "TMPDIR": f"{home}/tmp", "GOMAXPROCS": "2"}
    results: dict[str, object] = {}
    for index, test in enumerate(header["tests"]):
        image = binaries.get(test["package"])
        if image is None:
            results[test["id"]] = {"built": False}
            continue
        cwd = os.path.join(workspace, test["package"])
        outcome = _run_one(image, index, cwd, run_env, test["wrapper"], test["nonce"], deadline)
        results[test["id"]] = {"built": True, **outcome}
        if outcome["timed_out"]:
            break
    tail = "\n".join(log)[-_LOG_TAIL:]
    cache = {"seeded_files": len(seed), "files_after_builds": cache_files}
    sys.stdout.write(json.dumps({"results": results, "log": tail, "gocache": cache}))
    sys.stdout.flush()
