"""Remote runners against a real local HTTP server answering in the wrong shape.

A provider's answer that does not say how the program ended (a Piston run without an
exit code, or with a string one; a SandboxFusion run without ``return_code``; a Judge0
status id outside its documented list) is the provider failing, not the program: it is
``sandbox_error`` (an error score, masked), never a wrong answer scored 0.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from rewardkit_sandbox import SandboxFusionRunner, Status
from rewardkit_sandbox.remote import E2BRunner, Judge0Runner, PistonRunner, RemoteOptions


class _Canned(BaseHTTPRequestHandler):
    """Answers every POST with ``answer`` (and E2B's create / execute in their shapes)."""

    answer: ClassVar[Any]

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._reply(self.answer)

    def do_DELETE(self) -> None:
        self._reply({})

    def _reply(self, body: Any) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def answering(answer: Any) -> Iterator[str]:
    """A server on 127.0.0.1 answering every POST with ``answer``; yields its URL."""
    handler = type("Canned", (_Canned,), {"answer": answer})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _piston_run(**run: Any) -> dict[str, Any]:
    fields = {"stdout": "", "stderr": "", "code": 0, "signal": None, "status": None}
    return {"language": "python", "version": "3.12.0", "run": {**fields, **run}}


def _fusion_run(**run: Any) -> dict[str, Any]:
    fields = {"status": "Finished", "execution_time": 0.01, "stdout": "", "stderr": ""}
    return {"status": "Failed", "message": "", "run_result": {**fields, **run}}


def _judge0(status_id: Any, **fields: Any) -> dict[str, Any]:
    return {
        "token": "abc",
        "status": {"id": status_id, "description": "?"},
        "stdout": None,
        "stderr": None,
        "exit_code": 1,
        "exit_signal": None,
        "time": "0.01",
        **fields,
    }


def _run_piston(url: str) -> Any:
    return PistonRunner(f"{url}/api/v2", RemoteOptions(run_timeout_s=2)).run("print(1)")


def _run_fusion(url: str) -> Any:
    return SandboxFusionRunner(url, RemoteOptions(run_timeout_s=2)).run("print(1)")


def _run_judge0(url: str) -> Any:
    return Judge0Runner(url, RemoteOptions(run_timeout_s=2), language_id=71).run("print(1)")


WRONG_SHAPES = {
    "piston run without an exit code": (_run_piston, _piston_run(code=None)),
    "piston run with a string exit code": (_run_piston, _piston_run(code="1")),
    "piston run with a boolean exit code": (_run_piston, _piston_run(code=True)),
    "piston run with a fractional exit code": (_run_piston, _piston_run(code=1.5)),
    "sandboxfusion run without return_code": (_run_fusion, _fusion_run()),
    "sandboxfusion run with a string return_code": (_run_fusion, _fusion_run(return_code="1")),
    "judge0 status id it does not document": (_run_judge0, _judge0(15)),
    "judge0 status id 0": (_run_judge0, _judge0(0)),
    "judge0 status id as a string": (_run_judge0, _judge0("3")),
    "judge0 exit code as a string": (_run_judge0, _judge0(11, exit_code="1")),
}


@pytest.mark.parametrize("shape", sorted(WRONG_SHAPES))
def test_an_answer_of_the_wrong_shape_is_a_sandbox_error(shape: str) -> None:
    run, answer = WRONG_SHAPES[shape]
    with answering(answer) as url:
        result = run(url)
    assert result.status is Status.SANDBOX_ERROR, (result.status, result.error)
    assert result.error


RIGHT_SHAPES = {
    "piston clean exit": (_run_piston, _piston_run(code=0), Status.OK),
    "piston exit 3": (_run_piston, _piston_run(code=3), Status.FAILED),
    "piston killed by a signal, no code": (
        _run_piston, _piston_run(code=None, signal="SIGSEGV", status="SG"), Status.CRASHED,
    ),
    "piston timeout, no code": (
        _run_piston, _piston_run(code=None, signal="SIGKILL", status="TO"), Status.TIMEOUT,
    ),
    "piston output limit, no code": (
        _run_piston, _piston_run(code=None, signal="SIGKILL", status="OL"), Status.OUTPUT_LIMIT,
    ),
    "sandboxfusion exit 1": (_run_fusion, _fusion_run(return_code=1), Status.FAILED),
    "sandboxfusion time limit, no code": (
        _run_fusion, _fusion_run(status="TimeLimitExceeded", return_code=None), Status.TIMEOUT,
    ),
    "judge0 accepted": (_run_judge0, _judge0(3, exit_code=0), Status.OK),
    "judge0 NZEC without an exit code": (_run_judge0, _judge0(11, exit_code=None), Status.FAILED),
    "judge0 SIGSEGV": (_run_judge0, _judge0(7, exit_code=None), Status.CRASHED),
    "judge0 time limit": (_run_judge0, _judge0(5, exit_code=None), Status.TIMEOUT),
}


@pytest.mark.parametrize("shape", sorted(RIGHT_SHAPES))
def test_an_answer_of_the_documented_shape_reads_as_the_program_ended(shape: str) -> None:
    run, answer, status = RIGHT_SHAPES[shape]
    with answering(answer) as url:
        result = run(url)
    assert result.status is status, (result.status, result.error)


def test_an_e2b_outcome_without_an_exit_code_is_a_sandbox_error() -> None:
    # E2B's outcome comes from the runner's own driver; one without a code is garbled
    runner = E2BRunner("key", RemoteOptions(run_timeout_s=2))
    marker = "rk-marker:"
    outcome = json.dumps({"code": None, "stdout": "", "stderr": "", "timed_out": False})
    stream = "\n".join(
        json.dumps(event)
        for event in (
            {"type": "stdout", "text": marker + outcome + "\n"},
            {"type": "end_of_execution"},
        )
    ).encode()
    result = runner._read(stream, marker, 0.0)
    assert result.status is Status.SANDBOX_ERROR, (result.status, result.error)
