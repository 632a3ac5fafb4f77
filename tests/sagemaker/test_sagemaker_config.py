"""The sagemaker: section is validated before any AWS call."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from rewardkit_trainers.sagemaker.config import SageMakerSettings, parse_settings, split_s3_uri

BASE = {
    "backend": "trl",
    "role": "arn:aws:iam::123456789012:role/RewardkitSageMaker",
    "images": {"trl": "123456789012.dkr.ecr.us-west-2.amazonaws.com/rewardkit-trl:0.1.0"},
    "output": "s3://my-bucket/rewardkit/output",
}


def error_of(**changes) -> str:
    with pytest.raises(ValidationError) as info:
        SageMakerSettings.model_validate({**BASE, **changes})
    return str(info.value)


def test_a_minimal_section_gets_defaults():
    settings = SageMakerSettings.model_validate(BASE)
    assert (settings.instance_type, settings.instance_count, settings.spot) == (
        "ml.g5.2xlarge",
        1,
        False,
    )
    assert settings.max_wait is None


def test_spot_defaults_max_wait_to_twice_max_run():
    settings = SageMakerSettings.model_validate({**BASE, "spot": True, "max_run": 3600})
    assert settings.max_wait == 7200


def test_max_wait_below_max_run_is_refused():
    assert "max_wait (3000s) must be >= max_run (3600s)" in error_of(
        spot=True, max_run=3600, max_wait=3000
    )


def test_max_wait_without_spot_is_refused():
    assert "max_wait applies to spot training only" in error_of(max_wait=7200)


@pytest.mark.parametrize(
    "role",
    [
        "RewardkitSageMaker",
        "arn:aws:iam::1234:role/x",
        "arn:aws:iam::123456789012:user/someone",
    ],
)
def test_a_role_that_is_not_a_role_arn_is_refused(role):
    assert "is not an IAM role ARN" in error_of(role=role)


@pytest.mark.parametrize("instance", ["p4d.24xlarge", "ml.p4d", "ml_g5_xlarge"])
def test_an_instance_type_outside_ml_star_is_refused(instance):
    assert "is not a SageMaker instance type" in error_of(instance_type=instance)


@pytest.mark.parametrize("field", ["output", "checkpoint", "upload"])
def test_s3_fields_need_s3_uris(field):
    assert "is not an S3 URI" in error_of(**{field: "my-bucket/prefix"})


def test_an_s3_channel_with_a_bad_bucket_is_refused():
    assert "malformed S3 URI" in error_of(data={"train": "s3://Bad_Bucket/x"})


def test_the_backend_needs_an_image():
    assert "images has no entry for backend 'easyr1'" in error_of(backend="easyr1")


def test_backends_other_than_trl_need_their_own_command():
    images = {"easyr1": "img"}
    assert "backend 'easyr1' needs command" in error_of(backend="easyr1", images=images)


def test_keep_last_needs_a_checkpoint_prefix():
    assert "keep_last needs checkpoint" in error_of(keep_last=2)


def test_the_config_channel_name_is_reserved():
    assert "'config' is reserved" in error_of(data={"config": "x.jsonl"})


def test_a_missing_section_is_named():
    with pytest.raises(ValueError, match="no sagemaker: section"):
        parse_settings(None)


def test_split_s3_uri():
    assert split_s3_uri("s3://bucket/a/b/") == ("bucket", "a/b")
    assert split_s3_uri("s3://bucket") == ("bucket", "")
