"""The trusted driver of one ``repo_tests`` run, executed *inside* the sandbox.

Standard library only: :mod:`rewardkit_repo.runner` sends this module's source as the
task's program. It reads one JSON header from stdin (the prepared workspace's files, the
import path of pytest, the reporter's source, the test files), writes the workspace,
opens a pipe and starts pytest (``python -I -S``: no site, no ``.pth``, no
sitecustomize, no ``PYTHON*`` variables) with the pipe's write end as its only extra
descriptor. The reporter inside pytest writes one JSON line per event to it; pytest's
stdout and stderr go to a log file, never to this driver's stdout. The driver prints one
JSON object: the raw lines read from the pipe, pytest's exit code and the log's tail. It
judges nothing: the reward checks the lines outside the sandbox.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import subprocess
import sys

_LOG_TAIL = 4000

_BOOT = """\
import json, os, sys, types
config = json.loads(sys.argv[1])
token = os.read(config["token_fd"], 64).decode()
os.close(config["token_fd"])
sys.path[:0] = config["paths"]
import pytest
reporter = types.ModuleType("_rewardkit_repo_reporter")
exec(compile(config["reporter"], "_rewardkit_repo_reporter.py", "exec"), reporter.__dict__)
plugin = reporter.Reporter(config["fd"], token, config["wanted"], config["test_files"],
                           config["candidate_files"])
del token, config["token_fd"]
sys.exit(pytest.main(config["args"], plugins=[plugin]))
"""


def _visible(paths: list[str]) -> list[str]:
    """The import paths as this task sees them: an environment under /tmp (a checkout or
    venv there) is hidden by the sandbox's private /tmp and shown again elsewhere, read-only
    (the sandbox's import paths, on this process's ``sys.path``); pytest is then found
    where this process would import it from."""
    import importlib.util

    found = [path for path in paths if os.path.isdir(path)]
    spec = importlib.util.find_spec("pytest")
    if spec is not None and spec.origin:
        home = os.path.dirname(os.path.dirname(spec.origin))
        if home not in found:
            found.append(home)
    return found


def main() -> None:
    header = json.loads(sys.stdin.buffer.read())
    workspace = os.path.abspath("workspace")
    os.mkdir(workspace)
    for name, (mode, data) in header["files"].items():
        path = os.path.join(workspace, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(base64.b64decode(data))
    read_end, write_end = os.pipe()
    # the token reaches pytest over a pipe read once before any project code runs:
    # never in argv or the environment, where /proc shows it
    token = os.urandom(16).hex()
    token_read, token_write = os.pipe()
    os.write(token_write, token.encode())
    os.close(token_write)
    config = {
        "paths": [workspace, *_visible(header["paths"])],
        "reporter": header["reporter"],
        "fd": write_end,
        "token_fd": token_read,
        "wanted": header["wanted"],
        "test_files": [os.path.join(workspace, name) for name in header["test_files"]],
        "candidate_files": [os.path.join(workspace, name) for name in header["candidate_files"]],
        "args": ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", workspace,
                 *header["args"]],
    }
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": workspace, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    log_path = os.path.abspath("pytest.log")
    with open(log_path, "wb") as log:
        child = subprocess.Popen(
            [header["python"], "-I", "-S", "-c", _BOOT, json.dumps(config)],
            cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            pass_fds=(write_end, token_read), start_new_session=True,
        )
    os.close(write_end)
    os.close(token_read)
    chunks = []
    while True:
        if select.select([read_end], [], [], 0.05)[0]:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        elif child.poll() is not None:
            # pytest has ended: a leftover process holding the pipe is not waited for
            break
    code = child.wait()
    with contextlib.suppress(OSError):
        os.killpg(child.pid, 9)
    with open(log_path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(log_path) - _LOG_TAIL))
        tail = handle.read().decode("utf-8", "replace")
    lines = b"".join(chunks).decode("utf-8", "replace").splitlines()
    sys.stdout.write(json.dumps({"lines": lines, "exit": code, "log": tail, "token": token}))
    sys.stdout.flush()

