"""``python -m rewardkit_sandbox doctor``: the table and the JSON report."""

from __future__ import annotations

import json
import subprocess
import sys

from rewardkit_sandbox.layers import LAYER_CATALOGUE


def doctor(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardkit_sandbox", "doctor", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_doctor_prints_a_table_of_every_layer() -> None:
    completed = doctor()
    assert completed.returncode == 0, completed.stderr
    for name in LAYER_CATALOGUE:
        assert name in completed.stdout
    assert "sandbox usable" in completed.stdout


def test_doctor_json_says_which_layers_are_active() -> None:
    report = json.loads(doctor("--json").stdout)
    assert set(report["layers"]) == set(LAYER_CATALOGUE)
    assert report["usable"] is True
    assert report["layers"]["rlimits"]["active"] is True
