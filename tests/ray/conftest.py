"""A real three-node Ray cluster on loopback (``ray.cluster_utils.Cluster``: one head and
two worker nodes, one CPU each), started once for the Ray tests and shared by them.

The test rewards (``ray_rewards``) must import on every node: the nodes are started with
this folder on PYTHONPATH, as a real cluster would have the plugin installed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray tests need ray (pip install 'rewardkit[ray]')")

HERE = Path(__file__).resolve().parent
NODES = 3
OBJECT_STORE = 80 * 1024 * 1024

sys.path.insert(0, str(HERE))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == HERE:
            item.add_marker(pytest.mark.slow)
            # under pytest-xdist (--dist loadgroup) one worker runs them all: a second
            # three-node cluster on the other worker would double the cost, not halve it
            item.add_marker(pytest.mark.xdist_group("ray"))


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    from ray.cluster_utils import Cluster

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), *([old] if old else [])])
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "object_store_memory": OBJECT_STORE, "include_dashboard": False})
    for _ in range(NODES - 1):
        cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        from rewardkit.execution import ray as ray_executor

        ray_executor._close_executors()
        ray.shutdown()
        cluster.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
