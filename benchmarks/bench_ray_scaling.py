"""Ray executor scaling: a process-heavy reward on 1, 2 and 4 nodes of a local cluster.

    python benchmarks/bench_ray_scaling.py [--quick] [--json PATH]

Each size is a fresh ``ray.cluster_utils.Cluster`` on loopback whose nodes all get the
same CPU share (``num_cpus=1`` each, so one scoring actor and one worker process per
node); the reward is ``bench_cpu_bound`` (about 5 ms of pure-Python arithmetic per
sample) in process mode under ``executor: ray``. Reported: samples/s per size and the
speed-up over one node, next to local scoring with one worker as the reference. The
nodes share this machine's physical cores: past that count, more nodes cannot add speed
(the figures say how close the executor gets to the cores it has).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_rewards import CPU_BOUND  # noqa: E402

from rewardkit import RewardSet, Sample, registry  # noqa: E402
from rewardkit.execution.pool import usable_cores  # noqa: E402

OBJECT_STORE = 80 * 1024 * 1024


def rate_on_cluster(nodes: int, samples: list[Sample]) -> float:
    import ray
    from ray.cluster_utils import Cluster

    from rewardkit.execution import ray as ray_executor

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": OBJECT_STORE, "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        rs = RewardSet.from_dict({"executor": "ray",
                                  "rewards": {"cpu": {"reward": CPU_BOUND.name}}})
        rs.score(samples[: 8 * nodes])  # actors and their workers up, reward loaded
        t0 = time.perf_counter()
        result = rs.score(samples)
        elapsed = time.perf_counter() - t0
        assert all(s.status == "ok" for s in result.scores("cpu")), "a sample failed"
        return len(samples) / elapsed
    finally:
        ray_executor._close_executors()
        ray.shutdown()
        cluster.shutdown()


def rate_local(samples: list[Sample]) -> float:
    rs = RewardSet.from_dict({"workers": 1, "rewards": {"cpu": {"reward": CPU_BOUND.name}}})
    rs.score(samples[:8])
    t0 = time.perf_counter()
    rs.score(samples)
    return len(samples) / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])
    registry.register(CPU_BOUND, "benchmarks")
    n = 240 if args.quick else 1200
    samples = [Sample(prompt=str(i), completion=str(i)) for i in range(n)]
    local = rate_local(samples)
    rates = {size: rate_on_cluster(size, samples) for size in (1, 2, 4)}
    cores = usable_cores()
    print(f"Ray executor scaling: {n} samples of a ~5 ms process-mode reward, "
          f"{cores} physical core(s) on this machine")
    print(f"  local, 1 worker        {local:8.1f} samples/s")
    for size, rate in rates.items():
        print(f"  Ray, {size} node(s)        {rate:8.1f} samples/s  "
              f"x{rate / rates[1]:.2f} vs 1 node")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "samples": n, "cores": cores, "local_1_worker": local,
            "nodes": {str(k): v for k, v in rates.items()},
            "speedup": {str(k): v / rates[1] for k, v in rates.items()},
        }, indent=2))


if __name__ == "__main__":
    main()
