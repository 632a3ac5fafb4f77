"""math_answer's symbolic grading is bounded by ``symbolic_timeout``, inline or in a worker.

On real Omni-MATH golds about 1% of an 8-answer batch ran past the 10 s hard timeout
(math-verify called with its signal timeouts off, sympy running until the worker was
killed) and was masked; the same pair timed out again for each completion of its group,
and a ``mode: inline`` component hung. The pair below is one of them, written as
equations: math-verify expands the gamma functions of ``\\binom{n+m-1}{m}^{7}`` for 5-12
s (the bare pair is now shown different numerically before sympy, by
:mod:`~rewardkit.builtin.math.disproof`; equations still reach sympy's ``simplify``). Here
it must come back graded (status ok, value ``wrong``, cut short by ``symbolic_timeout``)
inside the hard timeout, in a worker, inline and off the main thread; and a group of
identical slow completions is graded once. ``symbolic_timeout`` counts CPU seconds of the
grading thread, so an ordinary pair keeps its verdict on a loaded machine.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from rewardkit import RewardSet, Sample, Status, get_reward
from rewardkit.builtin.math import reward as math_module
from rewardkit.builtin.math.deadline import SymbolicTimeout, bounded, deadline_left

GOLD = "y = \\binom{n+m-1}{m}^{2}"
SLOW = "The final answer is $\\boxed{y = \\binom{n+m-1}{m}^{7}}$"
#: the component's hard timeout (wall time): room for 1 s of symbolic CPU time on a
#: loaded machine (3 s ran out at load 6 on 2 cores); sympy left alone takes 5-12 s CPU
#: on this pair, so a grading not cut by the deadline still fails the reason's check
HARD = 30.0


def _slow_sample(prompt: str = "How many?") -> Sample:
    return Sample(prompt=prompt, completion=SLOW, reference=GOLD)


def _graded_wrong(score: Any) -> None:
    assert score.status is Status.OK, score
    assert score.value == 0.0
    assert "symbolic_timeout" in score.reason


def test_the_slow_pair_is_wrong_in_a_worker_not_a_timeout() -> None:
    rs = RewardSet.from_dict({"rewards": {"math": {
        "reward": "math_answer", "timeout": HARD, "params": {"symbolic_timeout": 1.0}}},
        "workers": 1})
    # the worker has loaded math-verify (a first symbolic sample pays for the import
    # within its hard timeout, not within symbolic_timeout)
    rs.score([Sample(completion="$\\boxed{x+1}$", reference="1+x")] * 4)
    result = rs.score([_slow_sample(), Sample(completion="$\\boxed{x+1}$", reference="1+x")])
    _graded_wrong(result[0].scores["math"])
    assert result[1].scores["math"].value == 1.0  # the worker goes on grading


def test_the_slow_pair_is_bounded_inline() -> None:
    rs = RewardSet.from_dict({"rewards": {"math": {
        "reward": "math_answer", "mode": "inline", "params": {"symbolic_timeout": 1.0}}}})
    _graded_wrong(rs.score([_slow_sample("inline")])[0].scores["math"])


def test_the_slow_pair_is_bounded_off_the_main_thread() -> None:
    reward = get_reward("math_answer")({"symbolic_timeout": 1.0})
    got: list[Any] = []
    worker = threading.Thread(target=lambda: got.append(reward.score(_slow_sample("thread"))))
    worker.start()
    worker.join(60)
    assert not worker.is_alive()
    _graded_wrong(got[0])


def test_a_group_of_identical_slow_completions_is_graded_once(monkeypatch) -> None:
    calls: list[int] = []
    real = math_module._symbolic_verdict

    def counted(sample: Sample, params: Any) -> Any:
        calls.append(1)
        return real(sample, params)

    monkeypatch.setattr(math_module, "_symbolic_verdict", counted)
    rs = RewardSet.from_dict({"rewards": {"math": {
        "reward": "math_answer", "mode": "inline", "params": {"symbolic_timeout": 1.0}}}})
    result = rs.score([_slow_sample("group of eight")] * 8)
    for row in result:
        _graded_wrong(row.scores["math"])
    assert len(calls) == 1


def test_a_root_of_huge_powers_is_decided_not_cut_short() -> None:
    # an Omni-MATH gold and the same with one digit changed: math-verify calls them equal
    # after rounding, and the exact check used to evaluate the root of their huge
    # rationals, which has sympy factor ~5,600-bit numbers in C calls no deadline can cut
    # (32 s inline, past the hard timeout in a worker)
    reward = get_reward("math_answer")({"symbolic_timeout": 3.0})
    score = reward.score(Sample(
        completion="The final answer is $\\boxed{\\sqrt{\\frac{7^{2009}-1}{3 \\cdot 2^{2008}-1}}}$",
        reference="\\sqrt{\\frac{2^{2009}-1}{3 \\cdot 2^{2008}-1}}"))
    assert score.status is Status.OK and score.value == 0.0, score
    assert "symbolic_timeout" not in score.reason
    same = reward.score(Sample(
        completion="The final answer is $\\boxed{\\sqrt{\\frac{2^{2009}-1}{3 \\cdot 2^{2008}-1}}}$",
        reference="\\sqrt{\\frac{2^{2009}-1}{3 \\cdot 2^{2008}-1}}"))
    assert same.value == 1.0, same


def test_an_ordinary_pair_keeps_its_verdict_under_the_bound() -> None:
    reward = get_reward("math_answer")({"symbolic_timeout": 1.0})
    # a first pair (not asserted) loads the parser and sympy, as in any scoring process:
    # that one-time cost took the pair below past 1 s on a loaded machine (pytest -n 2)
    reward.score(Sample(completion="$\\boxed{(a+b)^2}$", reference="a^2 + 2ab + b^2"))
    right = reward.score(Sample(completion="$\\boxed{\\sin^2 x + \\cos^2 x}$", reference="1"))
    assert right.status is Status.OK and right.value == 1.0, right


def test_bounded_interrupts_python_and_leaves_nothing_pending() -> None:
    def spin() -> None:
        while True:
            pass

    for _ in range(3):
        with pytest.raises(SymbolicTimeout):
            bounded(0.2, spin)
        total = sum(range(2_000_000))  # no interruption left to arrive later
        assert total > 0
    assert bounded(5.0, lambda: 42) == 42
    assert deadline_left() is None


def test_the_deadline_counts_the_threads_cpu_time_not_the_wall_clock() -> None:
    # a step that waits (here: sleeps) spends no CPU: a loaded machine, where the grading
    # thread waits for a core, must not cut an ordinary pair short
    def wait_then_spin() -> float:
        time.sleep(0.6)
        started = time.thread_time()
        while time.thread_time() - started < 0.1:
            pass
        return 1.0

    assert bounded(0.4, wait_then_spin) == 1.0


def test_an_inner_step_keeps_the_sooner_outer_deadline() -> None:
    def inner() -> float | None:
        return bounded(60.0, deadline_left)

    left = bounded(1.0, inner)
    assert left is not None and left <= 1.0


@pytest.mark.parametrize("seconds", [0, -1, 3601])
def test_symbolic_timeout_is_validated(seconds: float) -> None:
    with pytest.raises(Exception, match="symbolic_timeout"):
        RewardSet.from_dict({"rewards": {"math": {
            "reward": "math_answer", "params": {"symbolic_timeout": seconds}}}})


def test_a_symbolic_reference_is_parsed_once_for_its_group() -> None:
    math_module._gold_once.cache_clear()
    reward = get_reward("math_answer")()
    gold = "2\\sin x + \\frac{1}{3}"
    # two boxes each: the symbolic path (math-verify), not the exact fast path
    group = [Sample(completion=f"First $\\boxed{{{k}}}$, then $\\boxed{{{gold}}}$.", reference=gold)
             for k in range(8)]
    scores = [reward.score(sample) for sample in group]
    assert all(score.status is Status.OK for score in scores), scores
    info = math_module._gold_once.cache_info()
    assert (info.misses, info.hits) == (1, 7)
