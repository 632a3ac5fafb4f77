"""The fault model: a misbehaving reward costs only its own scores."""

from __future__ import annotations

import threading
import time

import pytest

from rewardkit import RewardSet, Status

SAMPLES = [
    {"prompt": "p", "completion": "fine"},
    {"prompt": "p", "completion": "boom hang die nan text"},
    {"prompt": "p", "completion": "also fine"},
]


def score_with(bad: str, **component: object) -> tuple[RewardSet, object]:
    rs = RewardSet.from_dict({"rewards": {"good": {"reward": "good"},
                                          "bad": {"reward": bad, **component}}})
    return rs, rs.score(SAMPLES)


@pytest.mark.parametrize(
    ("bad", "status", "reason_part"),
    [
        ("raises", Status.ERROR, "ValueError: boom"),
        ("returns_nan", Status.ERROR, "nan"),
        ("returns_text", Status.ERROR, "returned str"),
        ("dies", Status.ERROR, "exited with code 3"),
    ],
)
def test_failure_costs_only_that_sample_of_that_reward(bad, status, reason_part):
    _, res = score_with(bad)
    assert res.values("good") == [4.0, 10.0, 9.0]
    assert res.values("bad") == [1.0, None, 1.0]
    failed = res[1].scores["bad"]
    assert failed.status is status
    assert reason_part in failed.reason
    assert res.totals == [5.0, None, 10.0]


def test_hanging_reward_times_out_and_the_rest_is_scored():
    start = time.monotonic()
    _, res = score_with("hangs", timeout=1.0)
    elapsed = time.monotonic() - start
    assert res[1].scores["bad"].status is Status.TIMEOUT
    assert res.values("bad") == [1.0, None, 1.0]
    assert res.values("good") == [4.0, 10.0, 9.0]
    assert elapsed < 1.0 + 8.0  # timeout plus a worker restart on a busy machine, not a hang


def test_hard_timeout_works_outside_the_main_thread():
    box: dict[str, object] = {}

    def work() -> None:
        box["res"] = score_with("hangs", timeout=0.5)[1]

    t = threading.Thread(target=work)
    t.start()
    t.join(15)
    assert not t.is_alive()
    assert box["res"][1].scores["bad"].status is Status.TIMEOUT  # type: ignore[index]


def test_timed_out_worker_is_replaced_and_pool_keeps_serving():
    rs = RewardSet.from_dict({"rewards": {"h": {"reward": "hangs", "timeout": 0.5}}})
    first = rs.score([{"completion": "hang"}, {"completion": "ok"}])
    again = rs.score([{"completion": "ok"}, {"completion": "ok"}])
    assert first.values("h") == [None, 1.0]
    assert again.values("h") == [1.0, 1.0]


def test_wrong_number_of_group_values_errors_the_group_only():
    rs = RewardSet.from_dict({"rewards": {"good": {"reward": "good"},
                                          "wc": {"reward": "wrong_count"}}})
    res = rs.score(SAMPLES)
    assert all(s.status is Status.ERROR for s in res.scores("wc"))
    assert "returned 4 values for 3 samples" in res[0].scores["wc"].reason
    assert res.values("good") == [4.0, 10.0, 9.0]


def test_on_error_ignore_sums_the_components_that_scored():
    rs = RewardSet.from_dict({"on_error": "ignore",
                              "rewards": {"good": {"reward": "good"},
                                          "bad": {"reward": "raises"}}})
    assert rs.score(SAMPLES).totals == [5.0, 10.0, 10.0]


def test_process_workers_are_reused_across_calls():
    rs = RewardSet.from_dict({"rewards": {"pid": {"reward": "worker_pid"}}})
    batch = [{"completion": str(i)} for i in range(40)]
    first = {v for v in rs.score(batch).values("pid")}
    second = {v for v in rs.score(batch).values("pid")}
    assert first == second
    assert 1 <= len(first) <= 2


def test_async_reward_times_out_per_sample():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "slow_async", "timeout": 0.3,
                                                "params": {"delay": 5}}}})
    start = time.monotonic()
    res = rs.score([{"completion": "slow"}, {"completion": "fast"}])
    assert time.monotonic() - start < 4  # 0.3 s timeout, not the 5 s sleep
    assert res[0].scores["a"].status is Status.TIMEOUT
    assert res.values("a")[1] == 1.0


def test_oversize_completion_is_refused_unparsed():
    rs = RewardSet.from_dict({"limits": {"max_completion_chars": 100},
                              "rewards": {"good": {"reward": "good"}}})
    res = rs.score([{"completion": "x" * 101}, {"completion": "short"}])
    refused = res[0].scores["good"]
    assert refused.status is Status.ERROR
    assert "too large" in refused.reason
    assert res.values("good") == [None, 5.0]


def test_oversize_value_gives_a_penalty_instead():
    rs = RewardSet.from_dict({"limits": {"max_completion_chars": 10, "oversize_value": -1},
                              "rewards": {"good": {"reward": "good"}}})
    res = rs.score([{"completion": "x" * 11}])
    assert res.values("good") == [-1.0]
    assert res.totals == [-1.0]


def test_segfaulting_reward_is_an_error_naming_the_signal():
    rs = RewardSet.from_dict({"rewards": {"s": {"reward": "segfaults"}}})
    res = rs.score([{"completion": "crash"}, {"completion": "fine"}])
    assert res[0].scores["s"].status is Status.ERROR
    assert "SIGSEGV" in res[0].scores["s"].reason
    assert res.values("s")[1] == 1.0


def test_concurrent_scoring_from_threads_gets_every_answer():
    rs = RewardSet.from_dict({"rewards": {"h": {"reward": "hangs", "timeout": 2}}})
    batch = [{"completion": str(i)} for i in range(30)]
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(rs.score(batch)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 3
    assert all(r.values("h") == [1.0] * 30 for r in results)  # type: ignore[attr-defined]


def test_slow_reward_setup_does_not_count_against_the_per_sample_timeout():
    rs = RewardSet.from_dict({"workers": 1,
                              "rewards": {"s": {"reward": "slow_setup", "timeout": 0.5}}})
    assert rs.score([{"completion": "a"}, {"completion": "b"}]).values("s") == [1.0, 1.0]


def test_reward_that_crashes_on_every_input_is_given_up_after_a_few_restarts():
    rs = RewardSet.from_dict({"rewards": {"good": {"reward": "good"},
                                          "x": {"reward": "always_dies"}}})
    start = time.monotonic()
    res = rs.score([{"completion": str(i)} for i in range(200)])
    assert time.monotonic() - start < 120  # not 200 worker restarts (~16 on a busy machine)
    scores = res.scores("x")
    assert all(s.status is Status.ERROR for s in scores)
    assert sum("exited with code 9" in s.reason and not s.reason.startswith("not run")
               for s in scores) <= 16 + 2  # the tries, plus in-flight items of other workers
    assert any(s.reason.startswith("not run: the reward failed on") for s in scores)
    assert res.values("good") == [1.0 if i < 10 else 2.0 if i < 100 else 3.0
                                  for i in range(200)]
    healthy = RewardSet.from_dict({"rewards": {"d": {"reward": "dies"}}})
    assert healthy.score([{"completion": "fine"}]).values("d") == [1.0]  # pool still serves


def test_worker_killed_while_idle_is_replaced_without_blaming_a_sample():
    import os
    import signal

    from rewardkit.execution.pool import shared_pool

    rs = RewardSet.from_dict({"rewards": {"d": {"reward": "dies"}}})
    rs.score([{"completion": "warm"}])
    for pid in shared_pool().pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    res = rs.score([{"completion": "a"}, {"completion": "b"}])
    assert res.values("d") == [1.0, 1.0]
