"""A task child joins its slot's memory cgroup by its one thread (cgroup v1: the
``tasks`` file, without the kernel's global threadgroup lock; issue 42 item 5), and
still the whole task is in it: the program, a thread it starts, a process it forks and a
thread of that process."""

from __future__ import annotations

import json

import pytest
from rewardkit_sandbox import SandboxPool, Status

PROGRAM = r"""
import json, os, threading

def memory_cgroup(path):
    for line in open(path).read().splitlines():
        number, controllers, name = line.split(":", 2)
        if "memory" in controllers.split(",") or (number == "0" and controllers == ""):
            return name
    return None

seen = {"main": memory_cgroup("/proc/self/cgroup")}
box = {}
thread = threading.Thread(target=lambda: box.update(
    thread=memory_cgroup(f"/proc/self/task/{threading.get_native_id()}/cgroup")))
thread.start(); thread.join()
seen.update(box)
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    inner = {}
    t = threading.Thread(target=lambda: inner.update(
        thread=memory_cgroup(f"/proc/self/task/{threading.get_native_id()}/cgroup")))
    t.start(); t.join()
    os.write(write_end, json.dumps({"child": memory_cgroup("/proc/self/cgroup"),
                                    "child_thread": inner["thread"]}).encode())
    os._exit(0)
os.close(write_end)
os.waitpid(pid, 0)
seen.update(json.loads(os.read(read_end, 65536)))
print(json.dumps(seen))
"""


def test_the_program_its_threads_and_its_processes_are_in_the_slot_cgroup(
    contained: SandboxPool,
) -> None:
    if "memory_cgroup" in contained.layers.missing:
        pytest.skip("no memory cgroup on this machine (layer memory_cgroup)")
    ran = contained.run(PROGRAM)
    assert ran.status is Status.OK, (ran.error, ran.stderr)
    seen = json.loads(ran.stdout)
    assert set(seen) == {"main", "thread", "child", "child_thread"}
    names = set(seen.values())
    assert len(names) == 1, seen
    (name,) = names
    assert name is not None and "rewardkit-sandbox-" in name and "-slot" in name, seen
