"""Every pool's slot and judge uids are its own on the node (reliability: sandbox uids).

Before: ``SandboxPool`` took ``uid_base + i`` (default 60000) whatever other pools ran,
so two pools in two processes (two reward services, two Ray workers, two test runs)
shared uids, and one's end-of-task sweep (``kill(-1)`` as the slot uid) or clean-up of a
broken zygote killed the other's running tasks (up to 45 false errors in a test run
while another ran).  Now a pool started as root claims its uids with a lock file per uid
for its life; the processes here are real, separate ones.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rewardkit_sandbox import SandboxPool, SandboxUidsTakenError
from rewardkit_sandbox._uid_claims import (
    DEFAULT_UID_BASE,
    UidsTakenError,
    claim_uids,
    claims_folder,
)
from sandbox_audit import TEST_LIMITS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root claims sandbox uids")

#: a process with a pool of one slot (default uids): prints its uids, then runs a
#: program that sleeps `sleep_s` and prints; prints that result, then waits for stdin
POOL_PROCESS = """
import json, sys
from rewardkit_sandbox import SandboxPool, SandboxLimits
sleep_s, runs = float(sys.argv[1]), int(sys.argv[2])
limits = SandboxLimits(wall_time_s=sleep_s + 20, cpu_time_s=5)
with SandboxPool(size=1, limits=limits) as pool:
    print(json.dumps({"base": pool.uid_base, "uids": pool.slot_uids + pool.judge_uids}),
          flush=True)
    sys.stdin.readline()
    results = [pool.run(f"import time\\ntime.sleep({sleep_s})\\nprint('done')")
               for _ in range(runs)]
    print(json.dumps([[r.status.value, r.stdout, r.signal] for r in results]), flush=True)
    sys.stdin.readline()
"""

#: claims `count` uids from `base` (or the default search) in a folder, prints them, then
#: forks a child that exits at once and one that sleeps, and waits
CLAIM_PROCESS = """
import json, os, sys, time
from rewardkit_sandbox._uid_claims import claim_uids
folder, count = sys.argv[1], int(sys.argv[2])
base = None if sys.argv[3] == "-" else int(sys.argv[3])
claim = claim_uids(count, base, folder)
quick = os.fork()
if quick == 0:
    os._exit(0)  # its copies of the lock descriptors close: the claim must stay
os.waitpid(quick, 0)
sleeper = os.fork()
if sleeper == 0:
    time.sleep(120)
    os._exit(0)
print(json.dumps({"first": claim.first, "sleeper": sleeper}), flush=True)
time.sleep(120)
"""


def _start(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _first_line(process: subprocess.Popen[str]) -> dict:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, process.stderr.read()[-2000:] if process.stderr else ""
    return json.loads(line)


def _stop(*processes: subprocess.Popen[str]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def test_two_pools_in_two_processes_get_distinct_uids_and_spare_each_others_tasks() -> None:
    # the slow process's program sleeps 4 s while the other's 6 programs end one after
    # another, each followed by the zygote's sweep of its slot uid: with shared uids the
    # slow program died of signal 9 (a false error)
    slow, quick = _start(POOL_PROCESS, 4, 1), _start(POOL_PROCESS, 0.05, 6)
    try:
        slow_pool, quick_pool = _first_line(slow), _first_line(quick)
        assert set(slow_pool["uids"]).isdisjoint(quick_pool["uids"]), (slow_pool, quick_pool)
        assert slow.stdin is not None and quick.stdin is not None
        slow.stdin.write("\n")
        slow.stdin.flush()
        time.sleep(0.5)
        quick.stdin.write("\n")
        quick.stdin.flush()
        assert json.loads(quick.stdout.readline()) == [["ok", "done\n", None]] * 6
        assert json.loads(slow.stdout.readline()) == [["ok", "done\n", None]]
    finally:
        _stop(slow, quick)


def test_an_explicit_uid_base_another_process_holds_is_a_clear_error() -> None:
    holder = _start(POOL_PROCESS, 0, 0)
    try:
        held = _first_line(holder)
        with pytest.raises(SandboxUidsTakenError) as raised:
            SandboxPool(size=1, limits=TEST_LIMITS, uid_base=held["uids"][1] - 1)
        message = str(raised.value)
        assert f"sandbox uid {held['uids'][0]}" in message
        assert f"claimed by another live SandboxPool (pid {holder.pid}" in message
        assert "leave uid_base out" in message
        # without uid_base the pool moves to uids nobody holds, and runs
        with SandboxPool(size=1, limits=TEST_LIMITS) as pool:
            assert set(pool.slot_uids + pool.judge_uids).isdisjoint(held["uids"])
            assert pool.run("print(7)").stdout == "7\n"
    finally:
        _stop(holder)


def test_the_zygotes_hold_no_claim_and_close_frees_the_uids() -> None:
    folder = claims_folder()
    with SandboxPool(size=1, limits=TEST_LIMITS) as pool:
        base = pool.uid_base
        for pid in pool.zygote_pids():  # started with close_fds: the claim is the pool's
            fds = os.listdir(f"/proc/{pid}/fd")
            targets = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds]
            assert not [t for t in targets if t.startswith(folder)], targets
        with pytest.raises(UidsTakenError):
            claim_uids(2, base)
    again = claim_uids(2, base)  # the zygotes are gone, the uids free
    again.release()


def test_a_killed_process_frees_its_uids_and_a_forked_child_neither_keeps_nor_frees_them(
    tmp_path: Path,
) -> None:
    folder = str(tmp_path / "claims")  # a folder of this test's: no other run's claims
    base = 63900
    holder = _start(CLAIM_PROCESS, folder, 4, base)
    try:
        held = _first_line(holder)
        assert held["first"] == base
        # held although a forked child has exited (closing its copies)
        with pytest.raises(UidsTakenError, match=rf"uid {base + 2} .*\(pid {holder.pid},"):
            claim_uids(4, base + 2, folder)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        # the sleeping child lives on, but closed its copies at fork: nothing holds them
        os.kill(held["sleeper"], 0)
        freed = claim_uids(4, base, folder)
        assert freed.uids == range(base, base + 4)
        freed.release()
    finally:
        if "held" in locals():  # first: it shares the holder's stdout
            os.kill(held["sleeper"], signal.SIGKILL)
        _stop(holder)


def test_a_range_whose_uids_run_a_process_is_skipped(tmp_path: Path) -> None:
    # a pool that claimed nothing (an older rewardkit) still runs tasks as uid 60001
    uid = DEFAULT_UID_BASE + 1
    squatter = subprocess.Popen(["sleep", "60"], user=uid, group=uid)
    try:
        claim = claim_uids(2, None, str(tmp_path / "claims"))
        assert claim.first > uid, claim.uids
        claim.release()
    finally:
        squatter.kill()
        squatter.wait()

