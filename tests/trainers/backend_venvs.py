"""Paths and the runner for backend virtualenvs (.venv-swift, .venv-verl).

Backends that pin conflicting libraries run in their own virtualenvs, made by
``trainers/scripts/make_backend_venvs.sh``; tests reach them through
:func:`run_in_venv`, and skip with the reason when a venv is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "configs"
BACKENDS = HERE / "backends"


def venv_python(name: str) -> Path:
    """The python of ``.venv-<name>``, or skip the test saying how to make it."""
    python = ROOT / f".venv-{name}" / "bin" / "python"
    if not python.exists():
        pytest.skip(f".venv-{name} is absent: run trainers/scripts/make_backend_venvs.sh {name}")
    return python


def run_in_venv(name: str, script: str, *args: str, env: dict[str, str] | None = None,
                timeout: float = 300) -> dict:
    """Run ``backends/<script>`` with ``.venv-<name>``; return the JSON it printed."""
    python = venv_python(name)
    full_env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    full_env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(python), str(BACKENDS / script), *args], capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=str(ROOT))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"{script} in .venv-{name} failed ({proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def tool_use_rewards() -> str:
    """examples/tool-use.yaml without its ``train:`` section (its rewards and ``on_error:
    ignore``, what verl needs), for a test that writes a train section of its own."""
    import yaml

    example = yaml.safe_load((ROOT / "examples/tool-use.yaml").read_text(encoding="utf-8"))
    return yaml.safe_dump({k: v for k, v in example.items() if k != "train"}, sort_keys=False)
