"""`make setup` stays quiet: no setuptools notice boxes for the editable installs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_editable_installs_of_setup_print_no_build_backend_warning_boxes(tmp_path: Path):
    makefile = (ROOT / "Makefile").read_text()
    quiet = re.search(r"^PIP_QUIET := (.+)$", makefile, re.M)
    assert quiet is not None and "$(PIP_QUIET) $(BIN)/python -m pip install" in makefile
    env = dict(os.environ)
    for assignment in shlex.split(quiet.group(1)):
        key, _, value = assignment.partition("=")
        env[key] = value
    # an editable install as setup makes them, into a venv of its own (pip --python)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                           "install", "-q", "--no-deps", "-e",
                           str(ROOT / "tests" / "thirdparty" / "rewardkit-wordcount")],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "BuildBackendWarning" not in proc.stdout + proc.stderr
