"""The ``sagemaker:`` section of a rewardkit config, validated before any AWS call.

rewardkit-trainers registers it as a config section (:mod:`rewardkit_trainers.plugin`), so
it is validated with the rest of the file and documented in the config reference.
Every check that can be made offline is made here (role ARN shape, instance type,
S3 URIs, spot timing), so a bad config fails in a second instead of after an upload.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from rewardkit.config import ConfigModel

from rewardkit_trainers.launch.swift_server import flag_value

Backend = Literal["trl", "swift", "easyr1", "verl"]
"""Training backends the container entrypoint knows how to run and checkpoint."""

RAY_BACKENDS: frozenset[str] = frozenset({"easyr1", "verl"})
"""Backends whose multi-node runs are one driver on a Ray cluster."""

_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9]+\.[a-z0-9]+$")
_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$")
_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def is_s3_uri(value: str) -> bool:
    """True for ``s3://bucket[/key]`` with a valid bucket name."""
    return bool(_S3_URI.match(value))


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> ``("bucket", "a/b")`` (no leading or trailing slash)."""
    if not is_s3_uri(uri):
        raise ValueError(f"not an S3 URI: {uri!r} (expected s3://bucket/prefix)")
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key.strip("/")


def check_job_name(name: str) -> str:
    """A job name prefix (``--job-name``): 1-48 letters, digits or single hyphens, or
    ValueError (the SDK appends ``-YYYYmmddHHMMSS``; SageMaker allows 63 in all)."""
    if not _JOB_NAME.match(name) or len(name) > 48:
        raise ValueError(
            f"job name {name!r}: use 1-48 letters, digits and hyphens, starting and ending "
            "with a letter or digit (a 15-character timestamp is appended)"
        )
    return name


class _Model(ConfigModel):
    """Unknown keys and NaN/infinite numbers are errors, as in the core config."""


class Channel(_Model):
    """One input channel: a local file/folder (uploaded at launch) or an S3 URI."""

    source: str = Field(description="local path (relative to the config file) or s3:// URI")
    content_type: str | None = Field(default=None, description="e.g. application/x-parquet")

    @property
    def is_s3(self) -> bool:
        return self.source.startswith("s3://")

    @field_validator("source")
    @classmethod
    def _check_source(cls, value: str) -> str:
        if value.startswith("s3://") and not is_s3_uri(value):
            raise ValueError(f"malformed S3 URI {value!r}: expected s3://bucket/prefix")
        return value


class SageMakerSettings(_Model):
    """A SageMaker training job for one rewardkit run.

    Example::

        sagemaker:
          backend: easyr1
          role: arn:aws:iam::123456789012:role/RewardkitSageMaker
          region: us-west-2
          images: {easyr1: 123456789012.dkr.ecr.us-west-2.amazonaws.com/rewardkit-easyr1:0.1.0}
          instance_type: ml.p4d.24xlarge
          instance_count: 2
          spot: true
          max_run: 86400
          max_wait: 172800
          data: {train: data/train.parquet}
          output: s3://my-bucket/rewardkit/output
          checkpoint: s3://my-bucket/rewardkit/checkpoints/run-1
    """

    backend: Backend = Field(description="training backend run in the container")
    role: str = Field(description="IAM role ARN SageMaker assumes (arn:aws:iam::ACCOUNT:role/NAME)")
    region: str | None = Field(
        default=None, description="AWS region (default: the boto3 session's)"
    )
    images: dict[Backend, str] = Field(
        description="container image URI per backend; the chosen backend's must be present"
    )
    instance_type: str = Field(default="ml.g5.2xlarge", description="ml.* instance type")
    instance_count: int = Field(default=1, ge=1, le=64, description="number of nodes")
    volume_size_gb: int = Field(default=100, ge=1, le=16384, description="EBS volume per node, GiB")
    max_run: int = Field(
        default=86_400, ge=60, le=28 * 86_400, description="StoppingCondition.MaxRuntimeInSeconds"
    )
    spot: bool = Field(
        default=False, description="managed spot training (EnableManagedSpotTraining)"
    )
    max_wait: int | None = Field(
        default=None,
        description="MaxWaitTimeInSeconds (spot only): max_run plus time waiting for "
        "capacity; must be >= max_run; default 2 x max_run",
    )
    data: dict[str, Channel] = Field(
        default_factory=dict,
        description="input channels: name -> local path or s3:// URI (or {source, content_type})",
    )
    upload: str | None = Field(
        default=None,
        description="s3:// prefix where local inputs and the config are uploaded "
        "under <upload>/<job name>/ (default: <output>/<job name>/input)",
    )
    output: str = Field(description="s3:// prefix for job output and the final model")
    checkpoint: str | None = Field(
        default=None, description="s3:// prefix for checkpoints (resume after spot interruption)"
    )
    keep_last: int | None = Field(
        default=None,
        ge=1,
        description="keep this many complete checkpoint steps in S3 (None = all)",
    )
    command: list[str] | None = Field(
        default=None,
        description="training command run in the container; placeholders {config}, "
        "{checkpoint_dir}, {data_dir}, {model_dir}; required except for trl, whose default "
        "is rewardkit train {config} --output-dir {checkpoint_dir}",
    )
    checkpoint_args: bool | None = Field(
        default=None,
        description="append the backend's own save/resume arguments (--output_dir/"
        "--resume_from_checkpoint, trainer.save_checkpoint_path/load_checkpoint_path) to "
        "the command; default: yes for a custom command, no for rewardkit train (which "
        "reads REWARDKIT_RESUME_FROM)",
    )
    merge_command: list[str] | None = Field(
        default=None,
        description="final-model merge for sharded checkpoints ({local_dir} = the "
        "step's actor folder); EasyR1 default: python3 scripts/model_merger.py "
        "--local_dir {local_dir}",
    )
    gpus_per_node: int | None = Field(
        default=None,
        ge=1,
        description="processes per node for torchrun/accelerate (default: all GPUs)",
    )
    deepspeed: Literal["zero3", "zero2", "none"] = Field(
        default="zero3",
        description="trl with a custom command on more than one GPU or node: the DeepSpeed "
        "ZeRO stage of the accelerate launch the entrypoint wraps it in (none = DDP); "
        "rewardkit train takes train.deepspeed instead",
    )
    environment: dict[str, str] = Field(default_factory=dict, description="container env")
    tags: dict[str, str] = Field(default_factory=dict, description="job tags")
    job_name: str | None = Field(
        default=None,
        description="job name prefix (a timestamp is appended); default rewardkit-<backend>",
    )
    keep_alive_period: int | None = Field(
        default=None, ge=0, le=3600, description="warm pool keep-alive seconds (not with spot)"
    )

    @field_validator("role")
    @classmethod
    def _check_role(cls, value: str) -> str:
        if not _ROLE_ARN.match(value):
            raise ValueError(
                f"{value!r} is not an IAM role ARN: expected arn:aws:iam::<12-digit account>"
                ":role/<name>"
            )
        return value

    @field_validator("region")
    @classmethod
    def _check_region(cls, value: str | None) -> str | None:
        if value is not None and not _REGION.match(value):
            raise ValueError(f"{value!r} is not an AWS region name (e.g. us-west-2)")
        return value

    @field_validator("instance_type")
    @classmethod
    def _check_instance_type(cls, value: str) -> str:
        if not _INSTANCE_TYPE.match(value):
            raise ValueError(
                f"{value!r} is not a SageMaker instance type: expected ml.<family>.<size>, "
                "e.g. ml.g5.2xlarge"
            )
        return value

    @field_validator("output", "checkpoint", "upload")
    @classmethod
    def _check_s3(cls, value: str | None) -> str | None:
        if value is not None and not is_s3_uri(value):
            raise ValueError(f"{value!r} is not an S3 URI: expected s3://bucket/prefix")
        return value.rstrip("/") if value else value

    @field_validator("job_name")
    @classmethod
    def _check_job_name(cls, value: str | None) -> str | None:
        if value is not None and (not _JOB_NAME.match(value) or len(value) > 48):
            raise ValueError(
                f"{value!r}: job name prefix must be 1-48 letters, digits or hyphens "
                "(a 15-character timestamp is appended)"
            )
        return value

    @field_validator("data", mode="before")
    @classmethod
    def _channel_from_string(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"source": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("data")
    @classmethod
    def _check_channels(cls, value: dict[str, Channel]) -> dict[str, Channel]:
        for name in value:
            if not re.match(r"^[A-Za-z0-9\.\-_]{1,64}$", name) or name == "config":
                raise ValueError(
                    f"channel name {name!r}: use letters, digits, '.', '-', '_' "
                    "('config' is reserved for the reward config)"
                )
        return value

    @model_validator(mode="after")
    def _check_combination(self) -> SageMakerSettings:
        if self.backend not in self.images:
            raise ValueError(
                f"images has no entry for backend {self.backend!r} "
                f"(have: {', '.join(sorted(self.images)) or 'none'})"
            )
        if self.max_wait is not None and not self.spot:
            raise ValueError("max_wait applies to spot training only: set spot: true or drop it")
        if self.spot:
            wait = self.max_wait if self.max_wait is not None else 2 * self.max_run
            if wait < self.max_run:
                raise ValueError(
                    f"max_wait ({wait}s) must be >= max_run ({self.max_run}s): it covers the "
                    "run time plus the time spent waiting for spot capacity"
                )
            self.max_wait = wait
            if self.keep_alive_period:
                raise ValueError("keep_alive_period (warm pools) cannot be used with spot")
        if self.command is None and self.backend != "trl":
            raise ValueError(
                f"backend {self.backend!r} needs command: its own training command in the "
                "container (e.g. python3 -m verl.trainer.main config=... for EasyR1); "
                "the default, rewardkit train, is checkpoint-aware for trl only"
            )
        if (self.backend == "swift" and self.instance_count > 1 and self.command
                and flag_value(self.command, "--vllm_mode") == "server"):
            raise ValueError(
                "command: swift --vllm_mode server starts swift rollout on the node it trains "
                "on, which rewardkit supports on one node only (instance_count 1); use "
                "--vllm_mode colocate on several nodes")
        if self.keep_last is not None and self.checkpoint is None:
            raise ValueError("keep_last needs checkpoint: an s3:// prefix for checkpoints")
        return self


def parse_settings(data: dict[str, Any] | None) -> SageMakerSettings:
    """Validate a ``sagemaker:`` section; a missing section is an error naming the key."""
    if data is None:
        raise ValueError("the config has no sagemaker: section (see docs/sagemaker.md)")
    return SageMakerSettings.model_validate(data)
