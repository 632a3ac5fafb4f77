"""What each backend refuses or approximates, said before a run starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from backend_venvs import CONFIGS, ROOT
from rewardkit_trainers.cli import run as cli_run
from rewardkit_trainers.fidelity import check, group_needs, pinned_file_warnings

from rewardkit import ConfigError, parse_config
from rewardkit.config import load_config


def test_group_needs_names_every_setting_that_needs_whole_groups():
    config = parse_config({"aggregate": "normalize_then_sum",
                           "rewards": {"longest": {"reward": "check_longest"},
                                       "fmt": {"reward": "soft_format"}}})
    assert [key for key, _ in group_needs(config)] == [
        "aggregate", "on_error", "rewards.longest.reward"]


@pytest.mark.parametrize(("settings", "whole_groups"), [
    ({"rewards": {"fmt": {"reward": "soft_format"}}}, False),
    ({"aggregate": "normalize_then_sum", "rewards": {"fmt": {"reward": "soft_format"}}}, True),
    ({"rewards": {"longest": {"reward": "check_longest"}}}, True),
])
def test_rewardkit_score_and_the_trainers_agree_on_what_needs_whole_groups(
        settings: dict, whole_groups: bool):
    # one definition (rewardkit.authoring.whole_group_needs): `rewardkit score` reads
    # whole groups, verl refuses, EasyR1 asks for packed prompt ids, for the same configs
    from rewardkit_trainers.rewards.easyr1 import needs_prompt_identity

    from rewardkit import RewardSet
    from rewardkit.scoring.jsonl import _needs_whole_groups

    config = parse_config({"on_error": "ignore", **settings})
    assert _needs_whole_groups(RewardSet(config)) is whole_groups
    assert bool(group_needs(config)) is whole_groups
    assert bool(needs_prompt_identity(config)) is whole_groups
    if whole_groups:
        with pytest.raises(ConfigError):
            check(config, "verl")
    else:
        assert check(config, "verl") == []


@pytest.mark.parametrize("backend", ["trl", "swift", "easyr1"])
def test_backends_that_see_whole_groups_accept_them(backend: str):
    config = parse_config({"aggregate": "normalize_then_sum",
                           "rewards": {"longest": {"reward": "check_longest"}}})
    assert check(config, backend) == []


def test_verl_refuses_with_every_key_named():
    config = parse_config({"rewards": {"longest": {"reward": "check_longest"}}})
    with pytest.raises(ConfigError) as err:
        check(config, "verl", "x.yaml")
    assert [k for k, _ in err.value.problems] == ["on_error", "rewards.longest.reward"]


def test_a_schedule_is_a_staircase_where_the_step_is_pinned():
    assert all(check(load_config(ROOT / "examples" / "quickstart.yaml"), backend) == []
               for backend in ("trl", "swift", "easyr1", "verl"))  # constant weights
    data = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    data["rewards"]["format"]["weight"] = {"schedule": "linear", "start": 0.5, "end": 1.0,
                                           "steps": 50}
    config = parse_config(data)
    assert check(config, "trl") == [] and check(config, "swift") == []
    for backend in ("easyr1", "verl"):
        (warning,) = check(config, backend)
        assert warning.startswith("rewards.format.weight follows a schedule")


def test_a_pinned_file_names_the_stages_it_never_reaches():
    config = load_config(CONFIGS / "staged.yaml")
    warning = pinned_file_warnings(config, "easyr1", 0)[-1]
    assert "step(s) 2 never apply" in warning
    assert pinned_file_warnings(config, "easyr1", 2) == []


@pytest.mark.parametrize("backend", ["easyr1", "verl"])
def test_a_file_pinned_where_a_weight_is_0_names_the_component_it_trains_without(
        backend: str):
    """tags ramps 0 -> 1 over 4 steps: a file pinned to step 0 trains without it for the
    whole job, which the warning says, with the step it would turn on and the fix."""
    config = load_config(CONFIGS / "staged.yaml")
    off = pinned_file_warnings(config, backend, 0)[0]
    assert off.startswith("this file is pinned to step 0, where rewards.tags.weight is 0: "
                          "tags is off for every step of the job")
    assert "turns non-zero at step 1" in off
    assert "`rewardkit train` with train.stages" in off and "train.stages: [1]" in off
    (stage_only,) = pinned_file_warnings(config, backend, 1)  # tags is on from step 1
    assert "weight is 0" not in stage_only
    constant = parse_config({"on_error": "ignore", "rewards": {
        "fmt": {"reward": "soft_format"}, "never": {"reward": "tag_count", "weight": 0}}})
    assert pinned_file_warnings(constant, backend, 0) == []  # 0 for good is no surprise
    assert pinned_file_warnings(config, "swift", 0) == []


def test_export_prints_the_warnings(tmp_path: Path, capsys):
    assert cli_run("export", ["easyr1", str(CONFIGS / "staged.yaml"),
                              "-o", str(tmp_path / "r.py")]) == 0
    err = capsys.readouterr().err
    assert "rewards.tags.weight follows a schedule" in err
    assert "pinned to step 0: the stages that start at step(s) 2 never apply" in err
    assert "rewards.tags.weight is 0: tags is off for every step of the job" in err


def test_train_dry_run_lists_the_warnings(tmp_path: Path, capsys):
    import json

    assert cli_run("train", [str(CONFIGS / "staged.yaml"), "--dry-run", "--json",
                             "--output-dir", str(tmp_path)]) == 0
    description = json.loads(capsys.readouterr().out)
    schedule, off, *keys = description["warnings"]
    # then the train keys EasyR1 cannot honour (the LoRA's dropout, bf16: false)
    assert [k.split(":")[0] for k in keys] == ["train.lora.dropout", "train.bf16"]
    assert schedule.startswith("rewards.tags.weight follows a schedule")
    # job 0 runs steps 0..1 pinned to step 0 (tags weight 0); job 1 is pinned to 2 (0.5)
    assert off.startswith("job 0 is pinned to step 0, where rewards.tags.weight is 0: "
                          "tags is off for steps 0..1 (2 steps)")


def test_sagemaker_launch_warns_only_about_schedules_where_the_step_is_pinned():
    """Stages run as successive resumed jobs inside the SageMaker job (no warning); a
    weight schedule still moves only at their boundaries."""
    from rewardkit_trainers.fidelity import launch_warnings

    assert launch_warnings(ROOT / "examples" / "sagemaker-gui-easyr1.yaml", "easyr1") == []
    (warning,) = launch_warnings(CONFIGS / "staged.yaml", "easyr1")
    assert warning.startswith("rewards.tags.weight follows a schedule, but easyr1 passes no step")
    assert launch_warnings(ROOT / "examples" / "sagemaker-gsm8k-trl.yaml", "trl") == []


def test_a_config_without_a_train_section_is_not_told_to_use_train_stages(tmp_path: Path,
                                                                          capsys):
    """Issue 43: `rewardkit export easyr1` of a config with no train: section advised
    `rewardkit train` with train.stages; it names the --step files to export instead."""
    cfg = tmp_path / "no-train.yaml"
    cfg.write_text("on_error: ignore\nrewards:\n"
                   "  fmt: {reward: soft_format, weight: {schedule: linear, start: 0.0, "
                   "end: 1.0, steps: 50}}\n"
                   "  acc:\n    reward: exact_answer\n"
                   "    stages: [{until_step: 30, weight: 0.0}, {weight: 1.0}]\n")
    assert cli_run("export", ["easyr1", str(cfg), "-o", str(tmp_path / "r.py")]) == 0
    err = capsys.readouterr().err
    assert "train.stages" not in err and "rewardkit train" not in err
    assert "acc is off for every step of the job" in err and "--step 30" in err
    assert "follows a schedule" in err and "export one file per step range" in err
