"""What a task child's join of its slot's memory cgroup costs in wall time (issue 42).

    sudo python benchmarks/bench_cgroup_join.py [--n 15] [--gap 0.2]

A fresh forked child (one thread, as a sandbox task child) writes ``0`` into a v1 memory
cgroup's ``cgroup.procs`` (its whole thread group: the kernel takes its global
threadgroup lock for writing and waits for an RCU grace period unless another cgroup
write came just before) or ``tasks`` (the calling thread only: no global lock), ``--n``
times each with ``--gap`` seconds between joins (a build task and its run task are
further apart than a grace period). Wall time of the write, median and largest, and the
child's cgroup checked after each. Needs root and a cgroup v1 memory hierarchy (under
v2 a thread cannot leave its domain alone, and the sandbox writes ``cgroup.procs``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

HIERARCHY = "/sys/fs/cgroup/memory"


def load() -> str:
    with open("/proc/loadavg") as handle:
        return " ".join(handle.read().split()[:3])


def joins(folder: str, name: str, n: int, gap: float) -> list[float]:
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CLOEXEC)
    took: list[float] = []
    try:
        for _ in range(n):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                t0 = time.perf_counter()
                os.write(fd, b"0")
                t1 = time.perf_counter()
                with open("/proc/self/cgroup") as handle:
                    inside = os.path.basename(folder) in handle.read()
                os.write(write_end, f"{t1 - t0} {int(inside)}".encode())
                os._exit(0)
            os.close(write_end)
            os.waitpid(pid, 0)
            seconds, inside = os.read(read_end, 100).split()
            os.close(read_end)
            assert inside == b"1", "the child is not in the cgroup"
            took.append(float(seconds))
            time.sleep(gap)
    finally:
        os.close(fd)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=15)
    parser.add_argument("--gap", type=float, default=0.2)
    args = parser.parse_args()
    if os.geteuid() != 0 or not os.path.exists(os.path.join(HIERARCHY, "tasks")):
        raise SystemExit(f"needs root and a cgroup v1 memory hierarchy at {HIERARCHY}")
    folder = os.path.join(HIERARCHY, f"rewardkit-bench-join-{os.getpid()}")
    os.mkdir(folder)
    try:
        print(f"load {load()}; "
              f"kernel {os.uname().release}; {args.n} joins each, {args.gap} s apart")
        for name in ("cgroup.procs", "tasks"):
            took = joins(folder, name, args.n, args.gap)
            print(f"  {name:<13} median {statistics.median(took) * 1e3:.3f} ms, "
                  f"largest {max(took) * 1e3:.3f} ms")
        print(f"load {load()}")
    finally:
        os.rmdir(folder)


if __name__ == "__main__":
    main()
