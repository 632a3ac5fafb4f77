"""The command-line arguments of ``rewardkit launch`` and ``rewardkit jobs``.

Shared by the ``rewardkit`` command line (:mod:`rewardkit_trainers.cli`, which adds the
two commands) and :mod:`rewardkit_trainers.sagemaker.cli` (which parses them when called
directly); argparse only, so adding the commands imports nothing of SageMaker's.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def launch_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``rewardkit launch``'s arguments, added to ``p``."""
    p.add_argument("platform", choices=["sagemaker"])
    p.add_argument("config", type=Path, help="reward config with a sagemaker: section")
    p.add_argument("--dry-run", action="store_true",
                   help="print the uploads and the create_training_job request; call nothing")
    p.add_argument("--job-name", help="job name prefix (default: sagemaker.job_name or "
                   "rewardkit-<backend>); the SageMaker SDK appends -YYYYmmddHHMMSS")
    return p


def jobs_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``rewardkit jobs``' arguments, added to ``p``."""
    p.add_argument("action", choices=["status", "logs"])
    p.add_argument("name", help="training job name")
    p.add_argument("--region", help="AWS region (default: the boto3 session's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p
