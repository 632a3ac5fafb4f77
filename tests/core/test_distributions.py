"""One way in for every distribution: the core names no other distribution of the repo;
plugins (rewardkit-trainers among them) add commands and config sections through hooks."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "rewardkit"


def _other_packages() -> set[str]:
    """Top-level packages of every other distribution in the repo (plugins, sandbox,
    trainers, test fixtures): read from their pyproject files and folders."""
    names: set[str] = set()
    for pyproject in ROOT.glob("**/pyproject.toml"):
        if pyproject.parent == ROOT or any(part.startswith(".venv") for part in pyproject.parts):
            continue
        tomllib.loads(pyproject.read_text())  # a real distribution
        for child in pyproject.parent.iterdir():
            if (child / "__init__.py").is_file() or (child.suffix == ".py"
                                                     and child.stem.startswith("rewardkit_")):
                names.add(child.name.removesuffix(".py"))
    return names


def test_the_repo_has_other_distributions_to_keep_out():
    assert {"rewardkit_trainers", "rewardkit_sandbox"} <= _other_packages()


def test_no_core_module_imports_another_distribution():
    others = _other_packages()
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno}: {m}" for m in modules
                          if m.split(".")[0] in others]
    assert offenders == []


_WITHOUT_OTHERS = """
import importlib.abc, importlib.metadata, sys
BLOCKED = set(sys.argv[1].split(","))

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"blocked: {name}", name=name)
        return None

sys.meta_path.insert(0, Block())
# the entry points of the blocked distributions are gone too, as if never installed
_eps = importlib.metadata.entry_points
importlib.metadata.entry_points = lambda **kw: [
    ep for ep in _eps(**kw) if ep.value.split(".")[0].split(":")[0] not in BLOCKED]
from rewardkit.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _core_only(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    blocked = ",".join(sorted(_other_packages()))
    return subprocess.run([sys.executable, "-c", _WITHOUT_OTHERS, blocked, *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_core_cli_works_with_every_other_distribution_absent(tmp_path: Path):
    help_text = _core_only("--help")
    assert help_text.returncode == 0, help_text.stderr
    assert "validate" in help_text.stdout and "score" in help_text.stdout
    assert "train" not in help_text.stdout.split("commands:")[1]
    rewards = _core_only("rewards", "--json")
    assert rewards.returncode == 0, rewards.stderr
    assert "soft_format" in {r["name"] for r in json.loads(rewards.stdout)}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"rewards": {"f": {"reward": "soft_format"}},
                                      "train": {"model": "m"}}))
    missing = _core_only("validate", str(config))
    assert missing.returncode == 2
    assert "train: unknown key" in missing.stderr
    assert "rewardkit plugins" in missing.stderr
    assert "Traceback" not in missing.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_help_lists_every_command_of_every_installed_distribution():
    proc = _cli("--help")
    assert proc.returncode == 0
    listed = proc.stdout.split("commands:")[1]
    for command in ("rewards", "plugins", "validate", "score", "serve", "test", "schema",
                    "new-plugin", "train", "export", "eval", "launch", "jobs"):
        assert re.search(rf"^    {command}\s", listed, re.MULTILINE), command


def test_trainers_register_through_the_entry_point_like_any_plugin():
    plugins = {p["name"]: p for p in json.loads(_cli("plugins", "--json").stdout)}
    assert plugins["trainers"]["distribution"] == "rewardkit-trainers"
    assert plugins["trainers"]["sections"] == ["train", "eval", "sagemaker"]
    assert plugins["trainers"]["error"] == ""


def test_plugin_sections_are_in_the_schema():
    schema = json.loads(_cli("schema").stdout)
    for section in ("train", "eval", "sagemaker"):
        assert section in schema["properties"]
    train = schema["$defs"]["TrainConfig"]
    assert "learning_rate" in train["properties"] and "dataset" in train["required"]


def test_plugin_sections_are_validated_with_the_rest(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "rewards": {"f": {"reward": "soft_format", "weight": "heavy"}},
        "train": {"model": {"build": "gpt9"}, "dataset": {"train": {"generate": "x"}},
                  "lr": 1},
        "sagemaker": {"role": "not-a-role"}}))
    proc = _cli("validate", str(config))
    assert proc.returncode == 2
    reported = proc.stderr
    assert "rewards.f.weight:" in reported
    assert "train.model.build:" in reported  # no union-branch label in the key path
    assert "train.dataset.train.generate:" in reported
    assert "train.lr: unknown key" in reported
    assert "sagemaker.role:" in reported
    assert "TinyModel" not in reported and "Traceback" not in reported


def test_a_valid_section_reads_back_as_its_model(tmp_path: Path):
    from rewardkit_trainers.config import TrainConfig

    from rewardkit.config import parse_config

    config = parse_config({"rewards": {"f": {"reward": "soft_format"}},
                           "train": {"model": "m", "dataset": {"train": "t.jsonl"}}})
    train = config.section("train")
    assert isinstance(train, TrainConfig) and train.dataset.train == "t.jsonl"
    assert config.section("eval") is None


ADAPTERS = ("trl", "swift", "easyr1", "verl")


def test_trainer_adapters_import_neither_each_other_nor_core_internals():
    package = ROOT / "trainers" / "rewardkit_trainers"
    offenders = []
    for adapter in ADAPTERS:
        path = package / f"{adapter}.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module
                others = {f"rewardkit_trainers.{a}" for a in ADAPTERS if a != adapter}
                private = module.startswith("rewardkit.") and any(
                    part.startswith("_") for part in module.split("."))
                if module in others or private:
                    offenders.append(f"{adapter}.py:{node.lineno}: {module}")
            if isinstance(node, ast.Attribute) and node.attr in ("stages", "components"):
                offenders.append(f"{adapter}.py:{node.lineno}: .{node.attr}")
    assert offenders == []


def test_scoring_processes_do_not_load_the_command_line():
    probe = ("import sys\nfrom rewardkit import RewardSet\n"
             "RewardSet.from_dict({'rewards': {'f': {'reward': 'soft_format'}}})\n"
             "print(sorted(m for m in sys.modules if m == 'rich' or m.endswith('.cli')))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
