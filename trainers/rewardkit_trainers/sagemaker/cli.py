"""``rewardkit launch sagemaker CONFIG`` and ``rewardkit jobs status|logs NAME``.

Both return a process exit code (``rewardkit.EXIT_*``): EXIT_OK, EXIT_FAIL for an
AWS-side failure, EXIT_USAGE for a usage or config error (reported before any AWS call).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from rewardkit import EXIT_FAIL, EXIT_OK, EXIT_USAGE, ConfigError, load_config

from rewardkit_trainers.sagemaker.arguments import jobs_arguments, launch_arguments
from rewardkit_trainers.sagemaker.config import SageMakerSettings, check_job_name
from rewardkit_trainers.sagemaker.request import (
    StagedInputs,
    base_job_name,
    build_request,
    job_name,
    stage_commands,
    stage_inputs,
    upload,
)

LOG_GROUP = "/aws/sagemaker/TrainingJobs"


def _session(region: str | None) -> Any:
    import boto3

    return boto3.session.Session(region_name=region)


def load_launch_config(path: Path) -> tuple[SageMakerSettings, str]:
    """Validate the reward config and its ``sagemaker:`` section; returns the settings
    and the config text to upload. Raises ``rewardkit.ConfigError`` or ValueError."""
    config = load_config(path)
    settings = config.section("sagemaker")
    if settings is None:
        raise ValueError(f"{path}: the config has no sagemaker: section (see docs/sagemaker.md)")
    return settings, path.read_text(encoding="utf-8")


#: a channel with more files than this is shown as one line (count, bytes, prefix)
LISTED_FILES = 10


def upload_summary(staged: StagedInputs) -> list[dict[str, Any]]:
    """The planned uploads as a dry run shows them: each file of a small channel, and
    one entry (files, bytes, S3 prefix) for a channel of more than :data:`LISTED_FILES`
    files (a GUI dataset's thousands of screenshots would bury the request)."""
    by_channel: dict[str, list[tuple[Path, str]]] = {}
    for local, uri in staged.uploads:
        prefix = next((p for p in staged.channels.values() if uri.startswith(p)), uri)
        by_channel.setdefault(prefix, []).append((local, uri))
    out: list[dict[str, Any]] = []
    for prefix, files in by_channel.items():
        if len(files) <= LISTED_FILES:
            out += [{"from": str(local), "to": uri} for local, uri in files]
            continue
        root = os.path.commonpath([str(local.parent) for local, _ in files])
        out.append({"from": root, "to": prefix, "files": len(files),
                    "bytes": sum(local.stat().st_size for local, _ in files)})
    return out


def launch(argv: list[str], out: TextIO | None = None, boto_session: Any = None) -> int:
    """``rewardkit launch sagemaker CONFIG [--dry-run] [--job-name PREFIX]``: uploads the
    inputs and creates the job through the SageMaker SDK's ModelTrainer (in
    ``boto_session``, default: one for ``sagemaker.region``)."""
    parser = launch_arguments(argparse.ArgumentParser(prog="rewardkit launch"))
    return run_launch(parser.parse_args(argv), out, boto_session)


def run_launch(args: argparse.Namespace, out: TextIO | None = None,
               boto_session: Any = None) -> int:
    """Launch the parsed ``rewardkit launch`` arguments; returns the exit code."""
    out = out or sys.stdout
    try:
        settings, text = load_launch_config(args.config)
        # stages and schedules where the backend pins the step (rewardkit_trainers.fidelity)
        from rewardkit_trainers.fidelity import launch_warnings

        for warning in launch_warnings(args.config, settings.backend):
            print(f"rewardkit launch: warning: {warning}", file=sys.stderr)
        base = base_job_name(settings, check_job_name(args.job_name) if args.job_name else None)
        name = job_name(base)
        staged = stage_inputs(settings, args.config, text, name)
    except ConfigError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, FileNotFoundError) as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    request = build_request(settings, name, staged)
    if args.dry_run:
        plan = {
            "uploads": upload_summary(staged)
            + [{"from": "(generated)", "to": uri} for uri in staged.blobs],
            "create_training_job": request,
            **({"stages": stage_commands(settings, staged.spec)}
               if staged.spec is not None and staged.spec.stages else {}),
            "sent_by": "sagemaker.train.ModelTrainer (the SDK appends the job name's "
            "timestamp when it sends the request)",
        }
        json.dump(plan, out, indent=2)
        out.write("\n")
        return EXIT_OK
    try:
        from rewardkit_trainers.sagemaker.sdk import create_job, role_error_types
    except ImportError as exc:
        print(f"rewardkit launch: the SageMaker Python SDK is missing ({exc}): "
              "pip install 'rewardkit-trainers[sagemaker]'", file=sys.stderr)
        return EXIT_USAGE
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
        return EXIT_FAIL
    region = session.region_name or "us-east-1"
    print(f"created training job {name}\n  arn: {arn}", file=out)
    print(f"  status: rewardkit jobs status {name}\n  logs:   rewardkit jobs logs {name}", file=out)
    print(
        f"  console: https://{region}.console.aws.amazon.com/sagemaker/home?region={region}"
        f"#/jobs/{name}",
        file=out,
    )
    return EXIT_OK


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
    parser = jobs_arguments(argparse.ArgumentParser(prog="rewardkit jobs"))
    return run_jobs(parser.parse_args(argv), out)


def run_jobs(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Answer the parsed ``rewardkit jobs`` arguments; returns the exit code."""
    out = out or sys.stdout
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
            return EXIT_OK
        lines = job_logs(session.client("logs"), args.name)
    except (ClientError, BotoCoreError) as exc:
        print(f"rewardkit jobs {args.action} {args.name}: {exc}", file=sys.stderr)
        return EXIT_FAIL
    if not lines:
        print(f"no log streams for {args.name} in {LOG_GROUP} (yet)", file=sys.stderr)
        return EXIT_FAIL
    for stream, message in lines:
        host = stream.split("/", 1)[-1]
        if args.json:
            print(json.dumps({"stream": stream, "message": message}), file=out)
        else:
            print(f"[{host}] {message.rstrip()}", file=out)
    return EXIT_OK
