"""Shared by every test folder.

pytester drives the pytest-plugin tests in tests/core. The third-party plugin
distributions under tests/thirdparty (fixtures: a plugin as someone else would ship it)
are installed for the tests only: ``pip install --target build/test-plugins``, put on
``sys.path`` and on ``PYTHONPATH`` for the command lines the tests start, never into
the environment ``make setup`` builds.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest_plugins = ["pytester", "xdist_groups"]  # xdist_groups: tests/xdist_groups.py

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


#: what a skip for a missing compiler, runtime or crate source says (the sandbox's
#: find_toolchain, code rewards' toolchain_missing, the tests' own skipif reasons)
TOOLCHAIN_SKIP = re.compile(
    r"toolchain|compiler|sandbox PATH|\bno (gcc|g\+\+|node|go|javac?|rustc|cargo)\b|"
    r"rustc and cargo|crate sources", re.IGNORECASE)


def toolchain_skips(reports: list[pytest.TestReport]) -> Counter[str]:
    """The reasons of the skipped test reports that name a missing toolchain, counted."""
    found: Counter[str] = Counter()
    for report in reports:
        longrepr = getattr(report, "longrepr", None)
        reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr or "")
        reason = reason.removeprefix("Skipped: ")
        if TOOLCHAIN_SKIP.search(reason):
            found[reason.splitlines()[0][:120] if reason else reason] += 1
    return found


#: names one pytest run for its workers (set by the controller, inherited by xdist's workers)
RUN_ID_ENV = "REWARDKIT_TEST_RUN"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        os.environ.setdefault(RUN_ID_ENV, str(os.getpid()))


def _world_writable_prefix() -> str:
    return f"/run/rk-ww-{os.environ.get(RUN_ID_ENV, os.getpid())}-"


@pytest.fixture(scope="session")
def world_writable_folder() -> str:
    """A fresh 1777 folder under /run, one per test process (tests/sandbox/
    test_world_writable.py: a world-writable folder the sandbox must find by itself).

    It lives until the whole run ends (the controller's pytest_sessionfinish removes the
    run's folders), not until the tests that use it end: every sandbox pool that starts
    while it exists (the other xdist worker's too) mounts a private tmpfs over it, and the
    kernel detaches those mounts when the folder is removed, which retires every zygote
    covering it at its next task (tests/sandbox/test_workdir_clean.py); a test of another
    module that counts its zygotes then sees a replacement. One per process, so that a
    worker's files in it never meet the other worker's checks that it is empty."""
    path = _world_writable_prefix() + str(os.getpid())
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o1777)
    return path


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):
        for path in glob.glob(glob.escape(_world_writable_prefix()) + "*"):
            shutil.rmtree(path, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line (and the reasons) when tests skipped for a missing toolchain: `make setup`
    installs the toolchains as root; elsewhere they skip, and this says how many did."""
    found = toolchain_skips(terminalreporter.stats.get("skipped", []))
    if not found:
        return
    total = sum(found.values())
    terminalreporter.write_line(
        f"{total} test(s) skipped for a missing toolchain: `make setup` installs them as root "
        "(the Makefile's TOOLCHAINS, docs/testing.md)", yellow=True, bold=True)
    for reason, count in found.most_common(5):
        terminalreporter.write_line(f"  {count} x {reason}")
