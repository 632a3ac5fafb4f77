"""The training command a node runs: placeholders, checkpoint arguments, and the
multi-GPU / multi-node launcher (accelerate with DeepSpeed / torchrun / ms-swift
environment / Ray address)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from rewardkit_trainers.launch.hardware import count_gpus
from rewardkit_trainers.launch.plan import NodePlacement
from rewardkit_trainers.launch.trl import accelerate_config, config_file_name
from rewardkit_trainers.sagemaker.config import RAY_BACKENDS
from rewardkit_trainers.sagemaker.layouts import layout_for
from rewardkit_trainers.sagemaker.spec import RunSpec, Stage

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
    """GPUs on this node (:func:`rewardkit_trainers.launch.hardware.count_gpus`), at least 1."""
    return max(1, count_gpus(dict(os.environ) if env is None else env))


def fill(argv: list[str], values: dict[str, str]) -> list[str]:
    """Replace ``{name}`` placeholders (other braces, e.g. JSON, are left alone)."""
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def is_rewardkit_train(argv: list[str]) -> bool:
    """``rewardkit train ...``: it starts accelerate (and a vLLM server) itself, from the
    placement in its environment."""
    return argv[:2] == ["rewardkit", "train"]


def accelerate_file(spec: RunSpec, root: Path) -> Path:
    """Where the generated accelerate config of a wrapped TRL command is written: beside
    the checkpoint folder, not in it (whose content becomes the final model)."""
    return root.with_name(root.name + "-launch") / config_file_name(spec.deepspeed)


def launcher_files(spec: RunSpec, where: Placement, root: Path) -> dict[Path, str]:
    """Files the wrapped command reads (the accelerate config), to write before it runs."""
    if not _wrapped_in_accelerate(spec, where):
        return {}
    config = accelerate_config(spec.deepspeed, "no", where.gpus_per_node,
                               NodePlacement(where.num_nodes, where.rank, where.head_ip,
                                             spec.dist_port))
    return {accelerate_file(spec, root): yaml.safe_dump(config, sort_keys=False)}


def _wrapped_in_accelerate(spec: RunSpec, where: Placement) -> bool:
    if spec.backend != "trl" or is_rewardkit_train(spec.command):
        return False
    if spec.command[0] == "torchrun":
        return False
    return where.num_nodes > 1 or where.gpus_per_node > 1


def _accelerate(argv: list[str], where: Placement, port: int, config_file: Path) -> list[str]:
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
        # the user's own launcher options (a --config_file of theirs) come after ours and win
        return [*argv[:2], "--config_file", str(config_file), *dist, *argv[2:]]
    launch = ["accelerate", "launch", "--config_file", str(config_file), *dist]
    if argv[0] in _PYTHONS or argv[0].endswith("/python") or argv[0].endswith("/python3"):
        return [*launch, *argv[1:]]  # script.py ... or -m module ...
    return [*launch, "--no_python", *argv]


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


def override_key(arg: str) -> str | None:
    """The dotted key a ``key=value`` override sets (Hydra's ``+``/``++`` stripped);
    None for an argument that is not one (``-m``, a module name)."""
    if arg.startswith("-") or "=" not in arg:
        return None
    return arg.split("=", 1)[0].lstrip("+")


def training_command(
    spec: RunSpec,
    where: Placement,
    root: Path,
    resume_step: int | None,
    config_dir: str = CONFIG_DIR,
    stage: Stage | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The argv and extra environment of this node's training process.

    * placeholders: ``{config}`` (reward config path), ``{config_dir}`` (the config
      channel), ``{checkpoint_dir}``, ``{data_dir}``, ``{model_dir}``;
    * a stage of a staged EasyR1/verl run: its arguments (pinned reward, step limit)
      after the command's own, so they win;
    * the backend's own save/resume arguments (``spec.checkpoint_args``);
    * TRL on more than one GPU or node: ``accelerate launch`` with the generated DeepSpeed
      config (:func:`launcher_files`, ``spec.deepspeed``) and this node's machine rank,
      or the user's ``torchrun`` with its node rank; ``rewardkit train`` is not wrapped:
      it launches accelerate (and a vLLM server) itself from ``REWARDKIT_NUM_NODES`` /
      ``REWARDKIT_NODE_RANK`` / ``REWARDKIT_HEAD_IP`` / ``REWARDKIT_DIST_PORT`` and
      ``REWARDKIT_GPUS``;
    * multi-node: ms-swift through its ``NNODES``/``NODE_RANK``/``MASTER_ADDR``
      environment; EasyR1/verl through ``RAY_ADDRESS`` (head only).
    """
    layout = layout_for(spec.backend)
    multi = where.num_nodes > 1
    config = f"{config_dir}/{spec.config_file}" if spec.config_file else config_dir
    values = {
        "config": config,
        "config_dir": config_dir,
        "checkpoint_dir": str(root),
        "data_dir": DATA_DIR,
        "model_dir": MODEL_DIR,
    }
    argv = fill(spec.command, values)
    if stage is not None:
        extra = fill(stage.args, values)
        # the stage's override replaces the command's own for the same key (EasyR1's
        # command names a reward file; each stage names its pinned one): once each
        stage_keys = {override_key(a) for a in extra} - {None}
        argv = [a for a in argv if override_key(a) not in stage_keys] + extra
    ray_backend = spec.backend in RAY_BACKENDS
    if spec.checkpoint_args:
        argv += layout.checkpoint_args(root, resume_step, multi_node=multi and not ray_backend)
    env = {
        "REWARDKIT_NODE_RANK": str(where.rank),
        "REWARDKIT_NUM_NODES": str(where.num_nodes),
        "REWARDKIT_HEAD_IP": where.head_ip,
        "REWARDKIT_CHECKPOINT_DIR": str(root),
        "REWARDKIT_DIST_PORT": str(spec.dist_port),
    }
    if spec.gpus_per_node:
        env["REWARDKIT_GPUS"] = str(spec.gpus_per_node)
    if resume_step is not None:
        env["REWARDKIT_RESUME_FROM"] = str(root / layout.step_dir_name(resume_step))
    if _wrapped_in_accelerate(spec, where):
        return _accelerate(argv, where, spec.dist_port, accelerate_file(spec, root)), env
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
    return argv, env
