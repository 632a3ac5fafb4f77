"""Every shell command shown in the docs and the examples runs.

Commands are collected, not listed: fenced ``bash``/``sh``/``shell`` blocks of README.md
and docs/**/*.md, and the commented commands of examples/ configs (``#   rewardkit ...``
lines, with ``\\`` continuations). Each distinct command is one test, run with bash in a
scratch folder that links the repository's top-level entries (relative paths work, what
a command writes stays out of the checkout); the commands of one file run in file order
in one scratch folder, so a later command sees what an earlier one wrote.

Commands run in a throwaway virtualenv layered over the test's own (:func:`overlay`): it
sees every package of the test's environment, and what a documented ``pip install``
installs (the scaffolded plugin, an editable reinstall) lands in it, not in the test's
environment. pip runs there without an index and without build isolation, so a command
whose requirements are all present needs no network.

Only commands that need what this machine lacks are skipped, each by a pattern in
:data:`SKIP` that states why; a command that needs a GPU or AWS and is not matched fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

#: (pattern searched in the command, why it does not run here)
SKIP: list[tuple[str, str]] = [
    (r"(^|[\s(])aws\s", "needs an AWS account and credentials"),
    (r"(^|\s)docker\s", "builds and pushes a CUDA image to a registry (Docker daemon, AWS)"),
    (r"rewardkit launch sagemaker(?!.*--dry-run)", "starts a SageMaker training job (AWS)"),
    (r"rewardkit jobs\s", "queries SageMaker training jobs (AWS)"),
    (r"^swift rlhf\s", "trains a 7B model with vLLM (GPU)"),
    (r"python3 -m verl\.trainer\.main", "trains with vLLM rollouts under Ray (GPU)"),
    (r"gpu_check\.sh", "needs an NVIDIA GPU (recorded in docs/records/gpu-check-h200.txt)"),
    (r"^make test\b", "runs the test suite (`make test-slow`: the slow tests, this one "
                      "included)"),
    (r"^make demo-record\b", "runs the demo (`rewardkit train` and `rewardkit eval` of "
                             "examples/quickstart.yaml run here as their own documented "
                             "commands) and rewrites docs/records; "
                             "tests/trainers/test_quickstart_record.py runs its script on a "
                             "short run"),
    (r"^make demo-seeds\b", "runs the demo once per seed, five times over (about 12 minutes "
                            "on 2 cores), and rewrites docs/records/quickstart-seeds.*; "
                            "tests/trainers/test_quickstart_record.py checks its script's "
                            "parts and that eval.expected holds the recorded seeds"),
    (r"^make demo\b", "(re)installs .venv, then runs `rewardkit train examples/quickstart.yaml` "
                      "and `rewardkit eval examples/quickstart.yaml`, which run here as their "
                      "own documented commands"),
    (r"twine upload", "publishes to PyPI"),
    (r"^vllm serve\b", "serves a 7B judge with vLLM (GPU)"),
    (r"^rewardkit test --judge judge\.yaml", "probes the reader's own judge endpoint (vLLM "
     "or an API); tests/plugins/judge/test_judge_probes.py runs it against a judge server"),
    (r"rewardkit_judge\.chat_server --model /models/", "serves the reader's own judge model, "
     "which runs forever; tests/plugins/judge start this server on a model built in the test"),
    (r"^pip install build twine\b", "downloads the packaging tools from PyPI, for the "
                                      "upload below (not rewardkit dependencies)"),
    (r"python -m build\b", "builds a distribution for upload (needs `build`, only with "
                           "`twine upload`)"),
]

#: copied rather than linked: configs there name paths relative to themselves
#: (``../runs``, ``../build``), which must land in the scratch folder
COPIED = frozenset({"examples"})

COMMAND_WORDS = ("rewardkit", "python", "python3", "pip", "make", "cp", "mkdir", "swift",
                 "trainers/scripts/", "source", "export", "pytest")
FENCE = re.compile(r"^```(bash|sh|shell)\s*$")
COMMENTED = re.compile(r"^#\s{2,}(\S.*)$")


@dataclass(frozen=True)
class Command:
    source: str   # file:line
    file: str
    text: str

    @property
    def skip_reason(self) -> str | None:
        for pattern, reason in SKIP:
            if re.search(pattern, self.text, re.MULTILINE):
                return reason
        return None


def _join(lines: list[str]) -> list[tuple[int, str]]:
    """(line offset, command) from shell lines: continuations joined, heredocs kept whole,
    comment-only and empty lines dropped."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        start, parts = i, [line]
        heredoc = re.search(r"<<-?'?(\w+)'?", line)
        while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            parts.append(lines[i])
        if heredoc:
            end = heredoc.group(1)
            while i + 1 < len(lines) and lines[i].strip() != end:
                i += 1
                parts.append(lines[i])
        out.append((start, "\n".join(parts)))
        i += 1
    return out


def markdown_commands(path: Path) -> list[Command]:
    lines = path.read_text(encoding="utf-8").splitlines()
    rel = path.relative_to(ROOT).as_posix()
    found: list[Command] = []
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            for offset, text in _join(lines[i + 1:j]):
                found.append(Command(f"{rel}:{i + 2 + offset}", rel, text))
            i = j
        i += 1
    return found


def example_commands(path: Path) -> list[Command]:
    rel = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Command] = []
    i = 0
    while i < len(lines):
        m = COMMENTED.match(lines[i])
        if m and m.group(1).startswith(COMMAND_WORDS):
            start, parts = i, [m.group(1)]
            while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                parts.append(lines[i].lstrip("#").strip())
            text = "\n".join(parts)
            for command in re.split(r";\s+(?=rewardkit )", text):  # `a; b` on one line
                found.append(Command(f"{rel}:{start + 1}", rel, command))
        i += 1
    return found


def collect() -> list[Command]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    examples = sorted(p for p in (ROOT / "examples").rglob("*")
                      if p.suffix in (".yaml", ".yml", ".toml"))
    seen: set[str] = set()
    commands = []
    for command in [c for p in docs for c in markdown_commands(p)] + \
                   [c for p in examples for c in example_commands(p)]:
        key = _without_comments(command.text)
        if key not in seen:
            seen.add(key)
            commands.append(command)
    return commands


def _without_comments(text: str) -> str:
    """The command without trailing ``# ...`` comments and extra spaces (the same command
    shown in two places with different comments runs once)."""
    lines = [re.sub(r"\s+#\s.*$", "", line).strip() for line in text.splitlines()]
    return "\n".join(" ".join(line.split()) for line in lines)


COMMANDS = collect()

#: under pytest-xdist (-n 2 --dist loadgroup) every command runs on one
#: worker, in order: a later command uses what an earlier one wrote (:func:`scratch`;
#: tests/xdist_groups.py keeps the group whole on pytest 9.2)
pytestmark = pytest.mark.xdist_group("doc_commands")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One scratch folder for every documented command, linking the repository's entries.

    Shared, because a command shown in several files runs once (the first time it is
    shown) and a later command of another file may use what it wrote: the plugin guide's
    ``pytest rewardkit-keywords`` tests the plugin that the README's ``rewardkit new-plugin
    keywords`` wrote."""
    return {}


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a throwaway virtualenv layered over the test's own: its
    site-packages come first, then the test environment's (a ``.pth`` file adds them with
    their own ``.pth`` files, so editable installs resolve), and each console script of
    the test environment (``rewardkit``, ``pip``, ``pytest``, ...) is copied with this
    interpreter, so a command sees what an earlier ``pip install`` put here."""
    folder = tmp_path_factory.mktemp("overlay_venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    bin_dir = folder / "bin"
    (site_packages,) = (folder / "lib").glob("python*/site-packages")
    (parent,) = [p for p in sys.path if p.endswith("site-packages")
                 and Path(p).resolve().is_relative_to(Path(sys.prefix).resolve())]
    (site_packages / "_test_environment.pth").write_text(
        f"import site; site.addsitedir({parent!r})\n", encoding="utf-8")
    for script in sorted(VENV_BIN.iterdir()):
        target = bin_dir / script.name
        if target.exists() or script.is_symlink() or not script.is_file():
            continue
        try:
            first, rest = script.read_text(encoding="utf-8").split("\n", 1)
        except (UnicodeDecodeError, ValueError):
            continue
        if first.startswith("#!") and Path(first[2:].strip()).parent == VENV_BIN:
            target.write_text(f"#!{bin_dir / 'python'}\n{rest}", encoding="utf-8")
            target.chmod(0o755)
    return bin_dir


def _folder(scratch: dict[str, Path], file: str, factory: pytest.TempPathFactory) -> Path:
    file = "docs"  # one folder for all (see ``scratch``)
    if file not in scratch:
        folder = factory.mktemp("docs_commands")
        for entry in ROOT.iterdir():
            if entry.name in COPIED:
                shutil.copytree(entry, folder / entry.name)
            elif entry.name not in (".git", "build", "runs") and \
                    not entry.name.endswith(".egg-info"):  # an editable install rewrites it
                (folder / entry.name).symlink_to(entry)
        scratch[file] = folder
    return scratch[file]


def test_commands_are_found():
    files = {c.file for c in COMMANDS}
    assert "README.md" in files and any(f.startswith("examples/") for f in files)
    assert any(c.text.startswith("rewardkit score examples/") for c in COMMANDS)


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=[c.source for c in COMMANDS])
def test_documented_command_runs(command: Command, scratch: dict[str, Path], overlay: Path,
                                 tmp_path_factory: pytest.TempPathFactory):
    reason = command.skip_reason
    if reason:
        pytest.skip(reason)
    cwd = _folder(scratch, command.file, tmp_path_factory)
    path = os.pathsep.join([str(overlay), str(VENV_BIN), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "VIRTUAL_ENV": str(overlay.parent),
           "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false",
           # pip: what the docs install is already present (make setup); nothing is fetched
           "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command.text], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (
        f"{command.source}: `{command.text}` exited {proc.returncode}\n"
        f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
