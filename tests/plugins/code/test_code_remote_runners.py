"""code_execution with ``runner: piston | judge0 | e2b`` against local servers that speak
each protocol: honest programs paid, wrong ones not, a provider's failure an error score
(never a 0), the node budget's queueing time in the details, bad settings refused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "sandbox"))  # the fakes live there

from remote_fakes import E2B_KEY, FakeE2B, FakeJudge0, FakePiston, serving
from rewardkit_code.code_execution import CodeExecution

from rewardkit import Sample, Score, Status

ADD = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"
ADD_TESTS = ["assert add(1, 2) == 3", "assert add(2, 0) == 2"]
DOUBLE = "```python\nprint(int(input()) * 2)\n```"


@pytest.fixture(params=["piston", "judge0", "e2b"], scope="module")
def remote(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    handler = {"piston": FakePiston, "judge0": FakeJudge0, "e2b": FakeE2B}[request.param]
    with serving(handler) as (url, _):
        params: dict[str, Any] = {"runner": request.param, "endpoint": url}
        if request.param == "piston":
            params["endpoint"] = f"{url}/api/v2"
        if request.param == "e2b":
            params["api_key_env"] = "RK_TEST_E2B_KEY"
            params["runner_options"] = {"sandbox_url": url}
        yield params


@pytest.fixture(autouse=True)
def _e2b_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RK_TEST_E2B_KEY", E2B_KEY)


def grade(completion: str, reference: Any, **params: Any) -> Score:
    return CodeExecution(params).grade(Sample(completion=completion, reference=reference))


def test_honest_programs_are_paid_and_wrong_ones_are_not(remote: dict[str, Any]) -> None:
    assert grade(ADD, ADD_TESTS, **remote).value == 1.0
    wrong = grade(WRONG, ADD_TESTS, **remote)
    assert wrong.value == 0.5  # add(2, 0) == 2 holds for a - b too
    assert "AssertionError" in wrong.reason
    assert grade(DOUBLE, [{"stdin": "4", "stdout": "8"}], **remote).value == 1.0
    assert grade(DOUBLE, [{"stdin": "4", "stdout": "9"}], **remote).value == 0.0


def test_the_queueing_time_is_in_the_details(remote: dict[str, Any]) -> None:
    score = grade(ADD, ADD_TESTS, **remote)
    assert score.details is not None and score.details["queued_s"] >= 0.0


def test_a_rate_limited_provider_is_waited_out(remote: dict[str, Any]) -> None:
    program = "```python\n# RATE_LIMITED_ONCE\nprint(int(input()) * 2)\n```"
    score = grade(program, [{"stdin": "2", "stdout": "4"}], **remote)
    assert (score.status, score.value) == (Status.OK, 1.0), score.reason


def test_a_provider_that_never_answers_is_an_error_not_a_zero(remote: dict[str, Any]) -> None:
    program = "```python\n# HANG\nprint(1)\n```"
    options = {**remote.get("runner_options", {}), "request_timeout_s": 1.0}
    score = grade(program, [{"stdin": "", "stdout": "1"}], **{**remote, "runner_options": options})
    assert (score.status, score.value) == (Status.ERROR, None)
    assert "no complete answer within 1 s" in score.reason


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"runner": "piston"}, "needs endpoint"),
        ({"runner": "judge0", "endpoint": "ftp://x"}, "needs endpoint"),
        (
            {"runner": "judge0", "endpoint": "http://x", "runner_options": {"versoin": "3"}},
            "no option versoin",
        ),
        ({"runner": "e2b", "language": "cpp"}, "e2b runner runs python"),
    ],
)
def test_bad_runner_settings_are_refused(params: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        CodeExecution(params)


def test_a_missing_api_key_is_an_error_score(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    score = grade(ADD, ADD_TESTS, runner="e2b")
    assert score.status is Status.ERROR and "$E2B_API_KEY" in score.reason


def test_exiting_before_the_tests_is_not_paid(remote: dict[str, Any]) -> None:
    hack = "```python\nimport os\nos._exit(0)\n```"
    score = grade(hack, ADD_TESTS, **remote)
    assert (score.status, score.value) == (Status.OK, 0.0), score.reason
