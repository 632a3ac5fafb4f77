"""A stand-in for an EasyR1 driver on a Ray cluster: every save runs one Ray task per
node that writes that node's FSDP shard into the node's own checkpoint folder, then the
driver writes dataloader.pt and, last, checkpoint_tracker.json (as EasyR1 does).

Arguments (OmegaConf style, appended by the entrypoint): trainer.save_checkpoint_path=D
[trainer.load_checkpoint_path=D/global_step_N]. Environment: STUB_LOG, STUB_STEPS
(default 4), STUB_HANG_AT (hang inside that save, before the tracker).
"""

import json
import os
import sys
import time
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


def event(text: str) -> None:
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as f:
        f.write(text + "\n")


@ray.remote(num_cpus=0)
def save_shard(step: int, rank: int, world: int) -> str:
    # the node's own disk: the same path on every real node, one folder per node here
    root = Path(os.environ["REWARDKIT_CHECKPOINT_DIR"])
    actor = root / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True, exist_ok=True)
    (actor / f"model_world_size_{world}_rank_{rank}.pt").write_text(f"s{step}r{rank}")
    return str(root)


@ray.remote(num_cpus=0)
def count_shards(step: int, world: int) -> int:
    actor = Path(os.environ["REWARDKIT_CHECKPOINT_DIR"]) / f"global_step_{step}" / "actor"
    names = (f"model_world_size_{world}_rank_{r}.pt" for r in range(world))
    return sum(1 for name in names if (actor / name).is_file())


def main() -> int:
    args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    save = Path(args["trainer.save_checkpoint_path"])
    ray.init(logging_level="ERROR", log_to_driver=False)
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    world = len(nodes)

    def on_each_node(fn, *a):
        strategy = [NodeAffinitySchedulingStrategy(n, soft=False) for n in nodes]
        return ray.get([fn.options(scheduling_strategy=s).remote(*a) for s in strategy])

    start = 0
    if "trainer.load_checkpoint_path" in args:
        start = int(args["trainer.load_checkpoint_path"].rsplit("global_step_", 1)[1])
        found = on_each_node(count_shards, start, world)
        if found != [world] * world:
            print(f"resume step {start}: shards per node {found}", file=sys.stderr)
            return 3
    event(f"start {start} nodes {world}")
    for step in range(start + 1, int(os.environ.get("STUB_STEPS", "4")) + 1):
        time.sleep(0.1)
        ray.get(
            [
                save_shard.options(
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
                ).remote(step, rank, world)
                for rank, node in enumerate(nodes)
            ]
        )
        (save / f"global_step_{step}" / "dataloader.pt").write_text(f"d{step}")
        if os.environ.get("STUB_HANG_AT") == str(step):
            event(f"hanging {step}")
            time.sleep(3600)
        (save / "checkpoint_tracker.json").write_text(json.dumps({"last_global_step": step}))
        event(f"saved {step}")
    event("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
