"""`rewardkit launch sagemaker` and `rewardkit jobs` against a moto server over HTTP."""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from pathlib import Path

import pytest
import yaml
from rewardkit_trainers.sagemaker.cli import jobs, launch, load_launch_config
from rewardkit_trainers.sagemaker.config import parse_settings
from rewardkit_trainers.sagemaker.request import build_request, stage_inputs
from sm_harness import s3_keys

from rewardkit.config import read_config_file

REWARDS = {"format": {"reward": "soft_format", "weight": 0.5}}


def write_config(tmp_path: Path, bucket: str, **sagemaker) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "train.jsonl").write_text('{"prompt": "1+1", "reference": 2}\n')
    section = {
        "backend": "easyr1",
        "role": "arn:aws:iam::123456789012:role/RewardkitSageMaker",
        "region": "us-east-1",
        "images": {"easyr1": "123456789012.dkr.ecr.us-east-1.amazonaws.com/rewardkit-easyr1:0.1"},
        "instance_type": "ml.p4d.24xlarge",
        "instance_count": 2,
        "spot": True,
        "max_run": 36000,
        "max_wait": 72000,
        "data": {"train": "data/train.jsonl", "val": f"s3://{bucket}/data/val/"},
        "output": f"s3://{bucket}/output",
        "checkpoint": f"s3://{bucket}/checkpoints/run-1",
        "keep_last": 3,
        "command": [
            "python3",
            "-m",
            "verl.trainer.main",
            "config=/opt/ml/input/data/val/easyr1.yaml",
        ],
        "environment": {"WANDB_MODE": "offline"},
        "tags": {"project": "rewardkit"},
        **sagemaker,
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"rewards": REWARDS, "sagemaker": section}))
    return path


def run_launch(*argv: str, boto_session=None) -> tuple[int, str]:
    out = io.StringIO()
    code = launch(list(argv), out=out, boto_session=boto_session)
    return code, out.getvalue()


@pytest.fixture
def sdk_env(aws_env, monkeypatch):
    """The SageMaker SDK against the moto server. The SDK validates the role through IAM
    SimulatePrincipalPolicy, which moto answers with HTTP 500; SAGEMAKER_VALIDATE_ROLE=false
    is the SDK's own switch for that one check (test_without_the_sdk_switch_... shows why)."""
    monkeypatch.setenv("SAGEMAKER_VALIDATE_ROLE", "false")
    return aws_env


def created_name(text: str) -> str:
    match = re.search(r"created training job (\S+)", text)
    assert match, text
    return match.group(1)


def upload_prefix(s3, bucket: str) -> str:
    """The <job name> part of output/<job name>/input/ where the launch uploaded."""
    names = {key.split("/")[1] for key in s3_keys(s3, bucket, "output/")}
    assert len(names) == 1, names
    return names.pop()


def test_dry_run_prints_the_request_and_calls_nothing(tmp_path, s3, bucket):
    config = write_config(tmp_path, bucket)
    code, text = run_launch("sagemaker", str(config), "--dry-run", "--job-name", "rk-dry")
    assert code == 0
    plan = json.loads(text)
    request = plan["create_training_job"]
    name = request["TrainingJobName"]
    assert re.fullmatch(r"rk-dry-\d{14}", name)
    assert request["EnableManagedSpotTraining"] is True
    assert request["StoppingCondition"] == {
        "MaxRuntimeInSeconds": 36000,
        "MaxWaitTimeInSeconds": 72000,
    }
    # the image's own ENTRYPOINT runs (python -m rewardkit_trainers.sagemaker)
    assert request["AlgorithmSpecification"] == {
        "TrainingInputMode": "File",
        "TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/rewardkit-easyr1:0.1",
    }
    assert plan["sent_by"].startswith("sagemaker.train.ModelTrainer")
    targets = [u["to"] for u in plan["uploads"]]
    assert f"s3://{bucket}/output/{name}/input/train/train.jsonl" in targets
    assert f"s3://{bucket}/output/{name}/input/config/rewardkit-run.json" in targets
    assert s3_keys(s3, bucket) == []  # nothing uploaded


def test_dry_run_summarises_a_channel_of_many_files(tmp_path, s3, bucket):
    """A GUI dataset's screenshots: one entry (count, bytes, prefix), not a line each;
    the launch itself still uploads every file (upload() reads staged.uploads)."""
    images = tmp_path / "data" / "images"
    images.mkdir(parents=True)
    for i in range(40):
        (images / f"shot{i:03d}.png").write_bytes(b"x" * (i + 1))
    config = write_config(tmp_path, bucket, data={"train": "data/train.jsonl",
                                                  "images": "data/images"})
    code, text = run_launch("sagemaker", str(config), "--dry-run", "--job-name", "rk-dry")
    assert code == 0
    plan = json.loads(text)
    name = plan["create_training_job"]["TrainingJobName"]
    summary = [u for u in plan["uploads"] if "files" in u]
    assert summary == [{"from": str(images), "to": f"s3://{bucket}/output/{name}/input/images/",
                        "files": 40, "bytes": sum(range(1, 41))}]
    targets = [u["to"] for u in plan["uploads"]]
    assert f"s3://{bucket}/output/{name}/input/train/train.jsonl" in targets  # small: listed
    assert len(text.splitlines()) < 200
    settings, cfg_text = load_launch_config(config)
    staged = stage_inputs(settings, config, cfg_text, name)
    assert len(staged.uploads) == 41


def test_launch_uploads_inputs_and_creates_the_job_through_the_sdk(tmp_path, s3, bucket,
                                                                   sdk_env):
    import boto3

    config = write_config(tmp_path, bucket)
    code, text = run_launch("sagemaker", str(config), "--job-name", "rk-spot-1")
    assert code == 0, text
    name = created_name(text)
    assert re.fullmatch(r"rk-spot-1-\d{14}", name)
    prefix = upload_prefix(s3, bucket)
    keys = s3_keys(s3, bucket)
    assert keys == [
        f"output/{prefix}/input/config/rewardkit-run.json",
        f"output/{prefix}/input/config/run.yaml",
        f"output/{prefix}/input/train/train.jsonl",
    ]
    spec = json.loads(s3.get_object(Bucket=bucket, Key=keys[0])["Body"].read())
    assert spec["backend"] == "easyr1"
    assert spec["checkpoint_s3"] == f"s3://{bucket}/checkpoints/run-1/steps"
    assert spec["keep_last"] == 3

    job = boto3.client("sagemaker").describe_training_job(TrainingJobName=name)
    assert job["EnableManagedSpotTraining"] is True
    assert job["StoppingCondition"]["MaxWaitTimeInSeconds"] == 72000
    assert job["CheckpointConfig"]["S3Uri"] == f"s3://{bucket}/checkpoints/run-1/sagemaker"
    assert job["ResourceConfig"]["InstanceCount"] == 2
    assert job["RoleArn"] == "arn:aws:iam::123456789012:role/RewardkitSageMaker"
    channels = {
        c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in job["InputDataConfig"]
    }
    assert channels == {
        "train": f"s3://{bucket}/output/{prefix}/input/train/",
        "val": f"s3://{bucket}/data/val/",
        "config": f"s3://{bucket}/output/{prefix}/input/config/",
    }


def test_the_sdk_sends_on_the_wire_the_request_dry_run_prints(tmp_path, s3, bucket, sdk_env):
    import boto3

    sent: list[dict] = []

    def capture(request, **_kw):  # the HTTP request as botocore sends it
        sent.append(json.loads(request.body))

    session = boto3.Session(region_name="us-east-1")
    session.events.register("before-send.sagemaker.CreateTrainingJob", capture)
    config = write_config(tmp_path, bucket)
    code, text = run_launch("sagemaker", str(config), "--job-name", "rk-wire",
                            boto_session=session)
    assert code == 0, text
    [body] = sent
    assert body["TrainingJobName"] == created_name(text)
    settings, config_text = load_launch_config(config)
    staged = stage_inputs(settings, config, config_text, upload_prefix(s3, bucket))
    assert body == build_request(settings, body["TrainingJobName"], staged)


def test_without_the_sdk_switch_moto_cannot_validate_the_role(tmp_path, s3, bucket, aws_env,
                                                              monkeypatch, capsys):
    import boto3

    monkeypatch.delenv("SAGEMAKER_VALIDATE_ROLE", raising=False)
    config = write_config(tmp_path, bucket)
    code, _ = run_launch("sagemaker", str(config), "--job-name", "rk-norole")
    assert code == 1
    err = capsys.readouterr().err
    assert "AWS or the SageMaker SDK refused the job rk-norole-...:" in err
    assert "Traceback" not in err
    jobs_found = boto3.client("sagemaker").list_training_jobs(NameContains="rk-norole")
    assert jobs_found["TrainingJobSummaries"] == []


def test_the_request_carries_the_environment(tmp_path, bucket):
    config = write_config(tmp_path, bucket)
    _, text = run_launch("sagemaker", str(config), "--dry-run", "--job-name", "rk-env")
    environment = json.loads(text)["create_training_job"]["Environment"]
    assert environment == {
        "REWARDKIT_RUN_SPEC": "/opt/ml/input/data/config/rewardkit-run.json",
        "REWARDKIT_BACKEND": "easyr1",
        "WANDB_MODE": "offline",
    }


def test_an_invalid_section_fails_before_any_call(tmp_path, s3, bucket, capsys):
    config = write_config(tmp_path, bucket, max_wait=100, role="not-a-role")
    code, _ = run_launch("sagemaker", str(config))
    assert code == 2
    err = capsys.readouterr().err
    assert f"{config}: invalid reward config" in err  # validated with the rest of the file
    assert "sagemaker.role: 'not-a-role' is not an IAM role ARN" in err
    assert s3_keys(s3, bucket) == []


def test_a_missing_local_channel_is_named(tmp_path, bucket, capsys):
    config = write_config(tmp_path, bucket, data={"train": "data/missing.jsonl"})
    assert run_launch("sagemaker", str(config))[0] == 2
    assert "sagemaker.data.train: data/missing.jsonl does not exist" in capsys.readouterr().err


def test_jobs_status_describes_the_job(tmp_path, bucket, sdk_env):
    config = write_config(tmp_path, bucket)
    code, text = run_launch("sagemaker", str(config), "--job-name", "rk-status")
    assert code == 0, text
    name = created_name(text)
    out = io.StringIO()
    assert jobs(["status", name, "--json"], out=out) == 0
    info = json.loads(out.getvalue())
    assert info["name"] == name
    assert info["status"] in {"InProgress", "Completed"}
    assert info["instance"] == "2 x ml.p4d.24xlarge"
    assert info["spot"] is True and info["max_wait"] == 72000


def test_jobs_status_of_an_unknown_job_fails_readably(aws_env, capsys):
    assert jobs(["status", "no-such-job"]) == 1
    assert "rewardkit jobs status no-such-job" in capsys.readouterr().err


def test_jobs_logs_reads_every_node_stream(aws_env):
    import boto3

    logs = boto3.client("logs")
    group = "/aws/sagemaker/TrainingJobs"
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=group)
    now = int(time.time() * 1000)
    for host, message in [("algo-1", "all 2 nodes joined"), ("algo-2", "training ended")]:
        stream = f"rk-logs/{host}-1700000000"
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        logs.put_log_events(
            logGroupName=group,
            logStreamName=stream,
            logEvents=[{"timestamp": now, "message": message}],
        )
    out = io.StringIO()
    assert jobs(["logs", "rk-logs"], out=out) == 0
    assert out.getvalue().splitlines() == [
        "[algo-1-1700000000] all 2 nodes joined",
        "[algo-2-1700000000] training ended",
    ]


def test_the_example_configs_have_valid_sagemaker_sections():
    examples = sorted((Path(__file__).parents[2] / "examples").glob("sagemaker-*.yaml"))
    assert [p.name for p in examples] == ["sagemaker-gsm8k-trl.yaml", "sagemaker-gui-easyr1.yaml"]
    for path in examples:
        settings = parse_settings(read_config_file(path)["sagemaker"])
        assert (
            settings.spot
            and settings.max_wait is not None
            and settings.max_wait >= settings.max_run
        )


def test_the_trl_example_dry_runs(capsys):
    example = Path(__file__).parents[2] / "examples" / "sagemaker-gsm8k-trl.yaml"
    code, text = run_launch("sagemaker", str(example), "--dry-run", "--job-name", "rk-example")
    assert code == 0, capsys.readouterr().err
    request = json.loads(text)["create_training_job"]
    assert request["ResourceConfig"] == {
        "InstanceType": "ml.g5.2xlarge",
        "InstanceCount": 1,
        "VolumeSizeInGB": 100,
    }


def test_a_bad_job_name_is_refused_before_any_call(tmp_path, bucket, capsys):
    config = write_config(tmp_path, bucket)
    assert run_launch("sagemaker", str(config), "--job-name", "bad_name!")[0] == 2
    assert "job name 'bad_name!': use 1-48 letters" in capsys.readouterr().err
