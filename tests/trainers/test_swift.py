"""ms-swift: the exported plugin, loaded by ms-swift's own loader and scored through its
GRPO reward path (in .venv-swift), plus the adapter's own behaviour."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from backend_venvs import CONFIGS, run_in_venv
from rewardkit_trainers.rewards.scoring import SharedScorer
from rewardkit_trainers.rewards.swift import SwiftComponent, export_plugin, func_name, swift_samples

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
        "--callbacks", "rewardkit_metrics",
    ]


@pytest.mark.parametrize("imports", [
    "rewardkit_trainers.rewards.swift", "rewardkit_trainers.swift"])
def test_swift_loads_the_plugin_and_its_grpo_reward_path_calls_it(tmp_path: Path, imports: str):
    # rewardkit_trainers.swift: a plugin file exported before the trainers were split by
    # role imports the ORMs from there, and ms-swift's loader must still register them
    plugin = tmp_path / "plugin.py"
    export_plugin(load_config(CONFIGS / "staged.yaml"), CONFIGS / "staged.yaml", plugin)
    text = plugin.read_text(encoding="utf-8")
    assert "from rewardkit_trainers.rewards.swift import" in text
    plugin.write_text(text.replace("rewardkit_trainers.rewards.swift", imports), encoding="utf-8")
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


def test_failed_row_gets_its_groups_mean_under_on_error_null():
    scorer = SharedScorer({"rewards": {"graded": {"reward": "grades_or_fails"}}})
    orm = SwiftComponent(scorer, "graded")
    out = orm([GOOD, "no", GOOD, GOOD], trainer_state=SimpleNamespace(global_step=0),
              solution=["7", "7", "unparseable", "7"], prompt_id=["a", "a", "a", "b"])
    assert out == [1.0, 0.0, 0.5, 1.0]  # the failed row: mean of its group's graded rows


def test_failed_grading_is_none_under_on_error_ignore():
    scorer = SharedScorer({"on_error": "ignore",
                           "rewards": {"graded": {"reward": "grades_or_fails"}}})
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
    scorer = SharedScorer({"aggregate": "normalize_then_sum", "on_error": "ignore",
                           "rewards": {"graded": {"reward": "grades_or_fails"}}})
    out = SwiftComponent(scorer, "graded")([GOOD, GOOD, GOOD], trainer_state=None,
                                           prompt_id=["g"] * 3,
                                           solution=["7", "unparseable", "8"])
    assert out[1] is None and out[0] == pytest.approx(1.0, abs=1e-3)


def test_func_names_are_identifiers():
    assert func_name("nav-accuracy") == "rewardkit_nav_accuracy"


def test_swift_rlhf_command_parses_with_ms_swift_own_arguments(tmp_path: Path):
    from rewardkit_trainers.launch.runner import jobs, load_run

    plan = load_run(CONFIGS / "staged.yaml", backend="swift", output_dir=str(tmp_path))
    (job,) = jobs(plan)
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


@pytest.mark.slow  # ~48 s: a real ms-swift GRPO job in its own venv
def test_rewardkit_train_runs_a_real_swift_grpo_job(tmp_path: Path):
    result = run_in_venv("swift", "swift_train_check.py", str(tmp_path), timeout=600)
    assert result["returncode"] == 0, result["tail"]
    steps = result["steps"]
    assert len(steps) == 2
    for entry in steps:  # ms-swift logs each component's ORM under its name
        assert {"rewards/format/mean", "rewards/tags/mean", "reward"} <= set(entry)
        # the rewardkit_metrics callback hands the status rates to ms-swift's metrics
        for name in ("format", "tags"):
            assert entry[f"rewards/{name}/error_rate"] == 0.0
            assert entry[f"rewards/{name}/timeout_rate"] == 0.0
            assert entry[f"rewards/{name}/latency_ms_p95"] >= 0.0
        assert "rewards/tags/weight" in entry


def test_ms_swift_3_gets_train_type_instead_of_tuner_type(tmp_path: Path):
    from rewardkit_trainers.launch.runner import load_run
    from rewardkit_trainers.launch.swift import swift_arguments
    from rewardkit_trainers.rewards.swift import SwiftRewards

    plan = load_run(CONFIGS / "staged.yaml", backend="swift", output_dir=str(tmp_path))
    rewards = SwiftRewards(tmp_path / "p.py", ["format"], [1.0])
    argv3 = swift_arguments(plan, tmp_path / "d.jsonl", rewards, major=3)
    argv4 = swift_arguments(plan, tmp_path / "d.jsonl", rewards, major=4)
    assert "--train_type" in argv3 and "--tuner_type" not in argv3
    assert "--tuner_type" in argv4 and "--train_type" not in argv4
    assert "--callbacks" not in argv3 and argv4[argv4.index("--callbacks") + 1] == \
        "rewardkit_metrics"


RANKS_CONFIG = {
    "on_error": "null",
    "rewards": {"graded": {"reward": "check_graded"},
                "longest": {"reward": "check_longest", "weight": 0.5}},
}
FAILED = [2, 6]  # rows whose completion contains CRASH


def _two_ranks(tmp_path: Path, aggregate: str, scale: str) -> dict:
    from rewardkit import parse_config

    plugin = tmp_path / "plugin.py"
    export_plugin(parse_config({**RANKS_CONFIG, "aggregate": aggregate}), None, plugin)
    return run_in_venv("swift", "swift_ranks_check.py", str(plugin), scale,
                       "rewardkit_graded", "rewardkit_longest", timeout=600)


def test_two_ranks_group_reward_sees_whole_groups_and_failed_rows_get_no_advantage(
        tmp_path: Path):
    result = _two_ranks(tmp_path, "weighted_sum", "group")
    got = result["rewards_per_func"]
    expected = result["expected_values"]
    # the per-group column, gathered across ranks, is RewardSet.score's on the whole batch
    graded = [i for i in range(12) if i not in FAILED]
    assert [got[i][1] for i in graded] == [expected["longest"][i] for i in graded]
    # ... and not what rank 0 alone would see (prompt p1's group is split across ranks)
    assert result["rank0_alone_values"]["longest"][4:6] != expected["longest"][4:6]
    totals = result["expected_totals"]
    for i, total in enumerate(totals):
        if i in FAILED:
            assert total is None
            assert result["advantages"][i] == 0.0  # ms-swift's own advantage
        else:
            assert result["rewards"][i] == pytest.approx(total, abs=1e-6)
    assert any(abs(result["advantages"][i]) > 0.1 for i in graded)


def test_two_ranks_normalize_then_sum_equals_reward_set_on_whole_groups(tmp_path: Path):
    result = _two_ranks(tmp_path, "normalize_then_sum", "group")
    for i, total in enumerate(result["expected_totals"]):
        if i in FAILED:
            assert total is None and abs(result["advantages"][i]) < 1e-6
        else:
            assert result["rewards"][i] == pytest.approx(total, abs=1e-5)


def test_unit_tokens_counts_the_rollouts_response_token_ids(tmp_path: Path):
    """ms-swift's reward path hands each row's ``response_token_ids``: overlong_penalty
    with unit tokens gets their count (the last turn's in a multi-turn rollout), not the
    word count; a rollout without ids falls back to the named tokenizer."""
    config = tmp_path / "tokens.yaml"
    config.write_text(
        "on_error: ignore\nrewards:\n"
        "  tokens: {reward: overlong_penalty, params: {max_length: 4, buffer: 2, "
        "unit: tokens}}\n"
        "  words: {reward: overlong_penalty, params: {max_length: 4, buffer: 2, "
        "unit: words}}\n")
    info = export_plugin(load_config(config), config, tmp_path / "plugin.py")
    result = run_in_venv("swift", "swift_tokens_check.py", str(info.plugin),
                         *[func_name(n) for n in info.names])
    tokens = [row[0] for row in result["rewards"]]
    words = [row[1] for row in result["rewards"]]
    # 6 tokens (1 word) -> full penalty; 2 tokens of the last turn (6 words) -> 0
    assert tokens[:2] == [-1.0, 0.0]
    assert words[:2] == [0.0, -1.0]
    assert tokens[2] is None  # no ids and no tokenizer: an error, never a word count
