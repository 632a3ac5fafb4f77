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
   -m rewardkit_trainers.launch.trl_train --config CONFIG --train <out>/rewardkit-train.json``:
   one training process per GPU, each reading the train section exactly as resolved here
   (``rewardkit-train.json``), DeepSpeed ZeRO-3 by default (``train.deepspeed``).
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from rewardkit import ConfigError

from rewardkit_trainers.launch.hardware import split_gpus
from rewardkit_trainers.launch.plan import Job, NodePlacement, RunPlan

TRAIN_FILE = "rewardkit-train.json"


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


def build_jobs(plan: RunPlan) -> list[Job]:
    """The jobs of a launched TRL run on ``plan.placement`` (files written into the output
    folder)."""
    train, out = plan.train, plan.output_dir
    where = plan.placement
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
            trainer_ids, server_ids = split_gpus(train.gpus, train.vllm.tensor_parallel_size)
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
    argv += ["-m", "rewardkit_trainers.launch.trl_train",
             "--config", str(plan.config_file), "--train", str(train_file)]
    label = (f"TRL GRPO on {processes} GPU(s) x {where.num_nodes} node(s), "
             f"{'DDP' if train.deepspeed == 'none' else 'DeepSpeed ' + train.deepspeed.upper()}")
    jobs.append(Job(label, argv, out, trainer_env,
                    {str(accel_file): accel_text, str(train_file): train_file.read_text()}))
    return jobs
