"""The executor interface: one breaker rule for the worker pool and Ray, one timeout
resolution, and the executor a RewardSet's component gets."""

from __future__ import annotations

from rewardkit import ExecutionMode, RewardSet, Sample, Score, Status
from rewardkit.execution import (
    DEFAULT_TIMEOUT,
    Breaker,
    LocalExecutor,
    Outcome,
    executor_for,
    mode_for,
    resolve_timeout,
)
from rewardkit.execution.executor import BREAKER_MIN_FAILURES


def test_the_breaker_trips_on_a_failure_rate_never_on_a_run_of_failures() -> None:
    burst = Breaker("chunks")
    burst.answered(100)
    for _ in range(40):  # 40 failures in a row after 100 answers: 29% of the units tried
        burst.failed()
    assert not burst.tripped
    hopeless = Breaker()
    for _ in range(BREAKER_MIN_FAILURES - 1):
        hopeless.failed()
    assert not hopeless.tripped  # too few failures to judge, whatever the rate
    hopeless.failed()
    assert hopeless.tripped
    given_up = hopeless.given_up(Score.timeout("exceeded 1s hard timeout"))
    assert given_up.status is Status.TIMEOUT and given_up.value is None
    assert given_up.reason == ("not run: the reward failed on 16 of the 16 samples tried "
                               "in this call (last: exceeded 1s hard timeout)")


def test_the_breaker_needs_nine_failures_in_ten_units_tried() -> None:
    breaker = Breaker()
    breaker.answered(2)
    for _ in range(17):
        breaker.failed()
    assert not breaker.tripped  # 17 of 19: 89%
    breaker.failed()
    assert breaker.tripped  # 18 of 20: 90%


def test_a_component_timeout_is_the_config_s_then_the_reward_s_then_the_default() -> None:
    rs = RewardSet.from_dict({"rewards": {
        "plain": {"reward": "soft_format"},
        "timed": {"reward": "soft_format", "timeout": 2.5},
        "async": {"reward": "soft_format", "mode": "async"}}})
    plain = rs.components["plain"]
    reward = plain.stage_at(0).reward
    assert resolve_timeout(None, reward) == DEFAULT_TIMEOUT
    assert resolve_timeout(2.5, reward) == 2.5
    # a hard timeout needs a process to kill: a timed inline reward runs in a worker
    assert plain.mode is ExecutionMode.INLINE
    assert rs.components["timed"].mode is ExecutionMode.PROCESS
    assert rs.components["async"].mode is ExecutionMode.ASYNC
    assert mode_for(ExecutionMode.ASYNC, 2.5) is ExecutionMode.ASYNC


def test_without_ray_every_component_gets_the_local_executor_and_scores_through_it() -> None:
    rs = RewardSet.from_dict({"executor": "auto", "workers": 1, "rewards": {
        "fmt": {"reward": "soft_format", "timeout": 5}}})
    comp = rs.components["fmt"]
    reward = comp.stage_at(0).reward
    executor = executor_for(rs.config, reward, comp.mode)
    assert isinstance(executor, LocalExecutor)
    samples = [Sample(completion="<think>a</think><answer>1</answer>")]
    out = Outcome(1)
    executor.score(reward, comp.mode, samples, None, None, 5.0, out)
    assert out.score(0).status is Status.OK
    assert out.values == rs.score(samples).values("fmt")
