"""ms-swift: the exported plugin, loaded by ms-swift's own loader and scored through its
GRPO reward path (in .venv-swift), plus the adapter's own behaviour."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from backend_venvs import CONFIGS, run_in_venv
from rewardkit_trainers.scoring import SharedScorer
from rewardkit_trainers.swift import SwiftComponent, export_plugin, func_name, swift_samples

from rewardkit.config import load_config

GOOD = "<think>\n3 plus 4 is 7\n</think>\n<answer>\n7\n</answer>"


def test_export_prints_reward_funcs_and_weights(tmp_path: Path):
    info = export_plugin(load_config(CONFIGS / "staged.yaml"), CONFIGS / "staged.yaml",
                         tmp_path / "plugin.py")
    assert info.arguments() == [
        "--external_plugins", str((tmp_path / "plugin.py").resolve()),
        "--reward_funcs", "rewardkit_format", "rewardkit_tags", "rewardkit_number",
        # format (stage weights) and tags (schedule) change with the step: weight 1, the
        # ORM applies the weight itself
        "--reward_weights", "1", "1", "0.5",
    ]


def test_swift_loads_the_plugin_and_its_grpo_reward_path_calls_it(tmp_path: Path):
    plugin = tmp_path / "plugin.py"
    export_plugin(load_config(CONFIGS / "staged.yaml"), CONFIGS / "staged.yaml", plugin)
    names = ["rewardkit_format", "rewardkit_tags", "rewardkit_number"]
    result = run_in_venv("swift", "swift_check.py", str(plugin), *names)
    assert result["registered"] == sorted(names)
    assert result["func_names"] == ["format", "tags", "number"]  # logged rewards/<name>/mean
    # rows: GOOD, SHORT ("<think>a</think><answer>7</answer>"), BAD, GOOD
    # step 0: format stage 1 (weight 0.5), tags weight 0 (linear from 0), number 1
    assert result["rewards"]["0"] == [[0.5, 0.0, 1.0], [0.5, 0.0, 1.0], [0.0, 0.0, 0.0],
                                      [0.5, 0.0, 1.0]]
    # step 5: format stage 2 (min 5 reasoning chars, weight 0.1), tags weight 1.0
    got = result["rewards"]["5"]
    assert [round(v, 6) for v in got[0]] == [0.1, 0.5, 1.0]
    assert got[1] == [0.0, 0.0, 1.0]


def test_component_returns_none_for_failed_grading():
    scorer = SharedScorer({"rewards": {"graded": {"reward": "grades_or_fails"}}})
    orm = SwiftComponent(scorer, "graded")
    out = orm([GOOD, GOOD], trainer_state=SimpleNamespace(global_step=0),
              solution=["7", "unparseable"], prompt_id=["a", "a"])
    assert out == [1.0, None]


def test_normalize_then_sum_standardises_within_prompt_groups():
    config = {"aggregate": "normalize_then_sum",
              "rewards": {"format": {"reward": "soft_format"}}}
    orm = SwiftComponent(SharedScorer(config), "format")
    out = orm([GOOD, "x", GOOD, GOOD], trainer_state=None, prompt_id=["a", "a", "b", "b"])
    assert [round(v, 3) for v in out] == [1.0, -1.0, 0.0, 0.0]


def test_the_orm_returns_what_the_composed_reward_used_not_a_recomputation():
    config = {"aggregate": "normalize_then_sum",
              "rewards": {"format": {"reward": "soft_format"},
                          "graded": {"reward": "grades_or_fails", "weight": 0.0}}}
    scorer = SharedScorer(config)
    completions = [GOOD, "x", GOOD]
    kwargs = {"trainer_state": None, "prompt_id": ["a", "a", "a"], "solution": ["7"] * 3}
    out = SwiftComponent(scorer, "format")(completions, **kwargs)
    result = scorer.score(swift_samples(completions, kwargs), 0)  # the same, cached
    assert out == result.normalized("format")
    assert out == pytest.approx([1 / (0.4714 + 1e-4) * 0.3333, -2 * 0.3333 / (0.4714 + 1e-4),
                                 1 / (0.4714 + 1e-4) * 0.3333], abs=1e-3)
    assert result.totals == pytest.approx(out)  # the only weighted component


def test_normalize_keeps_none():
    scorer = SharedScorer({"aggregate": "normalize_then_sum",
                           "rewards": {"graded": {"reward": "grades_or_fails"}}})
    out = SwiftComponent(scorer, "graded")([GOOD, GOOD, GOOD], trainer_state=None,
                                           prompt_id=["g"] * 3,
                                           solution=["7", "unparseable", "8"])
    assert out[1] is None and out[0] == pytest.approx(1.0, abs=1e-3)


def test_func_names_are_identifiers():
    assert func_name("nav-accuracy") == "rewardkit_nav_accuracy"


def test_swift_rlhf_command_parses_with_ms_swift_own_arguments(tmp_path: Path):
    from rewardkit_trainers.runner import load_run

    plan = load_run(CONFIGS / "staged.yaml", backend="swift", output_dir=str(tmp_path))
    (job,) = plan.jobs()
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(job.argv))
    result = run_in_venv("swift", "swift_args_check.py", str(argv_file))
    assert result["unknown"] == []
    parsed = result["parsed"]
    assert parsed["rlhf_type"] == "grpo" and parsed["tuner_type"] == "lora"
    assert parsed["reward_funcs"] == ["rewardkit_format", "rewardkit_tags", "rewardkit_number"]
    assert parsed["reward_weights"] == [1.0, 1.0, 0.5]
    assert parsed["num_generations"] == 4
    assert parsed["per_device_train_batch_size"] == 16  # 4 prompts x 4 completions
    assert parsed["max_steps"] == 6 and parsed["use_vllm"] is False


def test_rewardkit_train_runs_a_real_swift_grpo_job(tmp_path: Path):
    result = run_in_venv("swift", "swift_train_check.py", str(tmp_path), timeout=600)
    assert result["returncode"] == 0, result["tail"]
    steps = result["steps"]
    assert len(steps) == 2
    for entry in steps:  # ms-swift logs each component's ORM under its name
        assert {"rewards/format/mean", "rewards/tags/mean", "reward"} <= set(entry)


def test_ms_swift_3_gets_train_type_instead_of_tuner_type(tmp_path: Path):
    from rewardkit_trainers.runner import load_run
    from rewardkit_trainers.swift import SwiftRewards, swift_arguments

    plan = load_run(CONFIGS / "staged.yaml", backend="swift", output_dir=str(tmp_path))
    rewards = SwiftRewards(tmp_path / "p.py", ["format"], [1.0])
    argv3 = swift_arguments(plan, tmp_path / "d.jsonl", rewards, major=3)
    argv4 = swift_arguments(plan, tmp_path / "d.jsonl", rewards, major=4)
    assert "--train_type" in argv3 and "--tuner_type" not in argv3
    assert "--tuner_type" in argv4 and "--train_type" not in argv4
