"""Ray's authentication mode is rewardkit's decision, not a guess from the home folder.

Ray 2.60 turns token authentication on for a new local ``ray.init()`` cluster and writes
``~/.ray/auth_token``; from then on any ``ray start`` on the machine turns it on too. The
local Ray engine (``rewardkit score --engine ray``) and the Ray executor (``executor:
ray``) start their local cluster with the mode :mod:`rewardkit.execution.ray_cluster` decides:
``RAY_AUTH_MODE`` from the environment, else ``disabled``, with and without a token
file in the home folder. Each run is a fresh process with a temporary home and Ray temp
folder, so nothing is written to the real home and no other cluster on the machine is
joined."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from rewardkit.execution.ray_cluster import AUTH_MODE_ENV, with_auth_mode

TOKEN = "0123456789abcdef" * 2
REAL_TOKEN = Path.home() / ".ray" / "auth_token"
RAY_ENV = (AUTH_MODE_ENV, "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")

#: the executor in a fresh process, printing its statuses and the mode Ray runs under
EXECUTOR_SCRIPT = """
import json, sys
from ray._raylet import AuthenticationMode, get_authentication_mode
from rewardkit import RewardSet
rs = RewardSet.from_dict({"executor": "ray", "ray": {"actors": 1}, "rewards": {
    "answer": {"reward": "math_answer", "mode": "process", "timeout": 10}}})
rows = [{"prompt": "q", "reference": "7", "completion": "<answer>7</answer>"},
        {"prompt": "q", "reference": "7", "completion": "<answer>8</answer>"}]
result = rs.score(rows)
print(json.dumps({"values": [s.value for s in result.scores("answer")],
                  "token_auth": get_authentication_mode() == AuthenticationMode.TOKEN}))
"""


@pytest.fixture(autouse=True)
def _real_home_untouched() -> Iterator[None]:
    before = REAL_TOKEN.read_bytes() if REAL_TOKEN.exists() else None
    yield
    after = REAL_TOKEN.read_bytes() if REAL_TOKEN.exists() else None
    assert after == before, f"a test changed {REAL_TOKEN}"


@pytest.fixture(params=["no-token-file", "token-file"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A home folder without and with ``~/.ray/auth_token`` (as after any earlier local
    ``ray.init()`` on the machine)."""
    folder = tmp_path / "home"
    folder.mkdir()
    if request.param == "token-file":
        (folder / ".ray").mkdir()
        (folder / ".ray" / "auth_token").write_text(TOKEN + "\n")
    return folder


@pytest.fixture
def ray_env(home: Path) -> Iterator[dict[str, str]]:
    """The environment of a process starting its own local cluster: the temporary home,
    a short private Ray temp folder (socket paths must fit in 107 bytes), no Ray
    authentication or address variable."""
    temp = Path(tempfile.mkdtemp(prefix="rk", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k not in RAY_ENV}
    env.update(HOME=str(home), RAY_TMPDIR=str(temp))
    yield env
    shutil.rmtree(temp, ignore_errors=True)


def token_file(home: Path) -> str | None:
    path = home / ".ray" / "auth_token"
    return path.read_text() if path.exists() else None


def test_the_decision_keeps_a_mode_the_environment_sets_else_disables() -> None:
    assert with_auth_mode({})[AUTH_MODE_ENV] == "disabled"
    assert with_auth_mode({AUTH_MODE_ENV: ""})[AUTH_MODE_ENV] == "disabled"
    assert with_auth_mode({AUTH_MODE_ENV: "token", "X": "1"}) == {AUTH_MODE_ENV: "token",
                                                                  "X": "1"}


def test_the_ray_engine_starts_its_cluster_without_token_auth_whatever_the_home_holds(
        home: Path, ray_env: dict[str, str], tmp_path: Path) -> None:
    before = token_file(home)
    src = tmp_path / "samples.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "prompt": "q", "completion":
                                       f"<think>t</think><answer>{i}</answer>"}) + "\n"
                           for i in range(8)))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"rewards": {"format": {"reward": "soft_format"}}}))
    out = tmp_path / "scored.jsonl"
    done = subprocess.run(
        [str(Path(sys.executable).with_name("rewardkit")), "score", str(config), str(src),
         "--out", str(out), "--engine", "ray", "--json"],
        env=ray_env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["scored"] == 8
    assert len(out.read_text().splitlines()) == 8
    # no token written into the home folder (Ray's own default writes one), none changed
    assert token_file(home) == before


def run_executor(env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", EXECUTOR_SCRIPT], env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_ray_executor_starts_its_cluster_without_token_auth_whatever_the_home_holds(
        home: Path, ray_env: dict[str, str]) -> None:
    before = token_file(home)
    assert run_executor(ray_env) == {"values": [1.0, 0.0], "token_auth": False}
    assert token_file(home) == before


@pytest.mark.parametrize("home", ["no-token-file"], indirect=True)
def test_a_mode_the_user_sets_is_kept(home: Path, ray_env: dict[str, str]) -> None:
    ray_env.update({AUTH_MODE_ENV: "token", "RAY_AUTH_TOKEN": TOKEN})
    assert run_executor(ray_env) == {"values": [1.0, 0.0], "token_auth": True}
    assert token_file(home) is None  # the token came from the environment
