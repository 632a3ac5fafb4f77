"""Shared by every test folder.

pytester drives the pytest-plugin tests in tests/core. The third-party plugin
distributions under tests/thirdparty (fixtures: a plugin as someone else would ship it)
are installed for the tests only: ``pip install --target build/test-plugins``, put on
``sys.path`` and on ``PYTHONPATH`` for the command lines the tests start, never into
the environment ``make setup`` builds.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
THIRDPARTY = Path(__file__).resolve().parent / "thirdparty"
TEST_PLUGINS = ROOT / "build" / "test-plugins"


def _fingerprint() -> str:
    """The sources of the fixtures (not what building them leaves beside them)."""
    digest = hashlib.sha256()
    for path in sorted(THIRDPARTY.rglob("*")):
        parts = path.relative_to(THIRDPARTY).parts
        if not path.is_file() or path.suffix not in (".py", ".toml"):
            continue
        if "build" in parts or "__pycache__" in parts or any(
                p.endswith(".egg-info") for p in parts):
            continue
        digest.update("/".join(parts).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def install_test_plugins() -> Path:
    """Install (once per change of their sources) the fixture distributions into
    ``build/test-plugins``; returns that folder."""
    stamp = TEST_PLUGINS / ".installed"
    wanted = _fingerprint()
    TEST_PLUGINS.parent.mkdir(parents=True, exist_ok=True)
    with open(TEST_PLUGINS.parent / "test-plugins.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # test runs started side by side install once
        if not stamp.is_file() or stamp.read_text() != wanted:
            sources = [str(p.parent) for p in sorted(THIRDPARTY.glob("*/pyproject.toml"))]
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                            "--no-build-isolation", "--upgrade", "--target",
                            str(TEST_PLUGINS), *sources], check=True)
            stamp.write_text(wanted)
    return TEST_PLUGINS


def use_test_plugins() -> None:
    """Put the fixture distributions on ``sys.path`` and ``PYTHONPATH``. Called when this
    file is imported, which is before any folder's conftest: those register rewards at
    import, and the registry discovers the installed plugins then, once."""
    site = str(install_test_plugins())
    if site not in sys.path:
        sys.path.insert(0, site)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if site not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([site, *paths])


use_test_plugins()
