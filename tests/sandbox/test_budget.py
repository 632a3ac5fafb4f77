"""The node-wide ExecutionBudget with real processes: several contend for its slots and
its request rate, one holding a slot is SIGKILLed; the limits hold and nobody errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rewardkit_sandbox.budget import BudgetWaitTimeout, ExecutionBudget

# one contending process: `uses` executions of `hold_s` each (or, with `tokens`, only
# request tokens), each logged as a JSON line (start, end, queued) in `log`; it says
# "ready" once started and begins when the line "go" comes on its stdin, so that the
# processes contend at once however long each took to start (on a busy machine their
# starts spread over more than one execution, and nobody had to wait a whole one)
WORKER = """
import json, sys, time
from rewardkit_sandbox.budget import ExecutionBudget
folder, slots, rate, uses, hold_s, log, tokens = sys.argv[1:]
budget = ExecutionBudget("test", slots=int(slots), rate_per_s=float(rate) or None,
                         directory=folder)
print("ready", flush=True)
assert sys.stdin.readline() == "go\\n"
with open(log, "a") as out:
    for _ in range(int(uses)):
        if tokens == "1":
            waited = budget.take_token()
            out.write(json.dumps({"at": time.monotonic(), "queued": waited}) + "\\n")
            continue
        with budget.acquire() as ticket:
            start = time.monotonic()
            time.sleep(float(hold_s))
            end = time.monotonic()
        out.write(json.dumps({"start": start, "end": end, "queued": ticket.queued_s}) + "\\n")
"""


def _contend(
    folder: Path,
    *,
    processes: int,
    slots: int,
    uses: int,
    hold_s: float = 0.0,
    rate: float = 0.0,
    tokens: bool = False,
) -> list[dict[str, float]]:
    log = folder / "log.jsonl"
    args = [
        str(folder),
        str(slots),
        str(rate),
        str(uses),
        str(hold_s),
        str(log),
        "1" if tokens else "0",
    ]
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
    for worker in workers:
        assert worker.wait(timeout=120) == 0  # back-pressure, never an error
    return [json.loads(line) for line in log.read_text().splitlines()]


def _most_at_once(spans: list[dict[str, float]]) -> int:
    edges = sorted([(s["start"], 1) for s in spans] + [(s["end"], -1) for s in spans])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def test_processes_never_hold_more_slots_than_the_budget(tmp_path: Path) -> None:
    spans = _contend(tmp_path, processes=6, slots=2, uses=3, hold_s=0.15)
    assert len(spans) == 18
    assert _most_at_once(spans) == 2  # the limit, and reached
    queued = sorted(span["queued"] for span in spans)
    assert queued[-1] > 0.15  # someone waited a whole execution or more
    wall = max(s["end"] for s in spans) - min(s["start"] for s in spans)
    assert wall >= 18 * 0.15 / 2 * 0.95


def test_threads_of_one_process_share_the_same_slots(tmp_path: Path) -> None:
    budget = ExecutionBudget("threads", slots=3, directory=str(tmp_path))
    spans: list[dict[str, float]] = []

    def use() -> None:
        with budget.acquire():
            start = time.monotonic()
            time.sleep(0.05)
            spans.append({"start": start, "end": time.monotonic()})

    threads = [threading.Thread(target=use) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(spans) == 12
    assert _most_at_once(spans) == 3


def test_a_killed_holder_gives_its_slot_back(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time\n"
                "from rewardkit_sandbox.budget import ExecutionBudget\n"
                "b = ExecutionBudget('test', slots=1, directory=sys.argv[1])\n"
                "with b.acquire():\n"
                "    print('held', flush=True)\n"
                "    time.sleep(600)\n"
            ),
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    budget = ExecutionBudget("test", slots=1, directory=str(tmp_path))
    with pytest.raises(BudgetWaitTimeout, match="stayed busy"), budget.acquire(max_wait_s=0.3):
        pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    started = time.monotonic()
    with budget.acquire(max_wait_s=5) as ticket:
        assert ticket.slot == 0
    assert time.monotonic() - started < 0.5


def test_the_request_rate_holds_across_processes(tmp_path: Path) -> None:
    stamps = _contend(tmp_path, processes=4, slots=1, uses=6, rate=10.0, tokens=True)
    times = sorted(stamp["at"] for stamp in stamps)
    assert len(times) == 24
    span = times[-1] - times[0]
    # burst 1 at 10/s: 24 tokens need 2.3 s at the least (a little scheduling slack)
    assert span >= 2.3 * 0.97, span
    for index in range(len(times) - 10):  # any 11 tokens take at least 1 s
        assert times[index + 10] - times[index] >= 0.97


def test_pause_holds_every_request_back(tmp_path: Path) -> None:
    budget = ExecutionBudget("pause", slots=1, rate_per_s=100.0, directory=str(tmp_path))
    budget.take_token()
    other = ExecutionBudget("pause", slots=1, rate_per_s=100.0, directory=str(tmp_path))
    other.pause(0.4)  # e.g. a 429 with Retry-After seen by another process
    assert 0.35 <= budget.take_token() < 1.0


def test_a_torn_bucket_file_is_reset_not_trusted(tmp_path: Path) -> None:
    budget = ExecutionBudget("torn", slots=1, rate_per_s=5.0, directory=str(tmp_path))
    budget.take_token()
    (tmp_path / "torn" / "rate").write_bytes(b"\xff" * 24)  # NaNs
    assert budget.take_token() < 0.5


def test_bad_settings_are_refused_with_a_reason(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="name"):
        ExecutionBudget("../x", slots=1, directory=str(tmp_path))
    with pytest.raises(ValueError, match="slot"):
        ExecutionBudget("x", slots=0, directory=str(tmp_path))
    with pytest.raises(ValueError, match="rate_per_s"):
        ExecutionBudget("x", slots=1, rate_per_s=0, directory=str(tmp_path))


def test_the_scale_page_snippet_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    page = (Path(__file__).parents[2] / "docs" / "scale.md").read_text()
    section = page.split("## One execution budget per node", 1)[1].split("\n## ", 1)[0]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    monkeypatch.setenv("RK_BUDGET_DIR", str(tmp_path))
    exec(compile(snippet, "docs/scale.md", "exec"), {})
    assert float(capsys.readouterr().out) < 1.0
    # a slot's lock file is made when a run first tries it: one of the 8 here
    assert len(list((tmp_path / "my-runner").glob("slot-*.lock"))) == 1


def test_a_forked_child_neither_shares_nor_keeps_its_parents_slots(tmp_path: Path) -> None:
    budget = ExecutionBudget("fork", slots=2, directory=str(tmp_path))
    with budget.acquire():  # the parent holds one slot across the fork
        pid = os.fork()
        if pid == 0:  # the child: one slot left for it, then none
            code = 1
            try:
                with budget.acquire(max_wait_s=2):
                    try:
                        with budget.acquire(max_wait_s=0.3):
                            pass
                    except BudgetWaitTimeout:
                        code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    # a child that outlives its parent's hold does not keep the parent's slots locked
    sleeper = os.fork()
    if sleeper == 0:
        time.sleep(5)
        os._exit(0)
    try:
        with budget.acquire():
            pass  # the parent locks (and unlocks) a slot while the child lives
        other = ExecutionBudget("fork", slots=2, directory=str(tmp_path))
        with other.acquire(max_wait_s=1), other.acquire(max_wait_s=1):
            pass  # both slots free for another holder
    finally:
        os.kill(sleeper, signal.SIGKILL)
        os.waitpid(sleeper, 0)


def test_a_killed_holder_frees_its_slot_even_if_its_forked_child_lives(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import os, sys, time\n"
                "from rewardkit_sandbox.budget import ExecutionBudget\n"
                "b = ExecutionBudget('test', slots=1, directory=sys.argv[1])\n"
                "with b.acquire():\n"
                "    child = os.fork()\n"
                "    if child == 0:\n"
                "        time.sleep(30)\n"
                "        os._exit(0)\n"
                "    print(child, flush=True)\n"
                "    time.sleep(600)\n"
            ),
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    child = int(holder.stdout.readline())
    try:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        budget = ExecutionBudget("test", slots=1, directory=str(tmp_path))
        with budget.acquire(max_wait_s=2) as ticket:  # the child still lives
            assert ticket.slot == 0
    finally:
        os.kill(child, signal.SIGKILL)
