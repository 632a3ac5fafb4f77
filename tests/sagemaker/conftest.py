"""Real parts for the SageMaker tests: a moto server subprocess reached over HTTP by
boto3 (AWS_ENDPOINT_URL, here and in every node process), and a cluster of entrypoint
processes on loopback."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sm_harness import Cluster, start_moto


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """One moto server for the session; tests isolate themselves by bucket/job name.
    Tests that use it are skipped where boto3 or moto[server] is not installed."""
    pytest.importorskip("boto3", reason="needs boto3 (pip install -e 'trainers[sagemaker]')")
    pytest.importorskip("moto.server", reason="needs moto[server]")
    proc, url = start_moto()
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def aws_env(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment pointing boto3 (here and in child processes) at the moto server."""
    env = {
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    return env


@pytest.fixture
def s3(aws_env: dict[str, str]):
    import boto3

    return boto3.client("s3")


@pytest.fixture
def bucket(s3) -> str:
    """A fresh bucket per test."""
    name = f"rk-test-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Node processes of one test; every one is killed (by session id) at the end."""
    c = Cluster(base=tmp_path, env={})
    yield c
    c.kill_all()
