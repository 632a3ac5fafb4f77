"""``PistonRunner``: programs run by a Piston server (https://github.com/engineer-man/piston).

One run is one ``POST {base_url}/execute`` (``base_url`` is the API root, e.g.
``http://host:2000/api/v2``) with ``{"language", "version", "files": [{"name",
"content"}], "stdin", "run_timeout", "compile_timeout"}`` (milliseconds) and, when
set, ``run_memory_limit`` (bytes).  The answer's ``run`` stage (``stdout``, ``stderr``,
``code``, ``signal``; newer servers add ``status``: ``TO`` timeout, ``SG`` signal,
``OL``/``EL`` output limit, ``RE`` runtime error, ``XX`` internal error, and ``memory``
in bytes: ``SG`` at the memory limit is the memory verdict) becomes the verdict; a
failed ``compile`` stage is a compile failure.  ``GET {base_url}/runtimes`` lists what
the server can run (``runtimes()``).
"""

from __future__ import annotations

import signal as signals
import time
from typing import Any

from rewardkit_sandbox.budget import Ticket
from rewardkit_sandbox.remote.base import RemoteOptions, RemoteRunner
from rewardkit_sandbox.remote.http import RemoteError, RequestLog
from rewardkit_sandbox.result import SandboxResult

#: the main file's name by language: some runtimes need the extension (or a class name)
_FILE_NAMES = {
    "python": "main.py",
    "c": "main.c",
    "c++": "main.cpp",
    "cpp": "main.cpp",
    "java": "Main.java",
    "javascript": "main.js",
    "typescript": "main.ts",
    "go": "main.go",
    "rust": "main.rs",
}


class PistonRunner(RemoteRunner):
    """Programs run by Piston; every language its server has installed (``runtimes()``).

    ``version`` is a semver selector (``"*"``: the newest installed).
    """

    provider = "piston"

    def __init__(
        self,
        base_url: str,
        options: RemoteOptions | None = None,
        *,
        version: str = "*",
        compile_timeout_s: float = 10.0,
    ) -> None:
        super().__init__(options or RemoteOptions(), name="Piston", setup_s=compile_timeout_s)
        self.base_url = base_url.rstrip("/")
        self.version = version
        self.compile_timeout_s = compile_timeout_s

    def runtimes(self) -> list[dict[str, Any]]:
        """What the server can run: ``[{"language", "version", "aliases"}, ...]``."""
        answer = self.http.request("GET", f"{self.base_url}/runtimes", timeout_s=30.0).json()
        if not isinstance(answer, list):
            raise RemoteError(f"Piston /runtimes is not a list: {str(answer)[:200]}")
        return [entry for entry in answer if isinstance(entry, dict)]

    def _run_once(
        self, code: str, stdin: str | None, ticket: Ticket | None, log: RequestLog
    ) -> SandboxResult:
        payload: dict[str, Any] = {
            "language": self.language,
            "version": self.version,
            "files": [{"name": _FILE_NAMES.get(self.language.lower(), "main"), "content": code}],
            "stdin": stdin or "",
            "run_timeout": int(self.run_timeout_s * 1000),
            "compile_timeout": int(self.compile_timeout_s * 1000),
        }
        if self.memory_limit_mb is not None:
            payload["run_memory_limit"] = self.memory_limit_mb * 1024 * 1024
        started = time.monotonic()
        body = self.post(f"{self.base_url}/execute", payload, ticket, log)
        if not isinstance(body, dict):
            return self.sandbox_error(f"unexpected Piston answer: {str(body)[:300]}", started)
        compiled = body.get("compile")
        if isinstance(compiled, dict) and (compiled.get("code") or compiled.get("signal")):
            why = compiled.get("stderr") or compiled.get("output") or ""
            if compiled.get("status") == "TO":
                why = f"{why}\ncompile_timeout of {self.compile_timeout_s:g}s exceeded"
            return self.compile_failure(started, why, _int(compiled.get("code")))
        run = body.get("run")
        if not isinstance(run, dict):
            message = body.get("message") or str(body)[:300]
            return self.sandbox_error(f"Piston answer without a run stage: {message}", started)
        status = run.get("status")
        if status == "XX":
            return self.sandbox_error(f"Piston internal error: {run.get('message')}", started)
        signal_number = _signal_number(run.get("signal"))
        cpu_ms = run.get("cpu_time")
        used = run.get("memory")  # bytes, from the cgroup; its limit kills with SIGKILL
        limit = self.memory_limit_mb * 1024 * 1024 if self.memory_limit_mb else None
        out_of_memory = (
            status == "SG"
            and limit is not None
            and isinstance(used, (int, float))
            and used >= 0.95 * limit
        )
        return self.verdict(
            started,
            exit_code=_int(run.get("code")),
            stdout=run.get("stdout"),
            stderr=run.get("stderr"),
            signal=signal_number,
            timed_out=status == "TO",
            out_of_memory=out_of_memory,
            output_limited=status in ("OL", "EL"),
            cpu_time_s=cpu_ms / 1000 if isinstance(cpu_ms, (int, float)) else 0.0,
            metadata={
                "language": body.get("language"),
                "version": body.get("version"),
                "run_status": status,
            },
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _signal_number(name: Any) -> int | None:
    """Piston names the signal (``"SIGKILL"``); a number also reads."""
    if isinstance(name, int) and not isinstance(name, bool):
        return name
    if isinstance(name, str) and name:
        try:
            return int(signals.Signals[name.upper()])
        except KeyError:
            return -1
    return None
