"""TRL on more than one GPU: ``accelerate launch`` with a DeepSpeed ZeRO config, and the
vLLM server of ``vllm.mode: server``.

``rewardkit train`` with ``backend: trl`` trains in its own process on one GPU (or the
CPU). With more GPUs (``train.gpus``, default every visible one), with more than one node
(the SageMaker entrypoint sets ``REWARDKIT_NUM_NODES`` / ``REWARDKIT_NODE_RANK`` /
``REWARDKIT_HEAD_IP`` / ``REWARDKIT_DIST_PORT``) or in vLLM server mode, it runs these
jobs instead:

1. server mode only: ``trl vllm-serve --model M ...`` on the last
   ``vllm.tensor_parallel_size`` GPUs, in the background; the trainer starts once its
   ``/health/`` answers;
2. ``accelerate launch --config_file <out>/accelerate-<stage>.yaml --num_processes N ...
   -m rewardkit_trainers.trl_train --config CONFIG --train <out>/rewardkit-train.json``:
   one training process per GPU, each reading the train section exactly as resolved here
   (``rewardkit-train.json``), DeepSpeed ZeRO-3 by default (``train.deepspeed``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from rewardkit import ConfigError

from rewardkit_trainers.config import TinyModel, TrainConfig

if TYPE_CHECKING:
    from rewardkit_trainers.runner import Job, RunPlan

TRAIN_FILE = "rewardkit-train.json"
DEFAULT_DIST_PORT = 29500


@dataclass(frozen=True)
class NodePlacement:
    """This node's place in a multi-node job (one node by default)."""

    num_nodes: int = 1
    rank: int = 0
    head_ip: str = "127.0.0.1"
    port: int = DEFAULT_DIST_PORT


def placement_from_env(env: dict[str, str] | None = None) -> NodePlacement:
    """The placement the SageMaker entrypoint passes to ``rewardkit train``."""
    env = dict(os.environ) if env is None else env
    if not env.get("REWARDKIT_NUM_NODES"):
        return NodePlacement()
    try:
        return NodePlacement(num_nodes=int(env["REWARDKIT_NUM_NODES"]),
                             rank=int(env.get("REWARDKIT_NODE_RANK", "0")),
                             head_ip=env.get("REWARDKIT_HEAD_IP", "127.0.0.1"),
                             port=int(env.get("REWARDKIT_DIST_PORT", str(DEFAULT_DIST_PORT))))
    except ValueError as exc:
        raise ValueError(f"malformed REWARDKIT_NUM_NODES/NODE_RANK/DIST_PORT: {exc}") from None


def inside_launcher(env: dict[str, str] | None = None) -> bool:
    """True in a process that a distributed launcher started (accelerate, torchrun)."""
    env = dict(os.environ) if env is None else env
    return "LOCAL_RANK" in env or "ACCELERATE_PROCESS_INDEX" in env


def needs_launcher(train: TrainConfig, where: NodePlacement) -> bool:
    """Whether TRL must run as launched jobs rather than in this process. A tiny built
    model (demos, tests) always trains in one process: it is built where it trains."""
    if isinstance(train.model, TinyModel):
        return False
    server = train.vllm.enabled is True and train.vllm.mode == "server"
    return train.gpus > 1 or where.num_nodes > 1 or server


def deepspeed_config(stage: str) -> dict[str, Any]:
    """The accelerate config's ``deepspeed_config`` block for ``zero3`` / ``zero2``.

    Batch size and gradient accumulation stay ``auto``: the Trainer fills them in from
    its own arguments, so they cannot disagree."""
    block: dict[str, Any] = {
        "zero_stage": {"zero3": 3, "zero2": 2}[stage],
        "offload_optimizer_device": "none",
        "offload_param_device": "none",
    }
    if stage == "zero3":
        # sharded at load, saved as one 16-bit state dict (a loadable final model)
        block.update(zero3_init_flag=True, zero3_save_16bit_model=True)
    return block


def accelerate_config(deepspeed: str, mixed_precision: str, processes: int,
                      where: NodePlacement) -> dict[str, Any]:
    """The accelerate config file's content (``accelerate launch --config_file``) for
    ``processes`` per node: DeepSpeed ``zero3``/``zero2``, or plain DDP for ``none``."""
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "MULTI_GPU" if deepspeed == "none" else "DEEPSPEED",
        "mixed_precision": mixed_precision,
        "num_machines": where.num_nodes,
        "num_processes": processes * where.num_nodes,
        "machine_rank": where.rank,
        "main_process_ip": where.head_ip,
        "main_process_port": where.port,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
    }
    if deepspeed != "none":
        config["deepspeed_config"] = deepspeed_config(deepspeed)
    return config


def config_file_name(deepspeed: str) -> str:
    """``accelerate-zero3.yaml``, ``accelerate-zero2.yaml`` or ``accelerate-ddp.yaml``."""
    return f"accelerate-{'ddp' if deepspeed == 'none' else deepspeed}.yaml"


def server_gpus(train: TrainConfig) -> tuple[list[int], list[int]]:
    """(trainer GPUs, vLLM server GPUs) of one node in server mode: the server gets the
    last ``tensor_parallel_size`` GPUs, the trainer the rest."""
    return split_gpus(train.gpus, train.vllm.tensor_parallel_size)


def split_gpus(gpus: int, tp: int) -> tuple[list[int], list[int]]:
    """(trainer GPU ids, server GPU ids) of a node with ``gpus`` GPUs whose vLLM server
    takes the last ``tp``; ValueError when none is left for training. Shared by
    ``trl vllm-serve`` and ms-swift's ``swift rollout``."""
    if gpus <= tp:
        raise ValueError(
            f"vllm.mode server needs more GPUs than vllm.tensor_parallel_size ({tp}): the "
            f"server takes {tp} and the trainer at least one, but train.gpus is {gpus}; "
            "use vllm.mode colocate on this machine")
    ids = list(range(gpus))
    return ids[: gpus - tp], ids[gpus - tp:]


def build_jobs(plan: RunPlan, where: NodePlacement | None = None) -> list[Job]:
    """The jobs of a launched TRL run (files written into the output folder)."""
    from rewardkit_trainers.runner import Job

    train, out = plan.train, plan.output_dir
    where = where or NodePlacement()
    server = train.vllm.enabled is True and train.vllm.mode == "server"
    jobs: list[Job] = []
    trainer_env: dict[str, str] = {}
    processes = train.gpus
    if server:
        if where.num_nodes > 1:
            raise ConfigError(str(plan.config_file), [(
                "train.vllm.mode", "server mode starts one server per node, which this "
                "launcher supports on one node only; use colocate for multi-node runs")])
        try:
            trainer_ids, server_ids = server_gpus(train)
        except ValueError as exc:
            raise ConfigError(str(plan.config_file), [("train.vllm.mode", str(exc))]) from None
        processes = len(trainer_ids)
        trainer_env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, trainer_ids))
        port = train.vllm.server_port
        jobs.append(Job(
            "vLLM server (trl vllm-serve)",
            ["trl", "vllm-serve", "--model", str(train.model),
             "--tensor-parallel-size", str(train.vllm.tensor_parallel_size),
             "--gpu-memory-utilization", repr(train.vllm.gpu_memory_utilization),
             "--host", "127.0.0.1", "--port", str(port)],
            out, {"CUDA_VISIBLE_DEVICES": ",".join(map(str, server_ids))},
            background=True, ready_url=f"http://127.0.0.1:{port}/health/"))
    train_file = out / TRAIN_FILE
    resolved = train.model_dump(mode="json")
    train_file.write_text(json.dumps(resolved, indent=2) + "\n", encoding="utf-8")
    accel_file = out / config_file_name(train.deepspeed)
    accel = accelerate_config(train.deepspeed, "bf16" if train.bf16 else "no", processes, where)
    accel_text = yaml.safe_dump(accel, sort_keys=False)
    accel_file.write_text(accel_text, encoding="utf-8")
    argv = ["accelerate", "launch", "--config_file", str(accel_file),
            "--num_processes", str(processes * where.num_nodes)]
    if where.num_nodes > 1:
        argv += ["--num_machines", str(where.num_nodes), "--machine_rank", str(where.rank),
                 "--main_process_ip", where.head_ip, "--main_process_port", str(where.port)]
    argv += ["-m", "rewardkit_trainers.trl_train",
             "--config", str(plan.config_file), "--train", str(train_file)]
    label = (f"TRL GRPO on {processes} GPU(s) x {where.num_nodes} node(s), "
             f"{'DDP' if train.deepspeed == 'none' else 'DeepSpeed ' + train.deepspeed.upper()}")
    jobs.append(Job(label, argv, out, trainer_env,
                    {str(accel_file): accel_text, str(train_file): train_file.read_text()}))
    return jobs
