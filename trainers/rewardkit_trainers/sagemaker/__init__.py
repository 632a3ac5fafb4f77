"""SageMaker training jobs for rewardkit runs.

* launch side: :mod:`.config` (the ``sagemaker:`` section), :mod:`.request` (the
  ``create_training_job`` request and input staging), :mod:`.cli` (``rewardkit launch
  sagemaker`` and ``rewardkit jobs``);
* container side: :mod:`.entrypoint` (``python -m rewardkit_trainers.sagemaker``),
  :mod:`.topology` (resourceconfig.json), :mod:`.ray_cluster` (multi-node Ray),
  :mod:`.commands` (the training command per node), :mod:`.layouts`, :mod:`.store` and
  :mod:`.sync` (checkpoints in S3 with per-node completion flags).

Nothing here imports boto3 or Ray at module import time.
"""

from rewardkit_trainers.sagemaker.config import SageMakerSettings, parse_settings
from rewardkit_trainers.sagemaker.request import build_request

__all__ = ["SageMakerSettings", "build_request", "parse_settings"]
