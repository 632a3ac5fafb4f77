"""A planned run: the validated config, the machine it is planned for, and its jobs.

:class:`RunPlan` is what every backend's planner (:mod:`rewardkit_trainers.launch.backends`)
reads and :class:`Job` what it returns; :mod:`rewardkit_trainers.launch.runner` makes the
plan (``load_run``), asks the backend for its jobs and runs them. This module imports
no planner and no runner, so every other launch module may import it.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit import ConfigError
from rewardkit.config import RewardConfig

from rewardkit_trainers.config import BatchSplit, TinyModel, TrainConfig, resolve
from rewardkit_trainers.launch.hardware import Hardware
from rewardkit_trainers.launch.segments import SegmentRange, segment_boundaries, segment_ranges

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


@dataclass
class Job:
    """One external command of a run."""

    label: str
    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    background: bool = False
    """runs alongside the jobs after it (a server) and is stopped when they end"""
    ready_url: str | None = None
    """a background job is ready when this URL answers 200"""

    @property
    def shell(self) -> str:
        """The command as one copy-pasteable shell line (wrapped before each option)."""
        parts: list[str] = []
        for i, arg in enumerate(self.argv):
            quoted = shlex.quote(arg)
            option = arg.startswith("--") or ("=" in arg and not arg.startswith("-"))
            parts.append((" \\\n    " if i and option else " " if i else "") + quoted)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        cmd = "".join(parts)
        return f"{env} {cmd}" if env else cmd

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "label": self.label, "argv": self.argv, "cwd": str(self.cwd), "env": self.env,
            "shell": self.shell, "files": self.files}
        if self.background:
            described.update(background=True, ready_url=self.ready_url)
        return described


@dataclass
class RunPlan:
    """A validated run: reward config, train section and where it writes."""

    config_file: Path
    reward_config: RewardConfig
    train: TrainConfig
    hardware: Hardware = field(default_factory=lambda: Hardware(gpus=0, vllm=False))
    """what the automatic choices in ``train`` were made for"""
    placement: NodePlacement = field(default_factory=NodePlacement)
    #: what the backend approximates (:func:`rewardkit_trainers.fidelity.check`)
    warnings: list[str] = field(default_factory=list)

    @property
    def launched(self) -> bool:
        """TRL through ``accelerate launch`` (and a vLLM server) instead of in-process."""
        return (self.train.backend == "trl" and not inside_launcher()
                and needs_launcher(self.train, self.placement))

    @property
    def output_dir(self) -> Path:
        return resolve(self.train.output_dir, self.config_file)

    def processes(self) -> int:
        """Training processes of the run, all nodes together: one for TRL in this
        process; else ``gpus`` per node (less the vLLM server's GPUs in TRL's and
        ms-swift's server mode) times the nodes (TRL: the placement's, as its accelerate
        launch; the others: ``train.nnodes``, or the placement's when more)."""
        t = self.train
        if t.backend == "trl" and not self.launched:
            return 1
        per_node = t.gpus
        server = t.vllm.enabled is True and t.vllm.mode == "server"
        if server and t.backend in ("trl", "swift") and per_node > t.vllm.tensor_parallel_size:
            per_node -= t.vllm.tensor_parallel_size
        if t.backend == "trl":  # accelerate launches per_node processes on each placed node
            return per_node * self.placement.num_nodes
        return per_node * max(t.nnodes, self.placement.num_nodes)

    def batch(self) -> BatchSplit:
        """The optimizer step every backend's arguments are built from
        (:meth:`TrainConfig.batch_split` over :meth:`processes`); a ConfigError names
        ``train.batch_size`` and the values that split exactly when it does not."""
        try:
            return self.train.batch_split(self.processes())
        except ValueError as exc:
            raise ConfigError(str(self.config_file), [("train.batch_size", str(exc))]) from None

    def zero_stage(self) -> int:
        """The ZeRO stage the run shards with: 3 or 2 from ``train.deepspeed`` on more
        than one process, else 0 (one process holds everything; ``none`` is DDP)."""
        if self.processes() == 1 or self.train.deepspeed == "none":
            return 0
        return 3 if self.train.deepspeed == "zero3" else 2

    def segment_boundaries(self) -> list[int]:
        """Steps where a new segment (job) starts (besides 0), for backends that pass no
        step."""
        return segment_boundaries(self.train.stages, self.reward_config)

    def segment_ranges(self, backend: str) -> list[SegmentRange]:
        """``(first step, end step)`` of each successive segment (end None = run to the
        end)."""
        boundaries = self.segment_boundaries()
        total = self.train.max_steps
        if boundaries and total is None:
            raise ConfigError(str(self.config_file), [(
                "train.max_steps",
                f"needed: {backend} runs the reward stages as successive jobs (segments; "
                f"boundaries at "
                f"steps {boundaries}), which needs a step count rather than epochs")])
        return segment_ranges(boundaries, total)
