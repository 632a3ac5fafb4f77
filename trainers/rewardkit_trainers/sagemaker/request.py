"""Build the ``create_training_job`` request for a rewardkit run, and stage its inputs.

The request is a plain dict of ``create_training_job`` arguments, so it can be printed
(``--dry-run``), diffed and tested without AWS. The job itself is created through the
SageMaker Python SDK's ``ModelTrainer`` (:mod:`rewardkit_trainers.sagemaker.sdk`), which
is given the same fields and sends exactly this request (a test compares them on the
wire), apart from the job name, whose timestamp the SDK appends when it sends it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit_trainers.fidelity import STEP_PINNED
from rewardkit_trainers.sagemaker.config import SageMakerSettings, split_s3_uri
from rewardkit_trainers.sagemaker.spec import SPEC_FILE_NAME, RunSpec, Stage

ENTRYPOINT = ["python", "-m", "rewardkit_trainers.sagemaker"]
"""What the images run (their ENTRYPOINT; ModelTrainer without source code keeps it)."""
CONFIG_CHANNEL = "config"
SAGEMAKER_CHECKPOINT_PATH = "/opt/ml/checkpoints"
DEFAULT_COMMAND = ["rewardkit", "train", "{config}", "--output-dir", "{checkpoint_dir}"]
"""Without a ``command``: ``rewardkit train``, which learns the resume step from
``REWARDKIT_RESUME_FROM`` rather than from backend arguments."""


def base_job_name(settings: SageMakerSettings, override: str | None = None) -> str:
    """The job name prefix: ``--job-name``, ``sagemaker.job_name`` or ``rewardkit-<backend>``."""
    return override or settings.job_name or f"rewardkit-{settings.backend}"


def job_name(base: str, now: float | None = None) -> str:
    """``<base>-YYYYmmddHHMMSS``: the name ModelTrainer gives the job (local time, as the
    SDK stamps it; at most 63 characters, SageMaker's limit)."""
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime(now))
    return f"{base}-{stamp}"[:63]


@dataclass
class StagedInputs:
    """Where every channel lives in S3, and the local files still to upload there."""

    channels: dict[str, str]
    uploads: list[tuple[Path, str]] = field(default_factory=list)
    """(local file, s3:// destination) pairs"""
    blobs: dict[str, bytes] = field(default_factory=dict)
    """s3:// destination -> content written at launch (reward config, run spec)"""
    spec: RunSpec | None = None
    """what the container runs (also in ``blobs`` as the run spec file)"""


def run_spec(settings: SageMakerSettings, config_name: str,
             stages: list[Stage] | None = None) -> RunSpec:
    """The container's instructions derived from the settings (and the stage sequence of
    :func:`rewardkit_trainers.sagemaker.staging.plan_stages`)."""
    return RunSpec(
        backend=settings.backend,
        command=settings.command or DEFAULT_COMMAND,
        checkpoint_args=(
            settings.checkpoint_args
            if settings.checkpoint_args is not None
            else settings.command is not None
        ),
        merge_command=settings.merge_command,
        config_file=config_name,
        checkpoint_s3=f"{settings.checkpoint}/steps" if settings.checkpoint else None,
        output_s3=settings.output,
        keep_last=settings.keep_last,
        gpus_per_node=settings.gpus_per_node,
        deepspeed=settings.deepspeed,
        stages=stages or [],
    )


def stage_inputs(
    settings: SageMakerSettings, config_path: Path, config_text: str, name: str
) -> StagedInputs:
    """Plan the uploads: local channels and the reward config go under the upload prefix.

    Nothing is uploaded here (see :func:`upload`), so ``--dry-run`` can print the plan.
    A missing local path is a :class:`FileNotFoundError` naming the channel. A staged
    EasyR1/verl config gets its stage sequence in the run spec and, for EasyR1, one
    pinned reward file per stage in the config channel.
    """
    base = f"{settings.upload}/{name}" if settings.upload else f"{settings.output}/{name}/input"
    channels: dict[str, str] = {}
    uploads: list[tuple[Path, str]] = []
    for channel, source in settings.data.items():
        if source.is_s3:
            channels[channel] = source.source
            continue
        local = Path(source.source)
        if not local.is_absolute():
            local = config_path.parent / local
        if not local.exists():
            raise FileNotFoundError(
                f"sagemaker.data.{channel}: {source.source} does not exist (resolved to {local})"
            )
        prefix = f"{base}/{channel}"
        channels[channel] = prefix + "/"
        if local.is_dir():
            for path in sorted(p for p in local.rglob("*") if p.is_file()):
                uploads.append((path, f"{prefix}/{path.relative_to(local).as_posix()}"))
        else:
            uploads.append((local, f"{prefix}/{local.name}"))
    config_prefix = f"{base}/{CONFIG_CHANNEL}"
    channels[CONFIG_CHANNEL] = config_prefix + "/"
    stages: list[Stage] = []
    blobs = {f"{config_prefix}/{config_path.name}": config_text.encode("utf-8")}
    if settings.backend in STEP_PINNED and settings.command:
        from rewardkit.config import load_config

        from rewardkit_trainers.sagemaker.staging import plan_stages

        stages, files = plan_stages(settings.backend, settings.command, load_config(config_path),
                                    config_path)
        blobs.update({f"{config_prefix}/{n}": body for n, body in files.items()})
    spec = run_spec(settings, config_path.name, stages)
    blobs[f"{config_prefix}/{SPEC_FILE_NAME}"] = spec.dump().encode("utf-8")
    return StagedInputs(channels=channels, uploads=uploads, blobs=blobs, spec=spec)


def stage_commands(settings: SageMakerSettings, spec: RunSpec) -> list[dict[str, Any]]:
    """The head's command for each stage of a staged run, as a fresh job runs them
    (container paths; a restarted job starts at the stage of its newest complete step)."""
    from rewardkit_trainers.sagemaker.commands import Placement, training_command

    where = Placement(0, settings.instance_count, "<head ip>", settings.gpus_per_node or 1)
    root = Path(spec.checkpoint_dir)
    out = []
    for k, stage in enumerate(spec.stages):
        argv, _env = training_command(spec, where, root, stage.start or None, stage=stage)
        end = stage.end if stage.end is not None else "end"
        out.append({"stage": k, "steps": f"{stage.start}..{end}",
                    "reward_step": stage.start, "argv": argv})
    return out


def upload(staged: StagedInputs, s3: Any) -> None:
    """Upload the planned files and blobs with a boto3 S3 client."""
    for local, uri in staged.uploads:
        bucket, key = split_s3_uri(uri)
        s3.upload_file(str(local), bucket, key)
    for uri, body in staged.blobs.items():
        bucket, key = split_s3_uri(uri)
        s3.put_object(Bucket=bucket, Key=key, Body=body)


def environment(settings: SageMakerSettings) -> dict[str, str]:
    """The container environment: where the run spec is, the backend, the user's own."""
    return {
        "REWARDKIT_RUN_SPEC": f"/opt/ml/input/data/{CONFIG_CHANNEL}/{SPEC_FILE_NAME}",
        "REWARDKIT_BACKEND": settings.backend,
        **settings.environment,
    }


def build_request(settings: SageMakerSettings, name: str, staged: StagedInputs) -> dict[str, Any]:
    """The ``create_training_job`` arguments for this run, as ModelTrainer sends them."""
    image = settings.images[settings.backend]
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": settings.max_run}
    if settings.spot:
        assert settings.max_wait is not None  # filled in by validation
        stopping["MaxWaitTimeInSeconds"] = settings.max_wait
    resources: dict[str, Any] = {
        "InstanceType": settings.instance_type,
        "InstanceCount": settings.instance_count,
        "VolumeSizeInGB": settings.volume_size_gb,
    }
    if settings.keep_alive_period:
        resources["KeepAlivePeriodInSeconds"] = settings.keep_alive_period
    channels = []
    content_types = {k: v.content_type for k, v in settings.data.items()}
    for channel, uri in staged.channels.items():
        entry: dict[str, Any] = {
            "ChannelName": channel,
            "DataSource": {
                "S3DataSource": {
                    "S3DataType": "S3Prefix",
                    "S3Uri": uri,
                    "S3DataDistributionType": "FullyReplicated",
                }
            },
            "InputMode": "File",
        }
        if content_types.get(channel):
            entry["ContentType"] = content_types[channel]
        channels.append(entry)
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": image},
        "HyperParameters": {},
        "InputDataConfig": channels,
        "ResourceConfig": resources,
        "RoleArn": settings.role,
        "StoppingCondition": stopping,
        "OutputDataConfig": {"S3OutputPath": settings.output, "CompressionType": "GZIP"},
        "Environment": environment(settings),
        "EnableManagedSpotTraining": settings.spot,
    }
    if settings.checkpoint:
        # SageMaker's own sync gets a sub-prefix that stays empty; rewardkit syncs steps
        # itself under <checkpoint>/steps with per-node completion markers.
        request["CheckpointConfig"] = {
            "S3Uri": f"{settings.checkpoint}/sagemaker",
            "LocalPath": SAGEMAKER_CHECKPOINT_PATH,
        }
    if settings.tags:
        request["Tags"] = [{"Key": k, "Value": v} for k, v in settings.tags.items()]
    return request
