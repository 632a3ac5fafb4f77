"""``Judge0Runner``: programs run by a Judge0 server (https://github.com/judge0/judge0).

One run is ``POST {base_url}/submissions?base64_encoded=true&wait=true&fields=...`` with
``{"source_code", "stdin"}`` (base64), ``language_id``, ``cpu_time_limit`` and
``wall_time_limit`` (seconds) and ``memory_limit`` (KB).  An instance that does not
wait answers only a ``token``: the runner then polls ``GET /submissions/{token}`` until
the status leaves "In Queue" (1) / "Processing" (2) or the request deadline passes.
Status ids: 3 Accepted, 5 Time Limit Exceeded, 6 Compilation Error, 7-12 Runtime Error
(SIGSEGV, SIGXFSZ, SIGFPE, SIGABRT, NZEC, Other), 13 Internal Error, 14 Exec Format
Error; 13, 14 and any id outside that list are ``sandbox_error``.  ``fields`` asks for
``exit_code`` and ``exit_signal`` too (not in Judge0's default set).  Without
``language_id`` the id is looked up once in ``GET {base_url}/languages`` (the newest
version of the language's usual compiler).
"""

from __future__ import annotations

import base64
import re
import threading
import time
from typing import Any

from rewardkit_sandbox.budget import Ticket
from rewardkit_sandbox.remote.base import RemoteOptions, RemoteRunner
from rewardkit_sandbox.remote.http import RemoteError, RequestLog
from rewardkit_sandbox.result import SandboxResult

#: how a language's entry in /languages begins ("Python (3.8.1)", "C++ (GCC 9.2.0)")
_LANGUAGE_NAMES = {
    "python": "Python (3",
    "c": "C (GCC",
    "c++": "C++ (GCC",
    "cpp": "C++ (GCC",
    "java": "Java (",
    "javascript": "JavaScript (Node.js",
    "typescript": "TypeScript (",
    "go": "Go (",
    "rust": "Rust (",
}
_SIGNAL_OF_STATUS = {7: 11, 9: 8, 10: 6}  # SIGSEGV, SIGFPE, SIGABRT
#: the status ids of a run that finished (13, 14 are Judge0's own failures): any other
#: id says nothing we can read as the program's verdict, so it is ``sandbox_error``
_PROGRAM_STATUSES = frozenset(range(3, 13))
_POLL_S = (0.05, 0.1, 0.2, 0.5, 1.0)
#: the answer's fields asked for: Judge0's default set lacks exit_code and exit_signal
_FIELDS = "token,status,stdout,stderr,compile_output,message,exit_code,exit_signal,time,memory"

_ids_lock = threading.Lock()
_language_ids: dict[tuple[str, str], int] = {}


class Judge0Runner(RemoteRunner):
    """Programs run by Judge0 (CE or extra-CE); the language by name or ``language_id``."""

    provider = "judge0"

    def __init__(
        self,
        base_url: str,
        options: RemoteOptions | None = None,
        *,
        language_id: int | None = None,
    ) -> None:
        super().__init__(options or RemoteOptions(), name="Judge0")
        self.base_url = base_url.rstrip("/")
        self.language_id = language_id

    def resolve_language_id(self) -> int:
        """``language_id``, or the newest matching entry of the server's /languages."""
        if self.language_id is not None:
            return self.language_id
        key = (self.base_url, self.language.lower())
        with _ids_lock:
            known = _language_ids.get(key)
        if known is not None:
            return known
        prefix = _LANGUAGE_NAMES.get(key[1], key[1])
        listed = self.http.request("GET", f"{self.base_url}/languages", timeout_s=30.0).json()
        if not isinstance(listed, list):
            raise RemoteError(f"Judge0 /languages is not a list: {str(listed)[:200]}")
        matches = [
            entry
            for entry in listed
            if isinstance(entry, dict)
            and isinstance(entry.get("id"), int)
            and str(entry.get("name", "")).lower().startswith(prefix.lower())
        ]
        if not matches:
            raise RemoteError(
                f"Judge0 at {self.base_url} lists no language like {prefix!r}; "
                "give language_id (see GET /languages)"
            )
        best = max(matches, key=lambda entry: _version_key(str(entry["name"])))
        with _ids_lock:
            _language_ids[key] = int(best["id"])
        return int(best["id"])

    def _run_once(
        self, code: str, stdin: str | None, ticket: Ticket | None, log: RequestLog
    ) -> SandboxResult:
        started = time.monotonic()
        deadline = started + self.request_timeout_s
        payload: dict[str, Any] = {
            "source_code": _encode(code),
            "language_id": self.resolve_language_id(),
            "stdin": _encode(stdin or ""),
            "cpu_time_limit": self.run_timeout_s,
            "wall_time_limit": self.run_timeout_s,
        }
        if self.memory_limit_mb is not None:
            payload["memory_limit"] = self.memory_limit_mb * 1024
        submit = f"{self.base_url}/submissions?base64_encoded=true&wait=true&fields={_FIELDS}"
        body = self.post(submit, payload, ticket, log)
        for pause in _polls():
            if not isinstance(body, dict):
                return self.sandbox_error(f"unexpected Judge0 answer: {str(body)[:300]}", started)
            status = body.get("status")
            if isinstance(status, dict) and status.get("id") not in (1, 2):
                return self._read(body, started)
            token = body.get("token")
            if not isinstance(token, str) or not re.fullmatch(r"[A-Za-z0-9-]{1,100}", token):
                return self.sandbox_error(f"Judge0 answer without a status: {body}", started)
            left = deadline - time.monotonic()
            if left <= pause:
                return self.sandbox_error(
                    f"Judge0 did not finish submission {token} within {self.request_timeout_s:g} s",
                    started,
                )
            time.sleep(pause)
            if ticket is not None:
                ticket.take_token()
            body = self.http.request(
                "GET",
                f"{self.base_url}/submissions/{token}?base64_encoded=true&fields={_FIELDS}",
                timeout_s=max(0.1, deadline - time.monotonic()),
                log=log,
            ).json()
        raise AssertionError("unreachable")  # _polls() never ends

    def _read(self, body: dict[str, Any], started: float) -> SandboxResult:
        status = body["status"]
        status_id = status.get("id")
        description = status.get("description") or f"status {status_id}"
        meta: dict[str, object] = {"judge0_status": description, "memory_kb": body.get("memory")}
        if status_id in (13, 14):
            why = _decode(body.get("message")) or description
            return self.sandbox_error(f"Judge0 {description}: {why}", started)
        if type(status_id) is not int or status_id not in _PROGRAM_STATUSES:
            return self.sandbox_error(
                f"Judge0 answered status id {status_id!r} ({str(description)[:100]}), "
                f"not one it documents for a finished run ({min(_PROGRAM_STATUSES)}-"
                f"{max(_PROGRAM_STATUSES)})",
                started,
            )
        if status_id == 6:
            return self.compile_failure(started, _decode(body.get("compile_output")))
        exit_code = body.get("exit_code")
        signal_number = body.get("exit_signal")
        for name, value in (("exit_code", exit_code), ("exit_signal", signal_number)):
            if value is not None and type(value) is not int:
                return self.sandbox_error(
                    f"Judge0 answered {name} {str(value)[:50]!r}, not a number", started
                )
        if not isinstance(signal_number, int):
            signal_number = _SIGNAL_OF_STATUS.get(status_id)
        if status_id in (3, 4):
            exit_code = 0 if not isinstance(exit_code, int) else exit_code
        elif not isinstance(exit_code, int):
            exit_code = None if signal_number else 1
        try:
            time_s = float(body.get("time") or 0.0)
        except (TypeError, ValueError):
            time_s = 0.0
        return self.verdict(
            started,
            exit_code=exit_code,
            stdout=_decode(body.get("stdout")),
            stderr=_decode(body.get("stderr")),
            signal=signal_number if status_id in (7, 9, 10, 12) else None,
            timed_out=status_id == 5,
            output_limited=status_id == 8,
            cpu_time_s=time_s,
            metadata=meta,
        )


def _polls() -> Any:
    yield from _POLL_S
    while True:
        yield _POLL_S[-1]


def _encode(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _decode(value: Any) -> str:
    """A base64 field (``None`` when empty); ``ValueError`` when it is not base64."""
    if value is None:
        return ""
    return base64.b64decode(str(value), validate=False).decode(errors="replace")


def _version_key(name: str) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", name)
    return tuple(int(n) for n in numbers) or (0,)
