"""Remote runners against local servers speaking Piston's, Judge0's, E2B's and
SandboxFusion's protocols: the requests they send, how answers read, and what a service
under load does to them (429s, slow and cut answers, garbage): statuses, never tracebacks,
and never a sample held past its request deadline."""

from __future__ import annotations

import base64
import http.client
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest
from remote_fakes import E2B_KEY, FakeE2B, FakeJudge0, FakePiston, FakeSandboxFusion, serving
from rewardkit_sandbox import Runner, SandboxFusionRunner, Status
from rewardkit_sandbox.budget import ExecutionBudget
from rewardkit_sandbox.remote import (
    E2BRunner,
    Judge0Runner,
    PistonRunner,
    RemoteOptions,
    RemoteRunner,
)

Make = Callable[..., RemoteRunner]


def _piston(url: str, **options: Any) -> RemoteRunner:
    return PistonRunner(f"{url}/api/v2", RemoteOptions(**options))


def _judge0(url: str, **options: Any) -> RemoteRunner:
    return Judge0Runner(url, RemoteOptions(**options))


def _e2b(url: str, **options: Any) -> RemoteRunner:
    return E2BRunner(E2B_KEY, RemoteOptions(**options), api_url=url, sandbox_url=url)


def _fusion(url: str, **options: Any) -> RemoteRunner:
    return SandboxFusionRunner(url, RemoteOptions(**options))


KINDS = {
    "piston": (FakePiston, _piston),
    "judge0": (FakeJudge0, _judge0),
    "e2b": (FakeE2B, _e2b),
    "sandboxfusion": (FakeSandboxFusion, _fusion),
}


@pytest.fixture(params=sorted(KINDS), scope="module")
def service(request: pytest.FixtureRequest) -> Iterator[tuple[str, Make, type]]:
    handler, make = KINDS[request.param]
    with serving(handler) as (url, fake):
        yield request.param, (lambda **options: make(url, **options)), fake


# -- what every runner does the same way ----------------------------------------------


def test_a_clean_run_is_ok_with_its_output(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    runner = make(run_timeout_s=5)
    assert isinstance(runner, Runner)
    result = runner.run("print(input()[::-1])", stdin="abc\n")
    assert (result.status, result.exit_code, result.stdout) == (Status.OK, 0, "cba\n")
    assert result.metadata["provider"] == runner.provider


def test_a_non_zero_exit_is_a_wrong_answer(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    result = make(run_timeout_s=5).run("import sys\nprint('x', file=sys.stderr)\nsys.exit(3)")
    assert (result.status, result.exit_code) == (Status.FAILED, 3)
    assert "x" in result.stderr


def test_the_time_limit_is_a_timeout(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    started = time.monotonic()
    result = make(run_timeout_s=1).run("while True:\n    pass")
    assert result.status is Status.TIMEOUT
    assert time.monotonic() - started < 8


def test_tests_run_one_by_one_with_the_program(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    runner = make(run_timeout_s=5, stop_on_first_failure=True)
    result = runner.run("x = 1", tests=["assert x == 1", "assert x == 2", "assert x"])
    assert result.tests is not None
    assert [test.status for test in result.tests] == [Status.OK, Status.FAILED, None]
    assert result.status is Status.FAILED


def test_output_over_the_cap_is_an_output_limit(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    result = make(run_timeout_s=5, output_cap_bytes=100).run("print('y' * 5000)")
    assert result.status is Status.OUTPUT_LIMIT
    assert len(result.stdout) <= 100


def test_a_429_with_retry_after_is_waited_out(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    started = time.monotonic()
    result = make(run_timeout_s=5).run("print('RATE_LIMITED_ONCE')")
    assert result.status is Status.OK, result.error
    assert result.metadata["retries"] == 1
    assert 0.9 <= time.monotonic() - started < 5


def test_a_retry_after_date_is_honoured(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    result = make(run_timeout_s=5).run("print('RATE_LIMITED_DATE')")
    assert result.status is Status.OK, result.error
    assert 0.4 <= float(str(result.metadata["retry_wait_s"])) <= 2.5


def test_a_retry_after_beyond_the_bound_is_an_error_at_once(
    service: tuple[str, Make, type],
) -> None:
    _, make, _ = service
    started = time.monotonic()
    result = make(run_timeout_s=5, max_retry_wait_s=10).run("print('RATE_LIMITED_LONG')")
    assert result.status is Status.SANDBOX_ERROR
    assert "rate limiting" in (result.error or "") and "3600" in (result.error or "")
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("marker", ["SLOW_LORIS", "HANG"])
def test_a_slow_answer_ends_at_the_request_deadline(
    service: tuple[str, Make, type], marker: str
) -> None:
    _, make, _ = service
    started = time.monotonic()
    result = make(run_timeout_s=1, request_timeout_s=1.5).run(f"print('{marker}')")
    elapsed = time.monotonic() - started
    assert result.status is Status.SANDBOX_ERROR
    assert "no complete answer within 1.5 s" in (result.error or "")
    assert elapsed < 3.5, elapsed  # E2B: create + execute, each bounded


@pytest.mark.parametrize(
    ("marker", "words"),
    [
        ("PARTIAL", "broken answer"),
        ("GARBAGE", "invalid JSON"),
        ("DEEP", "invalid JSON"),
        ("SHAPE", "answer"),
        ("HTTP500", "HTTP 500"),
    ],
)
def test_a_garbled_answer_is_a_sandbox_error(
    service: tuple[str, Make, type], marker: str, words: str
) -> None:
    _, make, _ = service
    result = make(run_timeout_s=5).run(f"print('{marker}')")
    assert result.status is Status.SANDBOX_ERROR
    assert words in (result.error or ""), result.error


def test_an_unreachable_service_is_a_sandbox_error() -> None:
    for make in (_piston, _judge0, _e2b, _fusion):
        result = make("http://127.0.0.1:9", run_timeout_s=1, request_timeout_s=2).run("1")
        assert result.status is Status.SANDBOX_ERROR
        assert "unreachable" in (result.error or "")


def test_every_run_holds_a_budget_slot_and_reports_its_queueing(
    service: tuple[str, Make, type], tmp_path: Any
) -> None:
    _, make, _ = service
    budget = ExecutionBudget("remote-test", slots=1, directory=str(tmp_path))
    started = threading.Event()
    results: list[Any] = []

    def grade() -> None:
        started.set()
        results.append(make(run_timeout_s=5, budget=budget).run("print(1)"))

    with budget.acquire():  # someone else holds the only slot for 1 s after the run starts
        worker = threading.Thread(target=grade)
        worker.start()
        started.wait(30)
        time.sleep(1.0)
    worker.join(30)
    assert results[0].status is Status.OK
    # the run waited for the slot: at least half the hold, whatever the machine's load
    # delays before the run asks for it (a busy machine once made 0.45 of 0.5 s flaky)
    assert results[0].metadata["queued_s"] >= 0.5


def test_a_full_budget_with_max_wait_is_a_sandbox_error(
    service: tuple[str, Make, type], tmp_path: Any
) -> None:
    _, make, _ = service
    budget = ExecutionBudget("remote-full", slots=1, directory=str(tmp_path))
    with budget.acquire():
        result = make(run_timeout_s=5, budget=budget, max_wait_s=0.2).run("print(1)")
    assert result.status is Status.SANDBOX_ERROR
    assert "stayed busy" in (result.error or "")


# -- Piston -----------------------------------------------------------------------------


def test_piston_sends_the_documented_request() -> None:
    with serving(FakePiston) as (url, fake):
        runner = PistonRunner(f"{url}/api/v2", RemoteOptions(run_timeout_s=3, memory_limit_mb=64))
        runner.run("print(1)", stdin="x")
        assert fake.requests[0]["body"] == {
            "language": "python",
            "version": "*",
            "files": [{"name": "main.py", "content": "print(1)"}],
            "stdin": "x",
            "run_timeout": 3000,
            "compile_timeout": 10000,
            "run_memory_limit": 64 * 1024 * 1024,
        }


def test_piston_lists_its_runtimes_and_refuses_an_unknown_language() -> None:
    with serving(FakePiston) as (url, _):
        assert PistonRunner(f"{url}/api/v2").runtimes()[0]["language"] == "python"
        result = PistonRunner(f"{url}/api/v2", RemoteOptions(language="cobol")).run("x")
        assert result.status is Status.SANDBOX_ERROR
        assert "cobol-* runtime is unknown" in (result.error or "")


def test_piston_compile_failure_is_a_wrong_answer_with_the_compiler_output() -> None:
    with serving(FakePiston) as (url, _):
        result = PistonRunner(f"{url}/api/v2").run("COMPILE_ERROR")
        assert result.status is Status.FAILED
        assert result.metadata["stage"] == "compile"
        assert "expected ';'" in (result.error or "")


# -- Judge0 -----------------------------------------------------------------------------


def test_judge0_sends_base64_with_the_newest_python_id() -> None:
    with serving(FakeJudge0) as (url, fake):
        runner = Judge0Runner(url, RemoteOptions(run_timeout_s=2, memory_limit_mb=128))
        runner.run("print(1)", stdin="5")
        post = next(r for r in fake.requests if r["method"] == "POST")
        assert post["path"].startswith("/submissions?base64_encoded=true&wait=true&fields=")
        assert {"exit_code", "exit_signal", "status"} <= set(post["path"].split("=")[-1].split(","))
        assert post["body"] == {
            "source_code": base64.b64encode(b"print(1)").decode(),
            "language_id": 92,
            "stdin": base64.b64encode(b"5").decode(),
            "cpu_time_limit": 2,
            "wall_time_limit": 2,
            "memory_limit": 128 * 1024,
        }


def test_judge0_without_wait_is_polled_until_done() -> None:
    with serving(FakeJudge0) as (url, fake):
        result = Judge0Runner(url, language_id=71).run("print('NO_WAIT')")
        assert (result.status, result.stdout) == (Status.OK, "NO_WAIT\n")
        polls = [r for r in fake.requests if r["path"].startswith("/submissions/")]
        assert len(polls) == 2  # "Processing", then the verdict


def test_judge0_compile_error_and_unknown_language() -> None:
    with serving(FakeJudge0) as (url, _):
        result = Judge0Runner(url, language_id=71).run("COMPILE_ERROR")
        assert (result.status, result.metadata["stage"]) == (Status.FAILED, "compile")
        missing = Judge0Runner(url, RemoteOptions(language="cobol")).run("x")
        assert missing.status is Status.SANDBOX_ERROR
        assert "no language like 'cobol'" in (missing.error or "")


def test_judge0_runtime_signal_is_a_crash() -> None:
    with serving(FakeJudge0) as (url, _):
        result = Judge0Runner(url).run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        assert (result.status, result.signal) == (Status.CRASHED, 11)


# -- E2B --------------------------------------------------------------------------------


def test_e2b_makes_one_sandbox_per_run_and_kills_it() -> None:
    with serving(FakeE2B) as (url, fake):
        runner = _e2b(url, run_timeout_s=5)
        assert runner.run("print(1)").status is Status.OK
        assert runner.run("raise SystemExit(2)").status is Status.FAILED
        hung = _e2b(url, run_timeout_s=1, request_timeout_s=1).run("print('HANG')")
        assert hung.status is Status.SANDBOX_ERROR  # killed all the same
        methods = [(r["method"], r["path"].split("/")[1]) for r in fake.requests]
        assert methods.count(("POST", "sandboxes")) == 3
        assert methods.count(("DELETE", "sandboxes")) == 3
        assert fake.live == {}  # nothing left running (or billing)
        create = next(r for r in fake.requests if r["path"] == "/sandboxes")
        assert create["body"]["templateID"] == "code-interpreter-v1"
        assert create["body"]["allow_internet_access"] is False  # no network, as locally


def test_e2b_program_cannot_forge_the_outcome_line() -> None:
    with serving(FakeE2B) as (url, _):
        forged = 'print("rewardkit-e2b-0000000000000000:{\\"code\\": 0}")\nraise SystemExit(1)'
        result = _e2b(url).run(forged)
        assert (result.status, result.exit_code) == (Status.FAILED, 1)


def test_e2b_refusals_and_a_cut_stream_are_sandbox_errors() -> None:
    with serving(FakeE2B) as (url, fake):
        wrong_key = E2BRunner("nope", api_url=url, sandbox_url=url).run("print(1)")
        assert wrong_key.status is Status.SANDBOX_ERROR and "401" in (wrong_key.error or "")
        cut = _e2b(url).run("print('CUT_STREAM')")
        assert cut.status is Status.SANDBOX_ERROR and "cut short" in (cut.error or "")
        fake.refuse_creates.append(1)
        retried = _e2b(url).run("print(2)")
        assert (retried.status, retried.metadata["retries"]) == (Status.OK, 1)
        assert fake.live == {}


def test_e2b_runs_only_the_languages_it_knows() -> None:
    with pytest.raises(ValueError, match="e2b runner runs python"):
        E2BRunner("key", RemoteOptions(language="cobol"))


@pytest.mark.parametrize("leave", ["import sys\nsys.exit(0)", "import os\nos._exit(0)", "quit()"])
def test_a_program_that_exits_before_its_test_does_not_pass_it(
    service: tuple[str, Make, type], leave: str
) -> None:
    _, make, _ = service
    result = make(run_timeout_s=5).run(
        f"def add(a, b):\n    return 0\n{leave}", tests=["assert False"]
    )
    assert result.tests is not None and result.tests[0].status is Status.FAILED
    assert "ended before its test" in (result.tests[0].error or "")
    assert result.status is Status.FAILED


def test_the_completion_line_is_not_in_the_output(service: tuple[str, Make, type]) -> None:
    _, make, _ = service
    result = make(run_timeout_s=5).run("print('hi')", tests=["assert True"])
    assert (result.status, result.stdout) == (Status.OK, "hi\n")


# -- the node budget, seen from the service ---------------------------------------------

CLIENT = """
import json, sys, threading
from rewardkit_sandbox.budget import ExecutionBudget
from rewardkit_sandbox.remote import PistonRunner, RemoteOptions
url, folder = sys.argv[1:]
budget = ExecutionBudget("piston-test", slots=3, directory=folder)
runner = PistonRunner(url, RemoteOptions(run_timeout_s=5, budget=budget))
results = []
def grade():
    results.append(runner.run("import time\\ntime.sleep(0.2)\\nprint(1)"))
threads = [threading.Thread(target=grade) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps([[r.status.value, r.metadata["queued_s"]] for r in results]))
"""


def test_processes_sharing_a_budget_never_send_more_runs_than_its_slots(tmp_path: Any) -> None:
    import json
    import subprocess
    import sys

    with serving(FakePiston) as (url, fake):
        clients = [
            subprocess.Popen(
                [sys.executable, "-c", CLIENT, f"{url}/api/v2", str(tmp_path)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outcomes = [json.loads(client.communicate(timeout=120)[0]) for client in clients]
        runs = [run for outcome in outcomes for run in outcome]
        assert [status for status, _ in runs] == ["ok"] * 16  # back-pressure, no errors
        assert fake.in_flight[1] == 3  # the limit, and reached, across both processes
        assert max(queued for _, queued in runs) > 0.2  # some waited a whole run or more


def test_memory_error_is_a_memory_verdict_but_a_clean_exit_is_ok(
    service: tuple[str, Make, type],
) -> None:
    _, make, _ = service
    runner = make(run_timeout_s=5)
    assert runner.run("raise MemoryError").status is Status.MEMORY
    mentioned = "import sys\nprint('MemoryError handled', file=sys.stderr)"
    assert runner.run(mentioned).status is Status.OK


class ForwardingProxy(BaseHTTPRequestHandler):
    """A plain HTTP proxy: forwards absolute-URI requests, notes what went through it."""

    seen: ClassVar[list[tuple[str, str | None]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        target = urlsplit(self.path)
        self.seen.append((self.path, self.headers.get("Proxy-Authorization")))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        upstream = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "proxy-authorization"}
        upstream.request("POST", target.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_requests_go_through_the_environments_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), ForwardingProxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with serving(FakePiston) as (url, _):
            for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY"):
                monkeypatch.delenv(name, raising=False)
            monkeypatch.setenv("http_proxy", f"http://user:pw@127.0.0.1:{proxy.server_address[1]}")
            result = PistonRunner(f"{url}/api/v2").run("print(6 * 7)")
            assert (result.status, result.stdout) == (Status.OK, "42\n")
            assert ForwardingProxy.seen == [
                (f"{url}/api/v2/execute", "Basic " + base64.b64encode(b"user:pw").decode())
            ]
            monkeypatch.setenv("no_proxy", "127.0.0.1")
            assert PistonRunner(f"{url}/api/v2").run("print(1)").status is Status.OK
            assert len(ForwardingProxy.seen) == 1  # bypassed
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_piston_killed_at_its_memory_limit_is_a_memory_verdict() -> None:
    with serving(FakePiston) as (url, _):
        capped = PistonRunner(f"{url}/api/v2", RemoteOptions(memory_limit_mb=64))
        result = capped.run("print('OVER_MEMORY')")
        assert result.status is Status.MEMORY
        plain_kill = PistonRunner(f"{url}/api/v2").run("import os\nos.kill(os.getpid(), 9)")
        assert (plain_kill.status, plain_kill.signal) == (Status.CRASHED, 9)
