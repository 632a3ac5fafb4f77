"""A process-mode reward that floods memory costs its own worker, never the trainer
(issue 37, item 15).

In a container with a memory limit, the OOM killer picks the process it scores highest:
without help that is the trainer, which holds the most memory. Workers set
``oom_score_adj`` high, so they go first. The test runs a small "trainer" in a memory
cgroup of its own (cgroup v2 or v1, created as root where the machine allows it; else
skipped, saying why) of 480 MiB: it holds 300 MiB, more than the worker can reach,
then scores a reward that allocates without end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

_MIB = 1024 * 1024
LIMIT_BYTES = 480 * _MIB

TRAINER = """
import json, os, sys
from rewardkit import RewardSet, Sample, registry, reward

@reward(mode="process")
def floods_memory(sample: Sample) -> float:
    if "flood" in sample.text:
        hoard = []
        while True:
            hoard.append(bytearray(16 << 20))  # written: every page is charged
    return 1.0

if __name__ == "__main__":
    with open(sys.argv[1], "w") as procs:  # join the test's cgroup, with what we fork
        procs.write("0")
    held = bytearray(os.urandom(1 << 20)) * 300  # the trainer's own 300 MiB
    registry.register(floods_memory, "tests")
    rs = RewardSet.from_dict({"workers": 1, "rewards": {
        "r": {"reward": "floods_memory", "mode": "process", "timeout": 120}}})
    scores = rs.score([Sample(completion="flood"), Sample(completion="fine")]).scores("r")
    print(json.dumps({"alive": len(held), "statuses": [str(s.status) for s in scores],
                      "values": [s.value for s in scores]}), flush=True)
"""


@pytest.fixture
def memory_cgroup() -> Iterator[dict[str, str]]:
    """A memory cgroup of ``LIMIT_BYTES`` beside ours, or a skip saying why there is none."""
    if os.geteuid() != 0:
        pytest.skip("creating a memory cgroup needs root here")
    sandbox = pytest.importorskip("rewardkit_sandbox._memory_cgroup")
    cgroups = sandbox.MemoryCgroups(1)
    files = cgroups.for_slot(0)
    if files is None:
        pytest.skip(f"no memory cgroup on this machine: {cgroups.detail}")
    try:
        sandbox.SlotMemory(files).set_limit(LIMIT_BYTES)
        yield {"procs": os.path.join(files["folder"], "cgroup.procs"),
               "events": os.path.join(files["folder"], files["events"])}
    finally:
        cgroups.close()


def _oom_kills(events: str) -> int:
    for line in Path(events).read_text().splitlines():
        if line.startswith("oom_kill "):
            return int(line.split()[1])
    return 0


def test_a_reward_flooding_memory_is_killed_and_the_trainer_lives(
    memory_cgroup: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "trainer.py"
    script.write_text(textwrap.dedent(TRAINER))
    done = subprocess.run(
        [sys.executable, str(script), memory_cgroup["procs"]],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["alive"] == 300 * _MIB
    assert report["statuses"] == ["error", "ok"] and report["values"] == [None, 1.0]
    assert _oom_kills(memory_cgroup["events"]) >= 1  # the cgroup's OOM killer did act


def test_a_worker_offers_itself_to_the_oom_killer_first() -> None:
    from rewardkit import RewardSet, Sample

    rs = RewardSet.from_dict({"workers": 1, "rewards": {
        "w": {"reward": "worker_pid", "mode": "process"}}})
    pid = int(rs.score([Sample(completion="x")]).scores("w")[0].value or 0)
    assert pid != os.getpid()
    assert Path(f"/proc/{pid}/oom_score_adj").read_text().strip() == "800"
