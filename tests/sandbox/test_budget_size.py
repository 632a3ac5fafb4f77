"""One size per budget and node: the first opener records it, later openers asking for
another size use the recorded one (and warn), a size whose openers have all gone (SIGKILL
included) gives way to the next opener's.  Real processes, as in test_budget.py."""

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

# the same interval depth the budget tests count with
from test_budget import _most_at_once

from rewardkit.execution.budget import BudgetSizeWarning, ExecutionBudget

# one contending process asking for `slots`: `uses` executions of `hold_s` each, logged
# as JSON lines (start, end, the size it got) in `log`
WORKER = """
import json, sys, time
from rewardkit.execution.budget import ExecutionBudget
folder, slots, uses, hold_s, log = sys.argv[1:]
budget = ExecutionBudget("test", slots=int(slots), directory=folder)
with open(log, "a") as out:
    for _ in range(int(uses)):
        with budget.acquire():
            start = time.monotonic()
            time.sleep(float(hold_s))
            end = time.monotonic()
        out.write(json.dumps({"start": start, "end": end, "size": budget.slots}) + "\\n")
"""

# opens the budget with `slots`, holds one slot, says so, and waits to be killed
HOLDER = """
import sys, time
from rewardkit.execution.budget import ExecutionBudget
budget = ExecutionBudget("test", slots=int(sys.argv[2]), directory=sys.argv[1])
with budget.acquire():
    print("held", flush=True)
    time.sleep(600)
"""


def _recorded(folder: Path) -> dict[str, object]:
    record: dict[str, object] = json.loads((folder / "test" / "settings").read_text())
    return record


def _open_quietly(folder: Path, slots: int) -> ExecutionBudget:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetSizeWarning)
        return ExecutionBudget("test", slots=slots, directory=str(folder))


def test_two_sizes_at_once_never_exceed_the_recorded_one(tmp_path: Path) -> None:
    first = ExecutionBudget("test", slots=2, directory=str(tmp_path))  # records 2, stays
    assert _recorded(tmp_path)["slots"] == 2
    log = tmp_path / "log.jsonl"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path), str(slots), "3", "0.15", str(log)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for slots in (2, 5, 2, 5, 5, 2)
    ]
    errors = [worker.communicate(timeout=120)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0] * 6
    spans = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(spans) == 18
    assert {span["size"] for span in spans} == {2}
    assert _most_at_once(spans) == 2  # the recorded limit, and reached; never 5
    for slots, stderr in zip((2, 5, 2, 5, 5, 2), errors, strict=True):
        if slots == 2:
            assert "BudgetSizeWarning" not in stderr
            continue
        assert stderr.count("BudgetSizeWarning") == 1, stderr  # warned once
        assert "has 2 slots" in stderr and "asked for 5" in stderr
        assert "concurrency" in stderr  # how to change it
    assert first.slots == 2


def test_a_later_opener_in_the_same_process_warns_once(tmp_path: Path) -> None:
    first = ExecutionBudget("test", slots=3, directory=str(tmp_path))
    with pytest.warns(BudgetSizeWarning, match=r"has 3 slots .* asked for 6 slots and uses 3 "):
        later = ExecutionBudget("test", slots=6, directory=str(tmp_path))
    assert (first.slots, later.slots) == (3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetSizeWarning)
        again = ExecutionBudget("test", slots=6, directory=str(tmp_path))  # no second warning
    assert again.slots == 3
    with (
        first.acquire(),
        later.acquire(),
        again.acquire(),
        pytest.raises(TimeoutError),
        again.acquire(max_wait_s=0.2),
    ):
        pass  # 3 held: the fourth waits, although two openers asked for 6


def test_a_sigkilled_first_opener_gives_way_to_the_next_size(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), "1"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        while_alive = _open_quietly(tmp_path, 3)
        assert while_alive.slots == 1  # the live first opener's size stands
        del while_alive  # this process leaves the budget's members too
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    after = ExecutionBudget("test", slots=3, directory=str(tmp_path))
    assert after.slots == 3
    assert _recorded(tmp_path)["slots"] == 3
    started = time.monotonic()
    with after.acquire(max_wait_s=2), after.acquire(max_wait_s=2), after.acquire(max_wait_s=2):
        assert time.monotonic() - started < 1.0  # three at once, none left to the dead one


def test_a_settings_file_that_cannot_be_right_is_recorded_anew(tmp_path: Path) -> None:
    folder = tmp_path / "test"
    folder.mkdir(mode=0o700)
    for wrong in ('{"slots": 0, "rate_per_s": null, "burst": 1}', "2\n", '{"slots": 2'):
        (folder / "settings").write_text(wrong)
        first = _open_quietly(tmp_path, 3)
        assert first.slots == 3
        assert _recorded(tmp_path) == {"slots": 3, "rate_per_s": None, "burst": 1.0}
        del first


# opens the budget with `slots`, says which size it got, stays open until `release` exists
OPENER = """
import os, sys, time, warnings
from rewardkit.execution.budget import ExecutionBudget
warnings.simplefilter("ignore")
budget = ExecutionBudget("test", slots=int(sys.argv[2]), directory=sys.argv[1])
print(budget.slots, flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.01)
"""


def test_first_openers_at_the_same_time_agree_on_one_size(tmp_path: Path) -> None:
    release = tmp_path / "release"
    asked = [2, 5, 3, 5, 2, 3]
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(tmp_path), str(slots), str(release)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for slots in asked
    ]
    try:
        sizes = set()
        for opener in openers:
            assert opener.stdout is not None
            sizes.add(int(opener.stdout.readline()))
    finally:
        release.touch()
        for opener in openers:
            opener.wait(timeout=60)
    (size,) = sizes  # one size for every opener, one of those asked
    assert size in asked
    assert _recorded(tmp_path)["slots"] == size
