"""code_execution: modes, batches, cases, limits and runners, on the real sandbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from rewardkit_code import CodeExecution
from rewardkit_code.sandboxes import shared_sandbox_pool
from rewardkit_sandbox import SandboxLimits

from rewardkit import ExecutionMode, RewardSet, Sample, Score, Status

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0"]
DOUBLE = "```python\nprint(int(input()) * 2)\n```"


def grade(completion: str, reference: Any, **params: Any) -> Score:
    return CodeExecution(params).grade(Sample(completion=completion, reference=reference))


def test_it_is_registered_as_an_async_reward() -> None:
    rs = RewardSet.from_dict({"rewards": {"code": {"reward": "code_execution"}}})
    assert rs.components["code"].mode is ExecutionMode.ASYNC
    assert rs.score([Sample(completion=ADD, reference=ADD_TESTS)]).values("code") == [1.0]


def test_binary_pays_only_when_every_test_passes() -> None:
    assert grade(ADD, ADD_TESTS, mode="binary").value == 1.0
    wrong = grade(ADD, [*ADD_TESTS, "assert add(1, 1) == 3"], mode="binary")
    assert (wrong.status, wrong.value) == (Status.OK, 0.0)
    assert "test 3 failed: AssertionError" in wrong.reason


def test_pass_fraction_counts_passing_tests() -> None:
    score = grade(ADD, ["assert add(1, 2) == 3", "assert add(1, 1) == 3", "assert add(0, 1) == 1"])
    assert score.value == pytest.approx(2 / 3)
    assert score.details == {"passed": 2, "total": 3, "queued_s": score.details["queued_s"]}
    assert score.details["queued_s"] >= 0  # the wait for the node budget's slots


@pytest.mark.parametrize(
    ("completion", "value", "reason"),
    [
        ("```python\ndef add(a, b:\n```", 0.0, "does not compile: SyntaxError"),
        ("```python\nraise SystemExit(3)\n```", 0.1, "compiles but does not run clean"),
        ("```python\ndef add(a, b):\n    return a - b\n```", 0.2, "1/3 tests passed"),
        (ADD, 1.0, "all 3 tests passed"),
    ],
)
def test_partial_pays_by_stage(completion: str, value: float, reason: str) -> None:
    score = grade(completion, ADD_TESTS, mode="partial")
    assert (score.status, score.value) == (Status.OK, value)
    assert reason in score.reason


def test_partial_values_are_configurable() -> None:
    params = {"mode": "partial", "compiles_value": 0.3, "runs_value": 0.5, "pass_value": 2.0}
    assert grade("```python\n1/0\n```", ADD_TESTS, **params).value == 0.3
    assert grade(ADD, ["assert add(1, 1) == 3"], **params).value == 0.5
    assert grade(ADD, ADD_TESTS, **params).value == 2.0


def test_partial_counts_a_program_that_fakes_the_compile_marker_only_as_compiling() -> None:
    # printing something marker-like gains nothing: the token is random per run
    fake = "```python\nimport sys\nprint('rewardkit-compiled-0', file=sys.stderr)\n1/0\n```"
    assert grade(fake, ADD_TESTS, mode="partial").value == 0.1


def test_a_failing_batch_stops_the_rest() -> None:
    tests = ["assert add(1, 2) == 3", "assert False", "assert add(1, 1) == 2", "assert True"]
    whole = grade(ADD, tests)
    batched = grade(ADD, tests, batch_size=2)
    assert whole.value == 0.75
    assert batched.value == 0.25  # batch 1 had a failure: batch 2 never ran
    assert (batched.details["passed"], batched.details["total"]) == (1, 4)


def test_batches_before_the_first_failure_all_count() -> None:
    tests = ["assert add(1, 2) == 3", "assert True", "assert add(1, 1) == 2", "assert False"]
    assert grade(ADD, tests, batch_size=2).value == 0.75


def test_stdin_stdout_cases() -> None:
    cases = {"cases": [{"stdin": "2\n", "stdout": "4\n"}, {"stdin": "5", "stdout": "10"}]}
    assert grade(DOUBLE, cases, mode="binary").value == 1.0
    wrong = grade(DOUBLE, {"cases": [{"stdin": "2", "stdout": "4"}, {"stdin": "3", "stdout": "7"}]})
    assert wrong.value == 0.5
    assert "case 1 wrong output: expected '7', got '6\\n'" in wrong.reason


def test_a_megabyte_of_stdin_reaches_the_program() -> None:
    program = "```python\nimport sys\nprint(len(sys.stdin.read()))\n```"
    score = grade(program, [{"stdin": "x" * 1_000_000, "stdout": "1000000"}], timeout_s=3)
    assert score.value == 1.0, score.reason


def test_partial_with_cases_uses_the_first_case_as_the_run() -> None:
    cases = {"cases": [{"stdin": "2", "stdout": "4"}, {"stdin": "3", "stdout": "7"}]}
    assert grade(DOUBLE, cases, mode="partial").value == 0.2
    crashing = "```python\nprint(int(input()) * 2)\nraise ValueError\n```"
    assert grade(crashing, cases, mode="partial").value == 0.1


@pytest.mark.parametrize(
    ("compare", "printed", "passes"),
    [
        ("rstrip", "1 2   \n3\n\n\n", True),
        ("rstrip", "1  2\n3\n", False),
        ("exact", "1 2\n3\n", True),
        ("exact", "1 2\n3", False),
        ("whitespace", "1\n2 3", True),
        ("whitespace", "1 2 4", False),
    ],
)
def test_output_comparison(compare: str, printed: str, passes: bool) -> None:
    program = f"```python\nimport sys\nsys.stdout.write({printed!r})\n```"
    score = grade(program, [{"stdin": "", "stdout": "1 2\n3\n"}], compare=compare)
    assert score.value == (1.0 if passes else 0.0)


def test_a_test_that_times_out_is_a_wrong_answer_and_the_others_still_count() -> None:
    tests = ["assert add(1, 2) == 3", "while True:\n    pass", "assert add(2, 2) == 4"]
    started = time.monotonic()
    score = grade(ADD, tests, timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert (score.status, score.value) == (Status.OK, pytest.approx(2 / 3))
    assert "test 1 timeout" in score.reason


def test_a_memory_bomb_is_a_wrong_answer_with_the_reason() -> None:
    bomb = "```python\nx = bytearray(2 * 1024 ** 3)\n```"
    score = grade(bomb, [{"stdin": "", "stdout": ""}], memory_mb=128)
    assert (score.status, score.value) == (Status.OK, 0.0)
    assert "memory" in score.reason


def test_no_code_is_a_wrong_answer() -> None:
    score = grade("I think the answer is to add them.", ADD_TESTS)
    assert (score.status, score.value) == (Status.OK, 0.0)
    assert score.reason == "no python code found (extract: fenced)"


def test_extract_whole_runs_the_whole_completion() -> None:
    assert grade("def add(a, b):\n    return a + b\n", ADD_TESTS, extract="whole").value == 1.0


def test_an_unreadable_reference_is_an_error_not_a_zero() -> None:
    score = grade(ADD, {"expected": 3})
    assert (score.status, score.value) == (Status.ERROR, None)


def test_chat_completions_are_read_as_text() -> None:
    completion = [{"role": "assistant", "content": ADD}]
    assert grade(completion, ADD_TESTS).value == 1.0  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"runner": "sandboxfusion"}, "needs endpoint"),
        ({"runner": "sandboxfusion", "endpoint": "ftp://x"}, "needs endpoint"),
        ({"language": "cobol"}, "unknown language .cobol. .known: c, c\\+\\+"),
        ({"mode": "partial", "compiles_value": 0.5, "runs_value": 0.2}, "must rise"),
        ({"timeout_s": 0}, "greater than 0"),
        ({"extract": "first"}, "fenced"),
    ],
)
def test_params_are_checked_when_the_config_loads(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CodeExecution(params)


#: scores the eight sleepers of the test below and prints the values and the seconds
BATCH_OF_SLEEPERS = """
import json, sys, time
from rewardkit import RewardSet, Sample
add, tests = json.loads(sys.argv[1])
sleeper = "```python\\nimport time\\ntime.sleep(0.4)\\n```"
rs = RewardSet.from_dict(
    {"rewards": {"code": {"reward": "code_execution", "params": {"concurrency": 2}}}})
rs.score([Sample(completion=add, reference=tests)])  # start the pool
started = time.monotonic()
result = rs.score([Sample(prompt=str(i), completion=sleeper,
                          reference=[{"stdin": "", "stdout": ""}]) for i in range(8)])
print(json.dumps([result.values("code"), time.monotonic() - started]))
"""


def test_a_batch_uses_every_sandbox_slot(tmp_path: Path) -> None:
    # eight programs that each sleep 0.4 s: one slot would take 3.2 s, two ~1.6 s. In a
    # process of its own with a node budget of its own (RK_BUDGET_DIR): the node's
    # budget of local sandbox runs (CPU count slots) is shared by every process, so under
    # pytest -n 2 the other worker's sandbox tests held its slots (4.04 s measured)
    env = {**os.environ, "RK_BUDGET_DIR": str(tmp_path / "budget")}
    done = subprocess.run([sys.executable, "-c", BATCH_OF_SLEEPERS,
                           json.dumps([ADD, ADD_TESTS])],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    values, elapsed = json.loads(done.stdout.splitlines()[-1])
    assert values == [1.0] * 8
    # one at a time cannot take less than 8 x 0.4 s, whatever the load; in parallel ~1.6 s
    assert elapsed < 8 * 0.4, f"{elapsed:.2f}s: the batch did not run in parallel"


@pytest.mark.parametrize("mode", ["inline", "process"])
def test_it_also_runs_in_inline_and_process_mode(mode: str) -> None:
    rs = RewardSet.from_dict({"rewards": {"code": {"reward": "code_execution", "mode": mode}}})
    samples = [Sample(prompt=str(i), completion=ADD, reference=ADD_TESTS) for i in range(3)]
    result = rs.score(samples)
    assert result.values("code") == [1.0] * 3, result.scores("code")


# -- SandboxFusion --------------------------------------------------------------------


class SandboxFusionStandIn(BaseHTTPRequestHandler):
    """Answers POST /run_code as SandboxFusion does, running the code in a local pool."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        limits = SandboxLimits(wall_time_s=payload["run_timeout"])
        result = shared_sandbox_pool(1).run(payload["code"], stdin=payload["stdin"], limits=limits)
        finished = result.status.value != "timeout"
        body = {
            "status": "Success" if result.ok else "Failed",
            "message": "",
            "compile_result": None,
            "run_result": {
                "status": "Finished" if finished else "TimeLimitExceeded",
                "execution_time": result.wall_time_s,
                "return_code": result.exit_code if finished else None,
                "stdout": result.stdout,
                "stderr": result.stderr,
            },
        }
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def fusion_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SandboxFusionStandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_sandboxfusion_runner_plugs_in(fusion_url: str) -> None:
    params = {"runner": "sandboxfusion", "endpoint": fusion_url}
    assert grade(ADD, ADD_TESTS, **params).value == 1.0
    assert grade(ADD, ["assert add(1, 1) == 3", *ADD_TESTS], **params).value == 0.75
    assert grade(DOUBLE, [{"stdin": "4", "stdout": "8"}], **params).value == 1.0
    assert grade("```python\ndef add(:\n```", ADD_TESTS, mode="partial", **params).value == 0.0


def test_an_unreachable_sandboxfusion_is_an_error_not_a_zero() -> None:
    params = {"runner": "sandboxfusion", "endpoint": "http://127.0.0.1:9", "timeout_s": 1}
    for reference in (ADD_TESTS, [{"stdin": "1", "stdout": "2"}]):
        score = grade(ADD, reference, **params)
        assert (score.status, score.value) == (Status.ERROR, None)
        assert "sandbox error: SandboxFusion unreachable" in score.reason


def zygotes_of_this_process() -> set[int]:
    """Pids of the sandbox zygotes this test process started (children, by cmdline)."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and b"rewardkit_sandbox" in command:
            found.add(int(entry))
    return found


@pytest.mark.usefixtures("no_leftovers")
def test_a_dead_sandbox_is_an_error_not_a_zero_and_the_pool_recovers() -> None:
    before = zygotes_of_this_process()
    shared_sandbox_pool(3)  # a pool of its own for this test
    zygotes = zygotes_of_this_process() - before
    assert len(zygotes) == 3
    sleeper = "```python\nimport time\ntime.sleep(2)\nprint('done')\n```"
    reward = CodeExecution({"concurrency": 3})
    outcome: list[Score] = []
    worker = threading.Thread(
        target=lambda: outcome.append(
            reward.grade(Sample(completion=sleeper, reference=[{"stdin": "", "stdout": "done"}]))
        )
    )
    worker.start()
    time.sleep(0.5)
    for pid in zygotes:
        os.kill(pid, signal.SIGKILL)
    worker.join()
    assert (outcome[0].status, outcome[0].value) == (Status.ERROR, None)
    assert outcome[0].reason.startswith("sandbox error")
    assert reward.grade(Sample(completion=ADD, reference=ADD_TESTS)).value == 1.0
