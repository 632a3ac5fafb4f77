"""Another distribution sharing rewardkit's files (PyPI's harbor-rewardkit installs a
``rewardkit`` package and a ``rewardkit`` script too): detected at import and by
``rewardkit plugins``, naming the other distribution and what to do.

Real installs: rewardkit's wheel, built from this checkout, and tiny local wheels that
claim ``rewardkit/__init__.py`` or the ``rewardkit`` script, installed by pip into fresh
virtual environments (their other dependencies come from this environment through a .pth).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PIP = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]


def _wheel(project: Path, out: Path) -> Path:
    subprocess.run([*PIP, "wheel", "--no-deps", "--no-build-isolation", str(project), "-w",
                    str(out)], check=True, capture_output=True, timeout=600)
    name = project.name.replace("-", "_") if project != ROOT else "rewardkit"
    return next(out.glob(f"{name}-*.whl"))


def _fake(tmp: Path, name: str, files: dict[str, str], script: str) -> Path:
    project = tmp / name
    for rel, text in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    packages = sorted({rel.split("/")[0] for rel in files})
    (project / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{name}"
        version = "0.1.0"
        [project.scripts]
        rewardkit = "{script}"
        [tool.setuptools]
        packages = {packages!r}
        """).replace("'", '"'))
    return _wheel(project, tmp / "wheels")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("clash")
    return {
        "rewardkit": _wheel(ROOT, tmp / "wheels"),
        # a stand-in for harbor-rewardkit: its own rewardkit package and script
        "harbor": _fake(tmp, "fake-harbor-rewardkit", {
            "rewardkit/__init__.py": "HARBOR = True\n",
            "rewardkit/harbor_cli.py": "def main():\n    print('harbor')\n"},
            "rewardkit.harbor_cli:main"),
        # a distribution that claims only the rewardkit script
        "script": _fake(tmp, "fake-script-only", {
            "fake_script_only/__init__.py": "def main():\n    print('other')\n"},
            "fake_script_only:main"),
    }


def _venv(tmp_path: Path, *install: Path) -> Path:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    # rewardkit's dependencies (pydantic, pluggy, rich, ...) from this environment
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for wheel in install:  # one at a time, in order: the later one overwrites
        subprocess.run([*PIP, "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                        "--no-index", str(wheel)], check=True, capture_output=True, timeout=300)
    return venv


def _run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONWARNINGS")}
    return subprocess.run(list(args), cwd=venv, env=env, capture_output=True, text=True,
                          timeout=300)


def test_rewardkit_alone_warns_of_nothing(wheels: dict[str, Path], tmp_path: Path) -> None:
    venv = _venv(tmp_path, wheels["rewardkit"])
    got = _run(venv, str(venv / "bin" / "python"), "-c", "import rewardkit")
    assert got.returncode == 0, got.stderr
    assert "InstallClashWarning" not in got.stderr
    assert "install clash" not in _run(venv, str(venv / "bin" / "rewardkit"), "plugins").stderr


def test_a_package_installed_over_by_rewardkit_is_named_at_import_and_in_plugins(
        wheels: dict[str, Path], tmp_path: Path) -> None:
    venv = _venv(tmp_path, wheels["harbor"], wheels["rewardkit"])
    got = _run(venv, str(venv / "bin" / "python"), "-c", "import rewardkit")
    assert got.returncode == 0, got.stderr
    assert "InstallClashWarning" in got.stderr
    assert "fake-harbor-rewardkit 0.1.0 also installs" in got.stderr
    assert "rewardkit/__init__.py" in got.stderr and "pip uninstall -y" in got.stderr
    listed = _run(venv, str(venv / "bin" / "rewardkit"), "plugins")
    assert listed.returncode == 0, listed.stderr
    assert "install clash:" in listed.stderr and "fake-harbor-rewardkit" in listed.stderr
    assert "builtin" in listed.stdout  # the plugin table is still printed


def test_a_script_installed_over_rewardkits_is_named_at_import(
        wheels: dict[str, Path], tmp_path: Path) -> None:
    venv = _venv(tmp_path, wheels["rewardkit"], wheels["script"])
    got = _run(venv, str(venv / "bin" / "python"), "-c", "import rewardkit")
    assert got.returncode == 0, got.stderr
    assert "fake-script-only 0.1.0 also installs" in got.stderr
    assert "bin/rewardkit" in got.stderr
