"""The training command a node runs: placeholders, checkpoint arguments, and the
multi-node launcher (accelerate / torchrun / ms-swift environment / Ray address)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rewardkit_trainers.sagemaker.config import RAY_BACKENDS
from rewardkit_trainers.sagemaker.layouts import layout_for
from rewardkit_trainers.sagemaker.spec import RunSpec

CONFIG_DIR = "/opt/ml/input/data/config"
DATA_DIR = "/opt/ml/input/data"
MODEL_DIR = "/opt/ml/model"
_PYTHONS = {"python", "python3"}


@dataclass(frozen=True)
class Placement:
    """Where this node's process group sits in the job."""

    rank: int
    num_nodes: int
    head_ip: str
    gpus_per_node: int


def detect_gpus(env: dict[str, str] | None = None) -> int:
    """GPUs on this node: ``SM_NUM_GPUS`` (set by SageMaker), else ``nvidia-smi -L``, else 1."""
    env = dict(os.environ) if env is None else env
    if env.get("SM_NUM_GPUS", "").isdigit() and int(env["SM_NUM_GPUS"]) > 0:
        return int(env["SM_NUM_GPUS"])
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "-L"], check=False, capture_output=True, text=True, timeout=30
            )
            count = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
            if count:
                return count
        except (OSError, subprocess.SubprocessError):
            pass
    return 1


def fill(argv: list[str], values: dict[str, str]) -> list[str]:
    """Replace ``{name}`` placeholders (other braces, e.g. JSON, are left alone)."""
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def _accelerate(argv: list[str], where: Placement, port: int) -> list[str]:
    dist = [
        "--num_machines",
        str(where.num_nodes),
        "--machine_rank",
        str(where.rank),
        "--main_process_ip",
        where.head_ip,
        "--main_process_port",
        str(port),
        "--num_processes",
        str(where.num_nodes * where.gpus_per_node),
    ]
    if argv[:2] == ["accelerate", "launch"]:
        return [*argv[:2], *dist, *argv[2:]]
    if argv[0] in _PYTHONS or argv[0].endswith("/python") or argv[0].endswith("/python3"):
        return ["accelerate", "launch", *dist, *argv[1:]]  # script.py ... or -m module ...
    return ["accelerate", "launch", *dist, "--no_python", *argv]


def _torchrun(argv: list[str], where: Placement, port: int) -> list[str]:
    dist = [
        "--nnodes",
        str(where.num_nodes),
        "--node_rank",
        str(where.rank),
        "--master_addr",
        where.head_ip,
        "--master_port",
        str(port),
    ]
    return [argv[0], *dist, *argv[1:]]


def training_command(
    spec: RunSpec,
    where: Placement,
    root: Path,
    resume_step: int | None,
    config_dir: str = CONFIG_DIR,
) -> tuple[list[str], dict[str, str]]:
    """The argv and extra environment of this node's training process.

    * placeholders: ``{config}`` (reward config path), ``{checkpoint_dir}``,
      ``{data_dir}``, ``{model_dir}``;
    * the backend's own save/resume arguments (``spec.checkpoint_args``);
    * multi-node: TRL through ``accelerate launch`` (or the user's ``torchrun``) with
      this node's machine rank; ms-swift through its ``NNODES``/``NODE_RANK``/
      ``MASTER_ADDR`` environment; EasyR1/verl through ``RAY_ADDRESS`` (head only).
    """
    layout = layout_for(spec.backend)
    multi = where.num_nodes > 1
    config = f"{config_dir}/{spec.config_file}" if spec.config_file else config_dir
    argv = fill(
        spec.command,
        {
            "config": config,
            "checkpoint_dir": str(root),
            "data_dir": DATA_DIR,
            "model_dir": MODEL_DIR,
        },
    )
    ray_backend = spec.backend in RAY_BACKENDS
    if spec.checkpoint_args:
        argv += layout.checkpoint_args(root, resume_step, multi_node=multi and not ray_backend)
    env = {
        "REWARDKIT_NODE_RANK": str(where.rank),
        "REWARDKIT_NUM_NODES": str(where.num_nodes),
        "REWARDKIT_HEAD_IP": where.head_ip,
        "REWARDKIT_CHECKPOINT_DIR": str(root),
    }
    if resume_step is not None:
        env["REWARDKIT_RESUME_FROM"] = str(root / layout.step_dir_name(resume_step))
    if not multi:
        return argv, env
    if ray_backend:
        env["RAY_ADDRESS"] = f"{where.head_ip}:{spec.ray_port}"
    elif spec.backend == "swift":
        env.update(
            {
                "NNODES": str(where.num_nodes),
                "NODE_RANK": str(where.rank),
                "MASTER_ADDR": where.head_ip,
                "MASTER_PORT": str(spec.dist_port),
                "NPROC_PER_NODE": str(where.gpus_per_node),
            }
        )
    elif argv[0] == "torchrun":
        argv = _torchrun(argv, where, spec.dist_port)
    else:
        argv = _accelerate(argv, where, spec.dist_port)
    return argv, env
