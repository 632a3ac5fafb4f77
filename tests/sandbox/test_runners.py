"""Runners: PythonRunner over the pool, SandboxFusionRunner against a local imitation server."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from rewardkit_sandbox import PythonRunner, Runner, SandboxFusionRunner, SandboxPool, Status
from rewardkit_sandbox.remote import RemoteOptions


def test_python_runner_is_a_runner(contained: SandboxPool) -> None:
    runner = PythonRunner(contained, test_timeout_s=1.0)
    assert isinstance(runner, Runner)
    result = runner.run("def sq(x):\n    return x * x", tests=["assert sq(3) == 9"])
    assert (result.status, result.tests_passed) == (Status.OK, 1)


def test_python_runner_feeds_stdin(contained: SandboxPool) -> None:
    result = PythonRunner(contained).run("print(int(input()) + 1)", stdin="41\n")
    assert result.stdout == "42\n"


class FakeSandboxFusion(BaseHTTPRequestHandler):
    """Imitates SandboxFusion's POST /run_code answers, decided by markers in the code."""

    requests: list[dict[str, Any]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeSandboxFusion.requests.append(payload)
        code = payload["code"]
        if self.path != "/run_code":
            self.send_error(404)
            return
        if "HTTP500" in code:
            self.send_error(500, "boom")
            return
        run = {"status": "Finished", "execution_time": 0.01, "return_code": 0, "stderr": ""}
        run["stdout"] = payload.get("stdin", "")[::-1]
        done = re.search(r"print\('(rewardkit-test-done-[0-9a-f]+)'", code)
        if done and "FAIL" not in code:  # the test ran to its end: its line is printed
            run["stdout"] += done.group(1) + "\n"
        status = "Success"
        if "SANDBOXERROR" in code:
            body: dict[str, Any] = {"status": "SandboxError", "message": "worker lost"}
        else:
            if "FAIL" in code:
                status, run["return_code"] = "Failed", 1
                run["stderr"] = "Traceback...\nAssertionError"
            if "SLEEP" in code:
                status, run["status"], run["return_code"] = "Failed", "TimeLimitExceeded", None
            body = {"status": status, "message": "", "compile_result": None, "run_result": run}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def fusion_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeSandboxFusion)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_fusion_sends_the_documented_request(fusion_url: str) -> None:
    FakeSandboxFusion.requests.clear()
    SandboxFusionRunner(fusion_url, RemoteOptions(run_timeout_s=3)).run("print(1)", stdin="abc")
    assert FakeSandboxFusion.requests == [
        {"code": "print(1)", "language": "python", "run_timeout": 3, "stdin": "abc"}
    ]


def test_fusion_success_is_ok_with_its_output(fusion_url: str) -> None:
    result = SandboxFusionRunner(fusion_url).run("print(input())", stdin="abc")
    assert (result.status, result.exit_code, result.stdout) == (Status.OK, 0, "cba")
    assert isinstance(SandboxFusionRunner(fusion_url), Runner)


def test_fusion_non_zero_exit_is_a_failure(fusion_url: str) -> None:
    assert SandboxFusionRunner(fusion_url).run("FAIL").status is Status.FAILED


def test_fusion_time_limit_is_a_timeout(fusion_url: str) -> None:
    assert SandboxFusionRunner(fusion_url).run("SLEEP").status is Status.TIMEOUT


@pytest.mark.parametrize("code", ["SANDBOXERROR", "HTTP500"])
def test_fusion_infrastructure_failures_are_sandbox_errors(fusion_url: str, code: str) -> None:
    assert SandboxFusionRunner(fusion_url).run(code).status is Status.SANDBOX_ERROR


def test_fusion_unreachable_is_a_sandbox_error() -> None:
    runner = SandboxFusionRunner("http://127.0.0.1:9", RemoteOptions(request_timeout_s=2))
    result = runner.run("print(1)")
    assert result.status is Status.SANDBOX_ERROR
    assert "unreachable" in (result.error or "")


def test_fusion_runs_each_test_with_the_program(fusion_url: str) -> None:
    FakeSandboxFusion.requests.clear()
    runner = SandboxFusionRunner(fusion_url, RemoteOptions(stop_on_first_failure=True))
    result = runner.run("x = 1", tests=["assert x == 1", "assert FAIL", "assert x"])
    codes = [request["code"] for request in FakeSandboxFusion.requests]
    assert [code.split("print(")[0] for code in codes] == [
        "x = 1\n\nassert x == 1\n",
        "x = 1\n\nassert FAIL\n",
    ]
    assert all(
        re.search(r"print\('rewardkit-test-done-[0-9a-f]{16}', flush=True\)\n$", c) for c in codes
    )
    assert result.tests is not None
    assert [test.status for test in result.tests] == [Status.OK, Status.FAILED, None]
    assert result.status is Status.FAILED
