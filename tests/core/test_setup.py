"""`make setup` stays quiet: no setuptools notice boxes for the editable installs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_setup_names_the_missing_toolchains_in_one_line_where_it_may_not_install():
    """Issue 43: `make setup` installed no compiler, so the code rewards' tests skipped
    silently. Where it may not install (here: no apt-get), it names what is missing."""
    proc = subprocess.run(["make", "-s", "toolchains", "APT_GET=/nonexistent/apt-get",
                           "TOOLCHAINS=no-such-package-43 another-missing-43"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        "apt-get install no-such-package-43 another-missing-43"), proc.stdout


def test_setup_installs_the_toolchains_ci_used_to():
    """One list (the Makefile's TOOLCHAINS) of what the language tests need; .ci/run
    relies on `make test` for it."""
    makefile = (ROOT / "Makefile").read_text()
    block = re.search(r"^TOOLCHAINS := ((?:.*\\\n)*.*)$", makefile, re.M)
    assert block is not None
    packages = block.group(1).replace("\\\n", " ").split()
    for needed in ("gcc", "g++", "default-jdk-headless", "nodejs", "golang-go", "rustc",
                   "cargo", "librust-regex+default-dev", "librust-md5+default-dev",
                   "librust-rand+default-dev"):
        assert needed in packages
    assert re.search(r"^setup: .*\btoolchains\b", makefile, re.M)
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line for line in ci.splitlines() if line and not line.startswith("#")]
    assert commands[-2:] == ["make test", "make test-slow"]
    assert not any("apt-get" in c for c in commands)


def test_make_test_and_make_test_slow_split_the_suite_by_the_slow_mark():
    """The README's `make test` leaves the slow tests out and `make test-slow` runs only
    them, so the two (which CI runs) cover the whole suite once."""
    makefile = (ROOT / "Makefile").read_text()
    fast = re.search(r"^test: setup backends\n\t(.*)$", makefile, re.M)
    slow = re.search(r"^test-slow: setup backends\n\t(.*)$", makefile, re.M)
    assert fast is not None and slow is not None
    assert '-m "not slow"' in fast.group(1) and "-m slow" in slow.group(1)


def test_pytest_summary_counts_the_tests_skipped_for_a_missing_toolchain(
        pytester: pytest.Pytester, request: pytest.FixtureRequest):
    summary = request.config.pluginmanager.get_plugin(str(ROOT / "tests" / "conftest.py"))
    assert summary is not None and hasattr(summary, "pytest_terminal_summary")
    pytester.makepyfile(test_langs="""
        import pytest

        def test_go():
            pytest.skip("no go on the sandbox PATH")

        def test_java():
            pytest.skip("javac not found on the sandbox PATH; install the Java toolchain")

        @pytest.mark.skipif(True, reason="no node on the sandbox PATH")
        def test_node():
            pass

        def test_network():
            pytest.skip("needs a network")

        def test_runs():
            pass
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", plugins=[summary])
    result.assert_outcomes(passed=1, skipped=4)
    result.stdout.fnmatch_lines(["3 test(s) skipped for a missing toolchain: *",
                                 "  1 x no go on the sandbox PATH"])
    assert "needs a network" not in result.stdout.str().split("missing toolchain")[1]
