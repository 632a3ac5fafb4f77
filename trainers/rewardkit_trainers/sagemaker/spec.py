"""What the container runs: the launch side writes it, the entrypoint reads it.

``rewardkit launch sagemaker`` uploads this spec as ``rewardkit-run.json`` next to the
reward config in the ``config`` channel (environment values are capped at 512
characters, a command line is not). The entrypoint finds it through
``REWARDKIT_RUN_SPEC``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rewardkit_trainers.sagemaker.config import Backend

SPEC_FILE_NAME = "rewardkit-run.json"
DEFAULT_SPEC_PATH = "/opt/ml/input/data/config/" + SPEC_FILE_NAME
DEFAULT_CHECKPOINT_DIR = "/opt/ml/rewardkit/checkpoints"
"""Local checkpoint folder. Not /opt/ml/checkpoints: SageMaker's own checkpoint sync
would upload partial steps and download every step on restart."""


class Stage(BaseModel):
    """One job of a staged run (EasyR1/verl pass no step to the reward): the training
    command runs once per stage, with these arguments after the command's own."""

    model_config = ConfigDict(extra="forbid")

    start: int = Field(ge=0, description="first step; the reward is pinned here")
    end: int | None = Field(
        default=None, description="the step the job stops at (None: the command's own end)")
    args: list[str] = Field(default_factory=list,
                            description="pinned reward and step limit ({config_dir} placeholder)")


class RunSpec(BaseModel):
    """The container's instructions for one job."""

    model_config = ConfigDict(extra="forbid")

    backend: Backend
    command: list[str] = Field(min_length=1)
    checkpoint_args: bool = True
    merge_command: list[str] | None = None
    config_file: str | None = Field(
        default=None, description="reward config file name in the channel"
    )
    checkpoint_s3: str | None = Field(default=None, description="s3:// prefix for step folders")
    output_s3: str | None = Field(default=None, description="s3:// prefix for the final model")
    keep_last: int | None = None
    gpus_per_node: int | None = None
    deepspeed: Literal["zero3", "zero2", "none"] = Field(
        default="zero3",
        description="TRL on more than one GPU: the ZeRO stage of the accelerate launch")
    stages: list[Stage] = Field(
        default_factory=list,
        description="successive resumed jobs of a staged easyr1/verl run (empty: one job)")
    checkpoint_dir: str = DEFAULT_CHECKPOINT_DIR
    ray_port: int = 6379
    dist_port: int = 29500
    server_ready_timeout_s: float = Field(
        default=900.0, description="swift --vllm_mode server: wait this long for swift "
        "rollout's /health/")
    join_timeout_s: float = Field(default=600.0, description="head: wait this long for every node")
    connect_timeout_s: float = Field(default=600.0, description="worker: retry joining this long")
    sync_interval_s: float = Field(
        default=30.0, description="seconds between checkpoint sync rounds"
    )
    poll_interval_s: float = Field(default=5.0, description="worker: seconds between status polls")
    head_lost_after_s: float = Field(
        default=30.0, description="worker: leave when the head stays unreachable this long"
    )
    final_wait_s: float = Field(
        default=1800.0,
        description="head: wait this long for every node's flag of the final step before merging",
    )

    @classmethod
    def load(cls, path: str | Path | None = None) -> RunSpec:
        """Read the spec from ``path``, ``$REWARDKIT_RUN_SPEC`` or the config channel."""
        path = Path(path or os.environ.get("REWARDKIT_RUN_SPEC") or DEFAULT_SPEC_PATH)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FileNotFoundError(
                f"cannot read the run spec {path}: {exc.strerror or exc} (the job's config "
                "channel should hold it; set REWARDKIT_RUN_SPEC to point elsewhere)"
            ) from None
        return cls.model_validate(json.loads(text))

    def dump(self) -> str:
        """The spec as JSON text."""
        return self.model_dump_json(indent=2, exclude_none=True)
