"""``E2BRunner``: programs run in E2B sandboxes (https://e2b.dev), over its HTTP API.

One run is one sandbox, used once then killed, so no state passes between candidates:

1. ``POST {api_url}/sandboxes`` (``X-API-Key``) with ``{"templateID", "timeout",
   "allow_internet_access"}`` (no internet unless ``internet=True``, as locally):
   ``{"sandboxID", "envdAccessToken", "domain"}``;
2. ``POST https://49999-{sandboxID}.{domain}/execute`` (the code-interpreter's Jupyter
   server; ``X-Access-Token``) with ``{"code", "language": "python"}``: a stream of JSON
   lines (``{"type": "stdout" | "stderr" | "error" | "result" | "end_of_execution",
   ...}``);
3. ``DELETE {api_url}/sandboxes/{sandboxID}``.

The code executed in step 2 is a small driver, not the candidate: it writes the program
to a file and runs it as a child process with the stdin, a wall limit and an
address-space limit, then prints one line (behind a per-run marker) with the exit code,
the signal and the capped outputs.  A kernel cell has no exit code and no stdin; a child
process has both, and its output cannot reach the driver's own line.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from typing import Any

from rewardkit_sandbox.budget import Ticket
from rewardkit_sandbox.remote.base import RemoteOptions, RemoteRunner
from rewardkit_sandbox.remote.http import HttpClient, RemoteError, RequestLog
from rewardkit_sandbox.result import SandboxResult

#: the command and file name that run each language inside the sandbox template
COMMANDS: dict[str, tuple[list[str], str]] = {
    "python": (["python3"], "main.py"),
    "javascript": (["node"], "main.js"),
    "bash": (["bash"], "main.sh"),
}
JUPYTER_PORT = 49999

_DRIVER = """\
import json, os, resource, subprocess, tempfile
folder = tempfile.mkdtemp()
path = os.path.join(folder, {name!r})
with open(path, "w") as handle:
    handle.write({source!r})
def limits():
    if {memory_bytes!r}:
        resource.setrlimit(resource.RLIMIT_AS, ({memory_bytes!r}, {memory_bytes!r}))
outcome = {{"timed_out": False}}
try:
    done = subprocess.run({command!r} + [path], input={stdin!r}, capture_output=True,
                          timeout={timeout!r}, cwd=folder, preexec_fn=limits,
                          encoding="utf-8", errors="replace")
    outcome.update(code=done.returncode, stdout=done.stdout, stderr=done.stderr)
except subprocess.TimeoutExpired as late:
    outcome.update(code=None, timed_out=True, stdout=str(late.stdout or ""),
                   stderr=str(late.stderr or ""))
outcome["stdout"] = outcome["stdout"][:{cap!r}]
outcome["stderr"] = outcome["stderr"][:{cap!r}]
print({marker!r} + json.dumps(outcome), flush=True)
"""


class E2BRunner(RemoteRunner):
    """Programs run in a fresh E2B sandbox each (``template``: one with python3 and, for
    JavaScript, node; the code-interpreter template has both)."""

    provider = "e2b"

    def __init__(
        self,
        api_key: str,
        options: RemoteOptions | None = None,
        *,
        api_url: str = "https://api.e2b.app",
        template: str = "code-interpreter-v1",
        sandbox_url: str = "https://{port}-{sandbox_id}.{domain}",
        domain: str = "e2b.app",
        internet: bool = False,
    ) -> None:
        options = options or RemoteOptions()
        if options.language.lower() not in COMMANDS:
            raise ValueError(
                f"the e2b runner runs {', '.join(COMMANDS)}; not {options.language!r}"
            )
        super().__init__(
            dataclasses.replace(options, language=options.language.lower()),
            name="E2B",
            headers={"X-API-Key": api_key},
        )
        self.api_url = api_url.rstrip("/")
        self.template = template
        self.sandbox_url = sandbox_url
        self.domain = domain
        self.internet = internet

    def _run_once(
        self, code: str, stdin: str | None, ticket: Ticket | None, log: RequestLog
    ) -> SandboxResult:
        started = time.monotonic()
        sandbox = {
            "templateID": self.template,
            "timeout": int(self.request_timeout_s) + 30,
            "allow_internet_access": self.internet,
        }
        created = self.post(f"{self.api_url}/sandboxes", sandbox, ticket, log)
        sandbox_id = created.get("sandboxID") if isinstance(created, dict) else None
        if not isinstance(sandbox_id, str) or not sandbox_id.replace("-", "").isalnum():
            return self.sandbox_error(f"E2B made no sandbox: {str(created)[:300]}", started)
        try:
            if ticket is not None:
                ticket.take_token()
            return self._execute(created, sandbox_id, code, stdin, started, log)
        finally:
            self._kill(sandbox_id, ticket, log)

    def _execute(
        self,
        created: dict[str, Any],
        sandbox_id: str,
        code: str,
        stdin: str | None,
        started: float,
        log: RequestLog,
    ) -> SandboxResult:
        command, name = COMMANDS[self.language]
        marker = f"rewardkit-e2b-{secrets.token_hex(8)}:"
        memory = self.memory_limit_mb * 1024 * 1024 if self.memory_limit_mb else 0
        if self.language == "javascript":
            memory = 0  # V8 reserves far more address space than it uses: no RLIMIT_AS
        driver = _DRIVER.format(
            name=name,
            source=code,
            command=command,
            stdin=stdin or "",
            timeout=self.run_timeout_s,
            memory_bytes=memory,
            cap=self.output_cap_bytes + 1,
            marker=marker,
        )
        host = self.sandbox_url.format(
            port=JUPYTER_PORT, sandbox_id=sandbox_id, domain=created.get("domain") or self.domain
        )
        token = created.get("envdAccessToken")
        client = self.http
        if isinstance(token, str) and token:
            client = HttpClient(
                "E2B",
                {**self.http.headers, "X-Access-Token": token},
                max_retry_wait_s=self.http.max_retry_wait_s,
            )
        answer = client.request(
            "POST",
            f"{host.rstrip('/')}/execute",
            body={"code": driver, "language": "python"},
            timeout_s=self.request_timeout_s,
            log=log,
        )
        return self._read(answer.body, marker, started)

    def _read(self, stream: bytes, marker: str, started: float) -> SandboxResult:
        outcome: dict[str, Any] | None = None
        ended = False
        for line in stream.decode(errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):
                return self.sandbox_error(f"E2B sent invalid JSON: {line[:200]!r}", started)
            if not isinstance(event, dict):
                return self.sandbox_error(f"unexpected E2B answer line: {line[:200]!r}", started)
            kind = event.get("type")
            if kind == "error":
                why = f"{event.get('name')}: {event.get('value')}"
                return self.sandbox_error(f"E2B driver failed: {why}", started)
            if kind == "end_of_execution":
                ended = True
            if kind == "stdout":
                for text in str(event.get("text", "")).splitlines():
                    if text.startswith(marker):
                        outcome = json.loads(text[len(marker) :])
        if outcome is None or not ended:
            missing = "its end" if outcome is not None else "the run's outcome"
            return self.sandbox_error(f"E2B stream without {missing} (cut short?)", started)
        code = outcome.get("code")
        return self.verdict(
            started,
            exit_code=code if isinstance(code, int) and code >= 0 else None,
            stdout=outcome.get("stdout"),
            stderr=outcome.get("stderr"),
            signal=-code if isinstance(code, int) and code < 0 else None,
            timed_out=outcome.get("timed_out") is True,
        )

    def _kill(self, sandbox_id: str, ticket: Ticket | None, log: RequestLog) -> None:
        """End the sandbox (it would otherwise live, and bill, until its timeout)."""
        try:
            if ticket is not None:
                ticket.take_token()
            self.http.request(
                "DELETE",
                f"{self.api_url}/sandboxes/{sandbox_id}",
                timeout_s=min(10.0, self.request_timeout_s),
                log=log,
            )
        except RemoteError:
            pass  # its timeout ends it; the run's verdict stands
