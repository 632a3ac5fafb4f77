"""`rewardkit train | export | eval | launch` as people use them (through the core CLI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from backend_venvs import CONFIGS, ROOT
from rewardkit_trainers.cli import run

STAGED = CONFIGS / "staged.yaml"


def rewardkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=300)


def write_config(tmp_path: Path, train: dict) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"rewards": {"f": {"reward": "soft_format"}},
                                    "train": train}))
    return path


def test_bad_train_section_is_file_key_reason_exit_2_no_traceback(tmp_path: Path):
    path = write_config(tmp_path, {"backend": "nope", "model": "m",
                                   "dataset": {"train": "x.jsonl"}, "num_generations": 1})
    proc = rewardkit("train", str(path), "--dry-run")
    assert proc.returncode == 2
    assert f"{path}:" in proc.stderr
    assert "train.backend:" in proc.stderr
    assert "train.num_generations:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_train_section_is_reported(tmp_path: Path, capsys):
    path = tmp_path / "none.yaml"
    path.write_text("rewards: {f: {reward: soft_format}}\n")
    assert run("train", [str(path)]) == 2
    assert "train: missing" in capsys.readouterr().err


def test_unknown_key_is_named(tmp_path: Path, capsys):
    path = write_config(tmp_path, {"model": "m", "dataset": {"train": "x.jsonl"}, "lr": 1})
    assert run("train", [str(path), "--dry-run"]) == 2
    assert "train.lr: unknown key" in capsys.readouterr().err


def test_missing_dataset_file_is_reported(tmp_path: Path, capsys):
    path = write_config(tmp_path, {"backend": "swift", "model": "m",
                                   "dataset": {"train": "nowhere.jsonl"}})
    assert run("train", [str(path), "--dry-run"]) == 2
    assert "train.dataset.train: file not found" in capsys.readouterr().err


def test_dry_run_swift_prints_the_swift_rlhf_command(tmp_path: Path, capsys):
    code = run("train", [str(STAGED), "--dry-run", "--backend", "swift",
                         "--output-dir", str(tmp_path), "--json"])
    assert code == 0
    described = json.loads(capsys.readouterr().out)
    argv = described["commands"][0]["argv"]
    assert argv[:4] == ["swift", "rlhf", "--rlhf_type", "grpo"]
    assert argv[argv.index("--num_generations") + 1] == "4"
    assert argv[argv.index("--tuner_type") + 1] == "lora"
    assert (tmp_path / "data" / "train.swift.jsonl").exists()
    row = json.loads((tmp_path / "data" / "train.swift.jsonl").read_text().splitlines()[0])
    assert set(row) == {"messages", "solution", "task"}


def test_dry_run_trl_shows_grpo_config(tmp_path: Path, capsys):
    config = tmp_path / "q.yaml"
    config.write_text((ROOT / "examples" / "quickstart.yaml").read_text())
    out = tmp_path / "out"
    assert run("train", [str(config), "--dry-run", "--json", "--output-dir", str(out)]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["reward_funcs"] == ["correct", "format", "partial_format"]
    assert described["grpo_config"]["reward_weights"] == [1.5, 0.25, 0.25]
    assert described["grpo_config"]["per_device_train_batch_size"] == 256  # 8 x 32
    assert described["grpo_config"]["scale_rewards"] == "batch"  # backend_args.trl
    assert (out / "data" / "train.jsonl").exists()  # generated data, nothing trained
    assert not (out / "final").exists()


def test_export_swift_prints_reward_funcs(tmp_path: Path):
    out = tmp_path / "plugin.py"
    proc = rewardkit("export", "swift", str(STAGED), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "--reward_funcs rewardkit_format rewardkit_tags rewardkit_number" in proc.stdout
    compile(out.read_text(), str(out), "exec")


def test_export_easyr1_and_trl_write_importable_files(tmp_path: Path):
    for target in ("easyr1", "trl"):
        out = tmp_path / f"{target}_rewards.py"
        proc = rewardkit("export", target, str(STAGED), "-o", str(out), "--step", "3")
        assert proc.returncode == 0, proc.stderr
        compile(out.read_text(), str(out), "exec")


def test_export_verl_prints_overrides():
    proc = rewardkit("export", "verl", str(STAGED))
    assert proc.returncode == 0, proc.stderr
    assert "reward.custom_reward_function.path=pkg://rewardkit_trainers.rewards.verl" in proc.stdout


def test_launch_without_sagemaker_module_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "rewardkit_trainers.sagemaker", None)
    assert run("launch", ["sagemaker", str(STAGED)]) == 2
    assert "rewardkit_trainers.sagemaker" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["train", "export", "eval"])
def test_help_works(command: str):
    proc = rewardkit(command, "--help")
    assert proc.returncode == 0
    assert f"rewardkit {command}" in proc.stdout


def _train_section() -> dict:
    return {"backend": "trl", "model": {"build": "qwen2"},
            "dataset": {"train": {"generate": "quickstart"}}}


def test_resume_prefers_the_step_the_sagemaker_entrypoint_restored(tmp_path: Path,
                                                                   monkeypatch):
    from rewardkit_trainers.config import parse_train
    from rewardkit_trainers.launch.trl_train import resume_checkpoint

    train = parse_train(_train_section())
    (tmp_path / "checkpoint-4").mkdir()
    assert resume_checkpoint(train, tmp_path) == str(tmp_path / "checkpoint-4")
    restored = tmp_path / "restored" / "checkpoint-2"
    restored.mkdir(parents=True)
    monkeypatch.setenv("REWARDKIT_RESUME_FROM", str(restored))
    assert resume_checkpoint(train, tmp_path) == str(restored)
    monkeypatch.setenv("REWARDKIT_RESUME_FROM", str(tmp_path / "missing"))
    assert resume_checkpoint(train, tmp_path) == str(tmp_path / "checkpoint-4")


@pytest.mark.parametrize(("section", "key", "text"), [
    ("train", "train.learning_rate", "learning_rate: .nan"),
    ("train", "train.vllm.gpu_memory_utilization", "vllm: {gpu_memory_utilization: .inf}"),
    ("train", "train.extra_args: loss_scale: [1]", "extra_args: {loss_scale: [1.0, -.inf]}"),
    ("eval", "eval.temperature", "temperature: .nan"),
    ("sagemaker", "sagemaker.max_run", "max_run: .inf"),
])
def test_validate_refuses_nan_and_infinity_in_trainer_sections_naming_the_key(
        tmp_path: Path, section: str, key: str, text: str):
    sections = {
        "train": "train:\n  model: m\n  dataset: {train: x.jsonl}\n",
        "eval": "eval:\n  limit: 4\n",
        "sagemaker": ("sagemaker:\n  backend: trl\n"
                      "  role: arn:aws:iam::111122223333:role/R\n"
                      "  images: {trl: 111122223333.dkr.ecr.us-west-2.amazonaws.com/rk:1}\n"
                      "  output: s3://bucket/out\n"),
    }
    body = sections[section] + f"  {text}\n"
    path = tmp_path / "nan.yaml"
    path.write_text("rewards:\n  f: {reward: soft_format}\n" + body)
    proc = rewardkit("validate", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert f"{key}:" in out
    assert "finite" in out
    assert "Traceback" not in out
