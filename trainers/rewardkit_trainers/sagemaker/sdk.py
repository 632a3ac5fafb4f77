"""Create the training job through the SageMaker Python SDK (v3 ``ModelTrainer``).

The trainer gets exactly the fields of :func:`rewardkit_trainers.sagemaker.request.
build_request` (image, role, instance type and count, volume, managed spot, max run and
max wait, checkpoint S3 URI, channels, environment, tags), so the request the SDK sends
is the one ``--dry-run`` prints; a test compares the two on the wire. Two things stay
outside the SDK, both on purpose:

* The inputs are uploaded by :func:`rewardkit_trainers.sagemaker.request.upload` (boto3
  S3) before the trainer is built and reach it as ``s3://`` channels: ModelTrainer would
  stage local paths in its default bucket (``sagemaker-<region>-<account>``, created on
  first use) instead of the configured ``upload``/``output`` prefix, and the run spec
  and reward config are generated files, not paths.
* ``rewardkit jobs status|logs`` read the job with boto3 (``describe_training_job``,
  CloudWatch Logs), which is what the SDK's own ``TrainingJob`` wraps.

The SDK validates the role before it sends anything (IAM ``SimulatePrincipalPolicy``
plus the trust policy); a role it finds lacking is reported with the SDK's own message.
Its documented switch ``SAGEMAKER_VALIDATE_ROLE=false`` turns that check off.
"""

from __future__ import annotations

from typing import Any

from rewardkit_trainers.sagemaker.config import SageMakerSettings
from rewardkit_trainers.sagemaker.request import (
    SAGEMAKER_CHECKPOINT_PATH,
    StagedInputs,
    environment,
)


def model_trainer(settings: SageMakerSettings, staged: StagedInputs, base_name: str,
                  boto_session: Any) -> Any:
    """A ``sagemaker.train.ModelTrainer`` for the run (this validates the role)."""
    from sagemaker.core.helper.session_helper import Session
    from sagemaker.core.shapes import Tag
    from sagemaker.core.training.configs import (
        CheckpointConfig,
        Compute,
        InputData,
        OutputDataConfig,
        StoppingCondition,
    )
    from sagemaker.train import ModelTrainer

    compute: dict[str, Any] = {
        "instance_type": settings.instance_type,
        "instance_count": settings.instance_count,
        "volume_size_in_gb": settings.volume_size_gb,
        "enable_managed_spot_training": settings.spot,
    }
    if settings.keep_alive_period:
        compute["keep_alive_period_in_seconds"] = settings.keep_alive_period
    stopping: dict[str, Any] = {"max_runtime_in_seconds": settings.max_run}
    if settings.spot:
        stopping["max_wait_time_in_seconds"] = settings.max_wait
    content_types = {k: v.content_type for k, v in settings.data.items()}
    channels = [InputData(channel_name=name, data_source=uri,
                          **({"content_type": content_types[name]}
                             if content_types.get(name) else {}))
                for name, uri in staged.channels.items()]
    return ModelTrainer(
        sagemaker_session=Session(boto_session=boto_session),
        role=settings.role,
        base_job_name=base_name,
        training_image=settings.images[settings.backend],
        compute=Compute(**compute),
        stopping_condition=StoppingCondition(**stopping),
        output_data_config=OutputDataConfig(s3_output_path=settings.output),
        input_data_config=channels,
        checkpoint_config=(CheckpointConfig(s3_uri=f"{settings.checkpoint}/sagemaker",
                                            local_path=SAGEMAKER_CHECKPOINT_PATH)
                           if settings.checkpoint else None),
        environment=environment(settings),
        tags=[Tag(key=k, value=v) for k, v in settings.tags.items()] or None,
    )


def create_job(settings: SageMakerSettings, staged: StagedInputs, base_name: str,
               boto_session: Any) -> tuple[str, str]:
    """Create the job (without waiting for it); returns its name and ARN. The SDK names
    it ``<base_name>-YYYYmmddHHMMSS``."""
    trainer = model_trainer(settings, staged, base_name, boto_session)
    trainer.train(wait=False, logs=False)
    job = trainer._latest_training_job  # the SDK's handle on the job it just created
    return str(job.training_job_name), str(job.training_job_arn)


def role_error_types() -> tuple[type[BaseException], ...]:
    """The SDK's role-validation exception (to report it as an AWS-side refusal)."""
    from sagemaker.core.helper.iam_role_resolver import RoleValidationError

    return (RoleValidationError,)
