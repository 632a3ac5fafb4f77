"""``rewardkit launch sagemaker CONFIG`` and ``rewardkit jobs status|logs NAME``.

Both return a process exit code: 0 success, 1 an AWS-side failure, 2 a usage or
config error (reported before any AWS call).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError
from rewardkit import ConfigError, load_config

from rewardkit_trainers.sagemaker.config import SageMakerSettings, check_job_name, parse_settings
from rewardkit_trainers.sagemaker.request import (
    base_job_name,
    build_request,
    job_name,
    stage_inputs,
    upload,
)

LOG_GROUP = "/aws/sagemaker/TrainingJobs"


def _session(region: str | None) -> Any:
    import boto3

    return boto3.session.Session(region_name=region)


def _settings_problems(exc: ValidationError) -> list[str]:
    lines = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in ("sagemaker", *err["loc"]))
        lines.append(f"  {loc}: {err['msg'].removeprefix('Value error, ')}")
    return lines


def load_launch_config(path: Path) -> tuple[SageMakerSettings, str]:
    """Validate the reward config and its ``sagemaker:`` section; returns the settings
    and the config text to upload. Raises ``rewardkit.ConfigError`` or ValueError."""
    config = load_config(path)
    try:
        settings = parse_settings(config.sagemaker)
    except ValidationError as exc:
        lines = [f"{path}: invalid sagemaker section", *_settings_problems(exc)]
        raise ValueError("\n".join(lines)) from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return settings, path.read_text(encoding="utf-8")


def launch(argv: list[str], out: TextIO | None = None, boto_session: Any = None) -> int:
    """``rewardkit launch sagemaker CONFIG [--dry-run] [--job-name PREFIX]``: uploads the
    inputs and creates the job through the SageMaker SDK's ModelTrainer (in
    ``boto_session``, default: one for ``sagemaker.region``)."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="rewardkit launch", description="Launch a training run on a cloud platform."
    )
    parser.add_argument("platform", choices=["sagemaker"])
    parser.add_argument("config", type=Path, help="reward config with a sagemaker: section")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the uploads and the create_training_job request; call nothing",
    )
    parser.add_argument(
        "--job-name",
        help="job name prefix (default: sagemaker.job_name or rewardkit-<backend>); the "
        "SageMaker SDK appends -YYYYmmddHHMMSS",
    )
    args = parser.parse_args(argv)

    try:
        settings, text = load_launch_config(args.config)
        base = base_job_name(settings, check_job_name(args.job_name) if args.job_name else None)
        name = job_name(base)
        staged = stage_inputs(settings, args.config, text, name)
    except ConfigError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    request = build_request(settings, name, staged)
    if args.dry_run:
        plan = {
            "uploads": [{"from": str(p), "to": uri} for p, uri in staged.uploads]
            + [{"from": "(generated)", "to": uri} for uri in staged.blobs],
            "create_training_job": request,
            "sent_by": "sagemaker.train.ModelTrainer (the SDK appends the job name's "
            "timestamp when it sends the request)",
        }
        json.dump(plan, out, indent=2)
        out.write("\n")
        return 0
    try:
        from rewardkit_trainers.sagemaker.sdk import create_job, role_error_types
    except ImportError as exc:
        print(f"rewardkit launch: the SageMaker Python SDK is missing ({exc}): "
              "pip install 'rewardkit-trainers[sagemaker]'", file=sys.stderr)
        return 2
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    session = boto_session or _session(settings.region)
    refused = (ClientError, BotoCoreError, ResponseParserError, ValueError, *role_error_types())
    try:
        upload(staged, session.client("s3"))
        name, arn = create_job(settings, staged, base, session)
    except refused as exc:
        print(f"rewardkit launch: AWS or the SageMaker SDK refused the job {base}-...: "
              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
              file=sys.stderr)
        return 1
    region = session.region_name or "us-east-1"
    print(f"created training job {name}\n  arn: {arn}", file=out)
    print(f"  status: rewardkit jobs status {name}\n  logs:   rewardkit jobs logs {name}", file=out)
    print(
        f"  console: https://{region}.console.aws.amazon.com/sagemaker/home?region={region}"
        f"#/jobs/{name}",
        file=out,
    )
    return 0


def _fmt_time(value: Any) -> str:
    return value.isoformat(timespec="seconds") if isinstance(value, datetime) else str(value)


def job_status(sm: Any, name: str) -> dict[str, Any]:
    """The fields of ``describe_training_job`` a person asks about."""
    job = sm.describe_training_job(TrainingJobName=name)
    stopping = job.get("StoppingCondition", {})
    info: dict[str, Any] = {
        "name": job["TrainingJobName"],
        "status": job["TrainingJobStatus"],
        "secondary_status": job.get("SecondaryStatus"),
        "failure_reason": job.get("FailureReason"),
        "instance": f"{job['ResourceConfig']['InstanceCount']} x "
        f"{job['ResourceConfig']['InstanceType']}",
        "spot": bool(job.get("EnableManagedSpotTraining")),
        "max_run": stopping.get("MaxRuntimeInSeconds"),
        "max_wait": stopping.get("MaxWaitTimeInSeconds"),
        "checkpoint": (job.get("CheckpointConfig") or {}).get("S3Uri"),
        "output": job.get("OutputDataConfig", {}).get("S3OutputPath"),
        "model_artifacts": (job.get("ModelArtifacts") or {}).get("S3ModelArtifacts"),
        "created": _fmt_time(job.get("CreationTime")),
        "training_seconds": job.get("TrainingTimeInSeconds"),
        "billable_seconds": job.get("BillableTimeInSeconds"),
    }
    if info["spot"] and job.get("TrainingTimeInSeconds") and job.get("BillableTimeInSeconds"):
        saved = 1 - job["BillableTimeInSeconds"] / job["TrainingTimeInSeconds"]
        info["spot_savings"] = f"{saved:.0%}"
    return {k: v for k, v in info.items() if v is not None}


def job_logs(logs: Any, name: str) -> list[tuple[str, str]]:
    """(stream, message) pairs of every ``NAME/algo-N-...`` stream, oldest first."""
    streams: list[str] = []
    kwargs: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamNamePrefix": f"{name}/"}
    while True:
        page = logs.describe_log_streams(**kwargs)
        streams += [s["logStreamName"] for s in page.get("logStreams", [])]
        if not page.get("nextToken"):
            break
        kwargs["nextToken"] = page["nextToken"]
    lines: list[tuple[str, str]] = []
    for stream in sorted(streams):
        token = None
        while True:
            req: dict[str, Any] = {
                "logGroupName": LOG_GROUP,
                "logStreamName": stream,
                "startFromHead": True,
            }
            if token:
                req["nextToken"] = token
            page = logs.get_log_events(**req)
            lines += [(stream, e["message"]) for e in page.get("events", [])]
            if not page.get("events") or page.get("nextForwardToken") == token:
                break
            token = page.get("nextForwardToken")
    return lines


def jobs(argv: list[str], out: TextIO | None = None) -> int:
    """``rewardkit jobs status NAME [--json]`` and ``rewardkit jobs logs NAME``."""
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="rewardkit jobs", description="SageMaker jobs.")
    parser.add_argument("action", choices=["status", "logs"])
    parser.add_argument("name", help="training job name")
    parser.add_argument("--region", help="AWS region (default: the boto3 session's)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    from botocore.exceptions import BotoCoreError, ClientError

    session = _session(args.region)
    try:
        if args.action == "status":
            info = job_status(session.client("sagemaker"), args.name)
            if args.json:
                json.dump(info, out, indent=2)
                out.write("\n")
            else:
                width = max(len(k) for k in info)
                for key, value in info.items():
                    print(f"{key:<{width}}  {value}", file=out)
            return 0
        lines = job_logs(session.client("logs"), args.name)
    except (ClientError, BotoCoreError) as exc:
        print(f"rewardkit jobs {args.action} {args.name}: {exc}", file=sys.stderr)
        return 1
    if not lines:
        print(f"no log streams for {args.name} in {LOG_GROUP} (yet)", file=sys.stderr)
        return 1
    for stream, message in lines:
        host = stream.split("/", 1)[-1]
        if args.json:
            print(json.dumps({"stream": stream, "message": message}), file=out)
        else:
            print(f"[{host}] {message.rstrip()}", file=out)
    return 0
