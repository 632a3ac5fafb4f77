"""Local stand-ins for the remote runners' services, speaking each documented protocol.

Each server runs on 127.0.0.1 in a thread and really runs the Python programs it is sent
(``python3`` in a subprocess, with the stdin and the time limit asked for), answering in
the provider's shapes: Piston ``/api/v2/execute`` and ``/runtimes``; Judge0
``/submissions`` (base64, ``wait=true`` or a token to poll) and ``/languages``; E2B
``/sandboxes`` (create, delete) and the code-interpreter ``/execute`` stream;
SandboxFusion ``/run_code``.  Markers in the program make it misbehave the way real
services do under load:

- ``RATE_LIMITED_ONCE`` / ``RATE_LIMITED_DATE``: one 429 with ``Retry-After: 1`` (in
  seconds / as an HTTP date), then the answer;
- ``RATE_LIMITED_LONG``: 429 with ``Retry-After: 3600``, always;
- ``SLOW_LORIS``: a 200 whose bytes trickle out one every 0.2 s, for a minute;
- ``HANG``: nothing for a minute;  ``PARTIAL``: a body cut short of its Content-Length;
- ``GARBAGE``: a 200 HTML page;  ``DEEP``: JSON nested 100,000 deep;  ``SHAPE``: JSON
  of the wrong shape;  ``HTTP500``.
"""

from __future__ import annotations

import base64
import email.utils
import json
import signal as signal_module
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

E2B_KEY = "e2b_test_key"


def run_python(code: str, stdin: str, timeout_s: float) -> dict[str, Any]:
    """Run ``code`` as a program: exit code (negative: signal), outputs, timed out."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        code_, out, err, late = done.returncode, done.stdout, done.stderr, False
    except subprocess.TimeoutExpired as error:
        code_, out, err, late = -9, str(error.stdout or ""), str(error.stderr or ""), True
    return {
        "code": code_,
        "stdout": out,
        "stderr": err,
        "timed_out": late,
        "seconds": time.monotonic() - started,
    }


class FakeService(BaseHTTPRequestHandler):
    """What every stand-in shares: the log of requests and the misbehaviours."""

    requests: ClassVar[list[dict[str, Any]]]
    seen: ClassVar[set[str]]

    def log_message(self, *args: object) -> None:
        pass

    def record(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.requests.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        return body

    def reply(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else b""
        if body is not None and not isinstance(body, bytes):
            data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def misbehaved(self, code: str) -> bool:
        """Answer as a service under load would, when ``code`` asks for it."""
        first = code not in self.seen
        self.seen.add(code)
        if "RATE_LIMITED_ONCE" in code and first:
            self.reply(429, {"message": "Too Many Requests"}, {"Retry-After": "1"})
        elif "RATE_LIMITED_DATE" in code and first:
            when = email.utils.formatdate(time.time() + 1.5, usegmt=True)
            self.reply(429, {"message": "Too Many Requests"}, {"Retry-After": when})
        elif "RATE_LIMITED_LONG" in code:
            self.reply(429, {"message": "Too Many Requests"}, {"Retry-After": "3600"})
        elif "SLOW_LORIS" in code:
            for byte in b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n" * 20:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.2)
        elif "HANG" in code:
            time.sleep(60)
        elif "PARTIAL" in code:
            self.send_response(200)
            self.send_header("Content-Length", "500")
            self.end_headers()
            self.wfile.write(b'{"run": {"stdout": "')
        elif "GARBAGE" in code:
            self.reply(200, b"<html><body>502 Bad Gateway</body></html>")
        elif "DEEP" in code:
            self.reply(200, b"[" * 100_000 + b"]" * 100_000)
        elif "SHAPE" in code:
            self.reply(200, ["not", "an", "answer"])
        elif "HTTP500" in code:
            self.reply(500, {"message": "internal"})
        else:
            return False
        return True


class FakePiston(FakeService):
    """Piston v2: ``POST /api/v2/execute``, ``GET /api/v2/runtimes`` (python only)."""

    RUNTIMES: ClassVar[list[dict[str, Any]]] = [
        {"language": "python", "version": "3.12.0", "aliases": ["py", "py3", "python3"]}
    ]

    def do_GET(self) -> None:
        self.record()
        if self.path == "/api/v2/runtimes":
            self.reply(200, self.RUNTIMES)
        else:
            self.reply(404, {"message": "Not Found"})

    in_flight: ClassVar[list[int]]  # [now, most]: executions being answered at once
    flight_lock: ClassVar[threading.Lock]

    def do_POST(self) -> None:
        with self.flight_lock:
            self.in_flight[0] += 1
            self.in_flight[1] = max(self.in_flight)
        try:
            self.execute()
        finally:
            with self.flight_lock:
                self.in_flight[0] -= 1

    def execute(self) -> None:
        body = self.record()
        if self.path != "/api/v2/execute":
            self.reply(404, {"message": "Not Found"})
            return
        code = body["files"][0]["content"]
        if self.misbehaved(code):
            return
        if body["language"] not in ("python", "py", "python3"):
            self.reply(400, {"message": f"{body['language']}-{body['version']} runtime is unknown"})
            return
        answer: dict[str, Any] = {"language": "python", "version": "3.12.0"}
        if "COMPILE_ERROR" in code:
            answer["compile"] = {
                "stdout": "",
                "stderr": "main.c:1: error: expected ';'",
                "output": "main.c:1: error: expected ';'",
                "code": 1,
                "signal": None,
                "status": "RE",
            }
            self.reply(200, answer)
            return
        ran = run_python(code, body.get("stdin", ""), body.get("run_timeout", 3000) / 1000)
        signal = "SIGKILL" if ran["timed_out"] else None
        status = "TO" if ran["timed_out"] else ("RE" if ran["code"] else None)
        memory = 9_000_000
        if not ran["timed_out"] and ran["code"] < 0:  # isolate: status SG, the signal's name
            signal, status = signal_module.Signals(-ran["code"]).name, "SG"
            ran["code"] = None
        if "OVER_MEMORY" in code and body.get("run_memory_limit"):  # the cgroup kills it
            signal, status, memory = "SIGKILL", "SG", body["run_memory_limit"]
            ran["code"] = None
        answer["run"] = {
            "stdout": ran["stdout"],
            "stderr": ran["stderr"],
            "output": ran["stdout"] + ran["stderr"],
            "code": None if ran["timed_out"] else ran["code"],
            "signal": signal,
            "status": status,
            "message": "Timeout" if ran["timed_out"] else None,
            "cpu_time": int(ran["seconds"] * 1000),
            "wall_time": int(ran["seconds"] * 1000),
            "memory": memory,
        }
        self.reply(200, answer)


class FakeJudge0(FakeService):
    """Judge0 CE: ``/submissions`` (base64, wait or token), ``/languages``."""

    LANGUAGES: ClassVar[list[dict[str, Any]]] = [
        {"id": 54, "name": "C++ (GCC 9.2.0)"},
        {"id": 71, "name": "Python (3.8.1)"},
        {"id": 92, "name": "Python (3.11.2)"},
    ]
    DEFAULT_FIELDS: ClassVar[tuple[str, ...]] = (
        "stdout",
        "time",
        "memory",
        "stderr",
        "token",
        "compile_output",
        "message",
        "status",
    )
    pending: ClassVar[dict[str, list[dict[str, Any]]]]

    def fields(self, answer: dict[str, Any]) -> dict[str, Any]:
        """Only the fields asked for (``?fields=``; Judge0's default set without it)."""
        asked = parse_qs(urlsplit(self.path).query).get("fields")
        names = asked[0].split(",") if asked else self.DEFAULT_FIELDS
        return answer if names == ["*"] else {k: v for k, v in answer.items() if k in names}

    def do_GET(self) -> None:
        self.record()
        parts = urlsplit(self.path)
        if parts.path == "/languages":
            self.reply(200, self.LANGUAGES)
        elif parts.path.startswith("/submissions/"):
            answers = self.pending.get(parts.path.rsplit("/", 1)[1])
            if not answers:
                self.reply(404, {"error": "submission not found"})
            else:
                self.reply(200, self.fields(answers.pop(0) if len(answers) > 1 else answers[0]))
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = self.record()
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if parts.path != "/submissions" or query.get("base64_encoded") != ["true"]:
            self.reply(404, {"error": "not found"})
            return
        code = base64.b64decode(body["source_code"]).decode()
        if self.misbehaved(code):
            return
        if body["language_id"] not in (71, 92):
            self.reply(422, {"language_id": ["language with id 0 doesn't exist"]})
            return
        answer = self.judged(code, base64.b64decode(body.get("stdin") or "").decode(), body)
        if "NO_WAIT" in code or query.get("wait") != ["true"]:
            token = str(uuid.uuid4())
            queued = {"token": token, "status": {"id": 2, "description": "Processing"}}
            self.pending[token] = [queued, {**answer, "token": token}]
            self.reply(201, {"token": token})
        else:
            self.reply(201, self.fields({**answer, "token": str(uuid.uuid4())}))

    @staticmethod
    def judged(code: str, stdin: str, body: dict[str, Any]) -> dict[str, Any]:
        def b64(text: str) -> str | None:  # as Judge0 (Ruby's encode64) does: lines of 60
            return base64.encodebytes(text.encode()).decode() if text else None

        if "COMPILE_ERROR" in code:
            return {
                "stdout": None,
                "stderr": None,
                "exit_code": None,
                "exit_signal": None,
                "compile_output": b64("main.cpp:1:1: error: expected ';'"),
                "message": b64("Exited with error status 1"),
                "time": None,
                "memory": None,
                "status": {"id": 6, "description": "Compilation Error"},
            }
        ran = run_python(code, stdin, float(body.get("wall_time_limit") or 5))
        if ran["timed_out"]:
            status = {"id": 5, "description": "Time Limit Exceeded"}
        elif ran["code"] == 0:
            status = {"id": 3, "description": "Accepted"}
        elif ran["code"] == -11:
            status = {"id": 7, "description": "Runtime Error (SIGSEGV)"}
        else:
            status = {"id": 11, "description": "Runtime Error (NZEC)"}
        return {
            "stdout": b64(ran["stdout"]),
            "stderr": b64(ran["stderr"]),
            "compile_output": None,
            "message": None,
            "exit_code": ran["code"] if ran["code"] >= 0 else None,
            "exit_signal": -ran["code"] if ran["code"] < 0 else None,
            "time": f"{ran['seconds']:.3f}",
            "memory": 3200,
            "status": status,
        }


class FakeE2B(FakeService):
    """E2B: ``POST /sandboxes``, ``DELETE /sandboxes/{id}`` and the code-interpreter's
    ``POST /execute`` (JSON lines), all on one port (``sandbox_url`` points here)."""

    live: ClassVar[dict[str, str]]  # sandbox id -> its envd access token
    refuse_creates: ClassVar[list[int]]  # 429s still to answer to POST /sandboxes

    def do_POST(self) -> None:
        body = self.record()
        if self.path == "/sandboxes":
            if self.headers.get("X-API-Key") != E2B_KEY:
                self.reply(401, {"code": 401, "message": "Invalid API key"})
            elif self.refuse_creates:
                self.refuse_creates.pop()
                self.reply(429, {"code": 429, "message": "rate limit"}, {"Retry-After": "1"})
            else:
                sandbox_id, token = "i" + uuid.uuid4().hex[:19], uuid.uuid4().hex
                self.live[sandbox_id] = token
                self.reply(
                    201,
                    {
                        "sandboxID": sandbox_id,
                        "templateID": body["templateID"],
                        "clientID": "6532622b",
                        "envdVersion": "0.2.0",
                        "envdAccessToken": token,
                        "domain": None,
                    },
                )
        elif self.path == "/execute":
            if self.headers.get("X-Access-Token") not in self.live.values():
                self.reply(401, {"message": "unauthorized"})
            elif not self.misbehaved(body["code"]):
                self.stream(body["code"])
        else:
            self.reply(404, {"message": "not found"})

    def do_DELETE(self) -> None:
        self.record()
        sandbox_id = self.path.rsplit("/", 1)[1]
        if self.live.pop(sandbox_id, None) is None:
            self.reply(404, {"code": 404, "message": "sandbox not found"})
        else:
            self.reply(204)

    def stream(self, code: str) -> None:
        """Run the cell and stream its events, as the Jupyter server does."""
        ran = run_python(code, "", 60)
        events: list[dict[str, Any]] = [{"type": "number_of_executions", "execution_count": 1}]
        stamp = time.time_ns()
        for line in ran["stdout"].splitlines(keepends=True):
            events.append({"type": "stdout", "text": line, "timestamp": stamp})
        if ran["code"] != 0:
            last = (ran["stderr"].strip().splitlines() or ["Error"])[-1]
            name, _, value = last.partition(": ")
            events.append(
                {"type": "error", "name": name, "value": value, "traceback": ran["stderr"]}
            )
        if "CUT_STREAM" not in code:
            events.append({"type": "end_of_execution"})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        for event in events:
            self.wfile.write(json.dumps(event).encode() + b"\n")


class FakeSandboxFusion(FakeService):
    """SandboxFusion ``POST /run_code``."""

    def do_POST(self) -> None:
        body = self.record()
        if self.misbehaved(body["code"]):
            return
        ran = run_python(body["code"], body.get("stdin", ""), float(body["run_timeout"]))
        run = {
            "status": "TimeLimitExceeded" if ran["timed_out"] else "Finished",
            "execution_time": ran["seconds"],
            "return_code": None if ran["timed_out"] else ran["code"],
            "stdout": ran["stdout"],
            "stderr": ran["stderr"],
        }
        status = "Success" if ran["code"] == 0 and not ran["timed_out"] else "Failed"
        self.reply(
            200, {"status": status, "message": "", "compile_result": None, "run_result": run}
        )


@contextmanager
def serving(handler: type[FakeService]) -> Iterator[tuple[str, type[FakeService]]]:
    """Serve a fresh copy of ``handler`` on 127.0.0.1; yield its base URL and the copy
    (whose ``requests``, ``live`` ... the test reads)."""
    fresh: type[FakeService] = type(
        handler.__name__,
        (handler,),
        {
            "requests": [],
            "seen": set(),
            "pending": {},
            "live": {},
            "refuse_creates": [],
            "in_flight": [0, 0],
            "flight_lock": threading.Lock(),
        },
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), fresh)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", fresh
    finally:
        server.shutdown()
        server.server_close()
