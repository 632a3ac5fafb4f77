"""One request rate (and burst) per budget and node, recorded with its slots: two
processes asking 5/s and 20/s of one budget share the recorded 5/s, not whichever rate
last refilled the bucket.  Real processes, timed with CLOCK_MONOTONIC (shared by every
process of the node), as in test_budget_size.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from rewardkit.execution.budget import BudgetSizeWarning, ExecutionBudget

# one process asking for `rate` requests/s: takes `uses` tokens, logs when it got each
# and the rate it was given
TAKER = """
import json, sys, time
from rewardkit.execution.budget import ExecutionBudget
folder, rate, uses, log = sys.argv[1:]
budget = ExecutionBudget("test", slots=4, rate_per_s=float(rate), directory=folder)
stamps = []
for _ in range(int(uses)):
    budget.take_token()
    stamps.append(time.monotonic())
with open(log, "a") as out:
    out.write(json.dumps({"asked": float(rate), "rate": budget.rate_per_s, "at": stamps}) + "\\n")
"""

# opens the budget at `rate`, takes a token, says so, and waits to be killed
HOLDER = """
import sys, time
from rewardkit.execution.budget import ExecutionBudget
budget = ExecutionBudget("test", slots=1, rate_per_s=float(sys.argv[2]), directory=sys.argv[1])
budget.take_token()
print("held", flush=True)
time.sleep(600)
"""


def _most_in_one_second(stamps: list[float]) -> int:
    stamps = sorted(stamps)
    most, first = 0, 0
    for last, stamp in enumerate(stamps):
        while stamp - stamps[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def test_two_rates_at_once_never_exceed_the_recorded_one(tmp_path: Path) -> None:
    first = ExecutionBudget("test", slots=4, rate_per_s=5, directory=str(tmp_path))
    log = tmp_path / "log.jsonl"
    takers = [
        subprocess.Popen(
            [sys.executable, "-c", TAKER, str(tmp_path), str(rate), "12", str(log)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for rate in (5, 20)
    ]
    errors = [taker.communicate(timeout=120)[1] for taker in takers]
    assert [taker.returncode for taker in takers] == [0, 0], errors
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert {run["rate"] for run in runs} == {5.0}
    stamps = sorted(stamp for run in runs for stamp in run["at"])
    assert len(stamps) == 24
    # a bucket of 5/s, burst 1 grants at most 5 + 1 in any second; one more for a grant
    # whose stamp a loaded machine took late.  At 20/s (the fault) it is about 20.
    assert _most_in_one_second(stamps) <= 7
    overall = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    assert 3.0 < overall <= 5.0 * 1.05  # the recorded rate, and reached
    slow, fast = errors
    assert "BudgetSizeWarning" not in slow
    assert fast.count("BudgetSizeWarning") == 1, fast  # warned once, for many tokens
    assert "has 5 requests/s" in fast and "asked for 20 requests/s" in fast
    assert "slots" not in fast.split("asked for")[1].split(" and uses")[0]  # same slots
    assert "requests_per_s" in fast  # how to change it
    assert first.rate_per_s == 5


def test_a_later_opener_warns_once_naming_every_setting_that_differs(tmp_path: Path) -> None:
    first = ExecutionBudget("test", slots=2, rate_per_s=5, burst=1, directory=str(tmp_path))
    with pytest.warns(
        BudgetSizeWarning,
        match=r"has 5 requests/s, burst 1 .* asked for 20 requests/s, burst 4 and uses "
        r"5 requests/s, burst 1",
    ):
        later = ExecutionBudget("test", slots=2, rate_per_s=20, burst=4, directory=str(tmp_path))
    assert (later.slots, later.rate_per_s, later.burst) == (2, 5, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetSizeWarning)
        again = ExecutionBudget("test", slots=2, rate_per_s=20, burst=4, directory=str(tmp_path))
        same = ExecutionBudget("test", slots=2, rate_per_s=5, directory=str(tmp_path))
    assert again.rate_per_s == same.rate_per_s == 5
    with pytest.warns(BudgetSizeWarning, match=r"has 2 slots, 5 requests/s .* asked for 3 "):
        ExecutionBudget("test", slots=3, rate_per_s=None, directory=str(tmp_path))
    with pytest.warns(BudgetSizeWarning, match=r"asked for no request rate and uses 5"):
        unlimited = ExecutionBudget("test", slots=2, directory=str(tmp_path))
    started = time.monotonic()
    for _ in range(4):  # the recorded rate holds for an opener that asked for none
        unlimited.take_token()
    assert time.monotonic() - started >= 3 / 5 - 0.02
    assert first.burst == 1


def test_a_sigkilled_first_opener_gives_way_to_the_next_rate(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), "5"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetSizeWarning)
            while_alive = ExecutionBudget(
                "test", slots=1, rate_per_s=20, burst=2, directory=str(tmp_path)
            )
        assert (while_alive.rate_per_s, while_alive.burst) == (5, 1)  # the live one's
        del while_alive  # this process leaves the budget's members too
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetSizeWarning)
        after = ExecutionBudget("test", slots=1, rate_per_s=20, burst=2, directory=str(tmp_path))
    assert (after.rate_per_s, after.burst) == (20, 2)
    record = json.loads((tmp_path / "test" / "settings").read_text())
    assert record == {"slots": 1, "rate_per_s": 20.0, "burst": 2.0}
    started = time.monotonic()
    for _ in range(11):
        after.take_token()
    took = time.monotonic() - started
    # 20/s with a burst of 2: at least (11 - 2) / 20 s; the dead one's 5/s would be 2 s
    assert 9 / 20 - 0.02 <= took < 1.5
