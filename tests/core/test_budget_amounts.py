"""The node budget's buckets charged by amount (what a judge's TPM needs): a request
costing more than the burst waits for a full bucket and leaves it in debt, later takers
wait the debt out, and ``charge`` corrects an estimate both ways."""

from __future__ import annotations

import time
from pathlib import Path

from rewardkit import ExecutionBudget


def _timed(budget: ExecutionBudget, amount: float) -> float:
    started = time.monotonic()
    budget.take_token(amount)
    return time.monotonic() - started


def test_an_amount_above_the_burst_leaves_a_debt_that_later_takers_wait_out(
        tmp_path: Path) -> None:
    budget = ExecutionBudget("tpm", slots=1, rate_per_s=100, burst=10,
                             directory=str(tmp_path))
    assert budget.try_take(30) == 0.0         # a full bucket pays it at once
    assert _timed(budget, 1) >= 0.18          # 20 in debt + 1, at 100/s: ~0.21 s


def test_charge_corrects_the_estimate_up_and_down(tmp_path: Path) -> None:
    budget = ExecutionBudget("usage", slots=1, rate_per_s=100, burst=10,
                             directory=str(tmp_path))
    budget.take_token(10)
    budget.charge(20)                         # it cost 20 more than estimated
    assert _timed(budget, 1) >= 0.18
    budget.take_token(10)
    budget.charge(-10)                        # it cost 10 less: given back
    assert budget.try_take(5) == 0.0          # paid at once (a wall bound flaked under load)


def test_two_budgets_of_one_name_share_the_bucket(tmp_path: Path) -> None:
    """Two objects (as two processes would hold) over one folder: one's debt is the
    other's wait."""
    one = ExecutionBudget("shared", slots=1, rate_per_s=50, burst=5, directory=str(tmp_path))
    two = ExecutionBudget("shared", slots=1, rate_per_s=50, burst=5, directory=str(tmp_path))
    one.take_token(15)
    assert _timed(two, 1) >= 0.18             # (10 + 1) / 50 s


def test_a_charge_leaves_at_most_a_minute_of_debt(tmp_path: Path) -> None:
    """One answer claiming a cost it cannot have had (a billion tokens) holds the node
    back for ``CHARGE_DEBT_S`` of the rate, not for a billion tokens' worth (115 days at
    100/s); the bucket's own state says how long the next taker waits."""
    from rewardkit.execution.budget import CHARGE_DEBT_S

    budget = ExecutionBudget("flood", slots=1, rate_per_s=100, burst=10,
                             directory=str(tmp_path))
    budget.charge(1e9)
    wait = budget.try_take(1)
    assert CHARGE_DEBT_S * 0.9 <= wait <= CHARGE_DEBT_S * 1.2, wait
    budget.charge(1e9)                        # a second one digs no deeper
    assert budget.try_take(1) <= CHARGE_DEBT_S * 1.2


def test_try_take_takes_or_says_how_long_to_wait(tmp_path: Path) -> None:
    budget = ExecutionBudget("try", slots=1, rate_per_s=1, burst=1,
                             directory=str(tmp_path))
    assert budget.try_take(1) == 0.0          # a full bucket pays at once
    # empty now: ~1 s at 1/s, less what refilled between the calls (at 10/s a 50 ms
    # stall of a loaded machine between them left too little of a 0.1 s wait to check)
    wait = budget.try_take(1)
    assert 0.5 <= wait <= 1.1, wait
    time.sleep(wait)
    assert budget.try_take(1) == 0.0
