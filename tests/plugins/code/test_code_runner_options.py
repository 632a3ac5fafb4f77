"""code_execution's remote ``runner_options`` and ``concurrency`` are checked when the
config loads (typed, ranged, the key named), and a large ``concurrency`` costs the
process descriptors only for the runs in flight: it neither exhausts them nor leaks them
for the next reward."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rewardkit_sandbox.remote.factory import REMOTE_RUNNERS, option_problem

from rewardkit import ConfigError, RewardSet

SANDBOX_TESTS = Path(__file__).parents[2] / "sandbox"  # the fake services live there


def _config(runner: str, **params: Any) -> dict[str, Any]:
    endpoint = {"piston": "http://127.0.0.1:9/api/v2", "e2b": None}.get(runner, "http://h:1")
    return {"rewards": {"execution": {"reward": "code_execution", "params": {
        "runner": runner, "endpoint": endpoint, **params}}}}


@pytest.mark.parametrize(("runner", "options", "words"), [
    ("piston", {"request_timeout_s": -1}, "runner_options.request_timeout_s must be a number "
     "of seconds above 0"),
    ("piston", {"request_timeout_s": "soon"}, "runner_options.request_timeout_s"),
    ("piston", {"request_timeout_s": 0}, "runner_options.request_timeout_s"),
    ("judge0", {"request_timeout_s": 1e300}, "at most 3600"),
    ("sandboxfusion", {"max_wait_s": -5}, "runner_options.max_wait_s must be a number of "
     "seconds at least 0"),
    ("sandboxfusion", {"max_retry_wait_s": True}, "runner_options.max_retry_wait_s"),
    ("piston", {"compile_timeout_s": -1}, "runner_options.compile_timeout_s"),
    ("piston", {"version": ""}, "runner_options.version must be a non-empty text"),
    ("judge0", {"language_id": "71"}, "runner_options.language_id must be a whole number"),
    ("judge0", {"language_id": 0}, "runner_options.language_id"),
    ("judge0", {"api_key_header": "X Auth: y"}, "runner_options.api_key_header must be an "
     "HTTP header name"),
    ("e2b", {"internet": "no"}, "runner_options.internet must be true or false"),
    ("e2b", {"sandbox_url": "file:///etc"}, "runner_options.sandbox_url must be an http(s)"),
])
def test_a_runner_option_of_the_wrong_type_or_range_is_refused_with_its_key(
        runner: str, options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        RewardSet.from_dict(_config(runner, runner_options=options))
    assert "rewards.execution.params" in str(refused.value)
    assert words in str(refused.value), str(refused.value)


def test_the_documented_runner_options_load() -> None:
    RewardSet.from_dict(_config("piston", runner_options={
        "version": "3.12.0", "compile_timeout_s": 20, "request_timeout_s": 30,
        "max_wait_s": 0, "max_retry_wait_s": 60, "api_key_header": "X-Api-Key"}))
    RewardSet.from_dict(_config("judge0", runner_options={"language_id": 71}))


def test_every_option_a_runner_takes_has_a_checked_type() -> None:
    for runner, (own, _) in REMOTE_RUNNERS.items():
        for name in own | {"request_timeout_s", "max_retry_wait_s", "max_wait_s",
                           "api_key_header"}:
            assert option_problem(name, object()) is not None, (runner, name)


def test_concurrency_past_what_a_process_can_hold_is_refused() -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        RewardSet.from_dict(_config("piston", concurrency=3000))
    RewardSet.from_dict(_config("piston", concurrency=256))


def test_local_concurrency_is_bounded_by_the_slots_of_one_pool() -> None:
    """A local pool has a task uid and a judge uid per slot in its 256-uid block: past 128
    slots shared_sandbox_pool would raise at the first sample, so the config is refused instead."""
    def local(concurrency: int) -> dict[str, Any]:
        return {"rewards": {"execution": {"reward": "code_execution", "params": {
            "language": "cpp", "concurrency": concurrency}}}}

    with pytest.raises(ConfigError, match="at most 128 sandbox slots"):
        RewardSet.from_dict(local(129))
    RewardSet.from_dict(local(128))


def test_the_python_rewards_concurrency_has_the_local_bound() -> None:
    """Its concurrency is a pool of that many sandbox zygotes: past 128 is refused."""
    source = "def reward(completion, reference, metadata):\n    return 1.0\n"
    for refused in (3000, 129):
        with pytest.raises(ConfigError, match="concurrency"):
            RewardSet.from_dict({"rewards": {"p": {"reward": "python", "params": {
                "source": source, "concurrency": refused}}}})
    RewardSet.from_dict({"rewards": {"p": {"reward": "python", "params": {
        "source": source, "concurrency": 128}}}})


#: in a process whose descriptor limit (200) is below its concurrency (256, the most
#: allowed): score 8 samples through a Piston server, then 8 more, and count the
#: descriptors left open
_MANY_SLOTS = """
import json, os, resource, sys
sys.path.insert(0, sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from remote_fakes import FakePiston, serving
from rewardkit import RewardSet
before = len(os.listdir("/proc/self/fd"))
with serving(FakePiston) as (url, _):
    rs = RewardSet.from_dict({"rewards": {"execution": {"reward": "code_execution",
        "params": {"runner": "piston", "endpoint": url + "/api/v2", "concurrency": 256}}}})
    rows = [{"completion": "```python\\nprint(int(input()) * 2)\\n```",
             "reference": [{"stdin": str(i), "stdout": str(2 * i)}]} for i in range(8)]
    statuses = []
    for _ in range(2):
        out = rs.score(rows)
        statuses.append([(r.scores["execution"].status, r.scores["execution"].value)
                         for r in out])
    after = len(os.listdir("/proc/self/fd"))
print(json.dumps({"statuses": statuses, "before": before, "after": after}))
"""


def test_many_slots_cost_descriptors_only_for_the_runs_in_flight(tmp_path: Path) -> None:
    env_budget = {"RK_BUDGET_DIR": str(tmp_path / "budget")}
    import os

    done = subprocess.run([sys.executable, "-c", _MANY_SLOTS, str(SANDBOX_TESTS)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env_budget})
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for batch in report["statuses"]:
        assert batch == [["ok", 1.0]] * 8, batch
    # the budget's lock files are opened for the slots used, not for all 256
    assert report["after"] - report["before"] < 50, report
