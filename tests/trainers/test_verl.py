"""verl: ``pkg://rewardkit_trainers.rewards.verl`` through verl's own loader and reward manager
(in .venv-verl), plus the function's contract."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from backend_venvs import CONFIGS, run_in_venv
from rewardkit_trainers import verl

GOOD = "<think>\n3 plus 4 is 7\n</think>\n<answer>\n7\n</answer>"
KEYS = ["format", "format_failed", "number", "number_failed", "score", "tags", "tags_failed"]


@pytest.mark.parametrize("name", ["compute_score", "compute_score_async"])
def test_verl_loads_pkg_function_and_its_reward_manager_scores_a_batch(
        name: str, tiny_tokenizer_dir: Path):
    result = run_in_venv("verl", "verl_check.py", name, str(tiny_tokenizer_dir),
                         env={"REWARDKIT_CONFIG": str(CONFIGS / "staged.yaml")})
    assert result["manager"] == "NaiveRewardManager"
    # step 5 (reward_kwargs): format 0.1 x 1 + tags 1.0 x 0.5 + number 0.5 x 1
    assert [round(s, 6) for s in result["scores"]] == [1.1, 0.0, 0.625]
    assert result["extra_keys"] == [KEYS] * 3
    assert [round(s, 6) for s in result["rm_scores_sum"]] == [1.1, 0.0, 0.625]


@pytest.fixture
def graded_config(tmp_path: Path) -> Path:
    path = tmp_path / "graded.yaml"
    path.write_text("on_error: ignore\nrewards:\n  graded: {reward: grades_or_fails}\n"
                    "  format: {reward: soft_format, weight: 0.5}\n")
    return path


def test_same_keys_on_every_call_and_fallback_for_failed_grading(graded_config: Path):
    ok = verl.compute_score("src", GOOD, "7", {}, config=str(graded_config))
    failed = verl.compute_score("src", GOOD, "unparseable", {}, config=str(graded_config),
                                fallback=-1.0)
    assert sorted(ok) == sorted(failed)
    assert ok == {"score": 1.5, "graded": 1.0, "graded_failed": 0.0, "format": 1.0,
                  "format_failed": 0.0}
    assert failed["graded"] == -1.0 and failed["graded_failed"] == 1.0
    assert failed["score"] == 0.5  # on_error: ignore -> the format term remains


def test_config_from_environment_and_step_pinned(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REWARDKIT_CONFIG", str(CONFIGS / "staged.yaml"))
    monkeypatch.setenv("REWARDKIT_STEP", "0")
    assert verl.compute_score("s", GOOD, "7")["score"] == pytest.approx(1.0)
    assert verl.compute_score("s", GOOD, "7", step=5)["score"] == pytest.approx(1.1)


def test_async_variant_matches_sync(graded_config: Path):
    sync = verl.compute_score("s", GOOD, "7", {}, config=str(graded_config))
    coro = verl.compute_score_async("s", GOOD, "7", {}, config=str(graded_config))
    assert asyncio.run(coro) == sync


def test_missing_config_says_how_to_set_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("REWARDKIT_CONFIG", raising=False)
    with pytest.raises(ValueError, match="REWARDKIT_CONFIG"):
        verl.compute_score("s", GOOD, "7", {})


def test_rewardkit_train_verl_overrides_compose_with_verl_own_config(
        tmp_path: Path, tiny_tokenizer_dir: Path):
    import json

    from rewardkit_trainers.launch.runner import jobs, load_run

    plan = load_run(CONFIGS / "staged.yaml", backend="verl", output_dir=str(tmp_path))
    planned = jobs(plan)
    assert [j.label.split(":")[0] for j in planned] == ["verl segment 0", "verl segment 1"]
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(planned[1].argv))
    result = run_in_venv("verl", "verl_args_check.py", str(argv_file), str(tiny_tokenizer_dir))
    assert result["adv_estimator"] == "grpo" and result["rollout_n"] == 4
    assert result["total_training_steps"] == 6
    assert result["resume_mode"] == "resume_path"
    assert result["resume_from_path"].endswith("checkpoints/global_step_2")
    assert result["reward"] == {"path": "pkg://rewardkit_trainers.rewards.verl",
                                "name": "compute_score",
                                "reward_kwargs": {"config": str(CONFIGS / "staged.yaml"),
                                                  "step": 2}}
    # verl's RLHFDataset reads the converted parquet
    assert result["rows"] == 32
    assert result["raw_prompt"][-1]["role"] == "user"
    assert result["extra_info_keys"] == ["index", "metadata", "prompt", "split"]


def test_packed_dataset_columns_reach_metadata(tmp_path: Path):
    path = tmp_path / "routed.yaml"
    path.write_text("on_error: ignore\n"
                    "rewards:\n  fmt: {reward: soft_format, when: {task: math}}\n")
    info = {"metadata": '{"task": "math"}', "prompt": "add 3 and 4"}
    assert verl.compute_score("s", GOOD, "7", info, config=str(path))["fmt"] == 1.0
    info["metadata"] = '{"task": "code"}'
    assert verl.compute_score("s", GOOD, "7", info, config=str(path))["score"] == 0.0


REFUSED = {
    "on_error": "on_error: \"null\"\nrewards:\n  graded: {reward: grades_or_fails}\n",
    "aggregate": "on_error: ignore\naggregate: normalize_then_sum\n"
                 "rewards:\n  fmt: {reward: soft_format}\n",
    "rewards.longest.reward": "on_error: ignore\nrewards:\n  longest: {reward: check_longest}\n",
}


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_what_needs_whole_groups_is_refused_when_verl_loads_the_reward(tmp_path: Path,
                                                                      key: str):
    """verl scores one response at a time: a failed row cannot be masked, a group cannot
    be normalised; the reward refuses to load rather than train on something else."""
    from rewardkit import ConfigError

    config = tmp_path / "c.yaml"
    config.write_text(REFUSED[key])
    with pytest.raises(ConfigError) as err:
        verl.compute_score("s", GOOD, "7", {}, config=str(config))
    assert [k for k, _ in err.value.problems] == [key]
    assert "one response at a time" in err.value.render()


def test_export_and_train_refuse_on_error_null_for_verl(tmp_path: Path, capsys):
    from rewardkit_trainers.cli import run as cli_run

    config = tmp_path / "c.yaml"
    config.write_text(REFUSED["on_error"] + "train: {model: m, dataset: {train: x.jsonl}}\n")
    assert cli_run("export", ["verl", str(config)]) == 2
    assert "on_error: null masks a failed grading" in capsys.readouterr().err
    assert cli_run("train", [str(config), "--backend", "verl", "--dry-run"]) == 2
    assert "verl's reward function scores one response" in capsys.readouterr().err


def test_export_verl_writes_the_overrides_to_output(tmp_path: Path):
    from rewardkit_trainers.cli import run as cli_run

    out = tmp_path / "sub" / "verl.args"
    assert cli_run("export", ["verl", str(CONFIGS / "staged.yaml"), "-o", str(out),
                              "--step", "5"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == f"export REWARDKIT_CONFIG={(CONFIGS / 'staged.yaml').resolve()}"
    assert "+reward.custom_reward_function.reward_kwargs.step=5" in lines


TOKENS_CONFIG = (
    "on_error: ignore\nrewards:\n"
    "  tokens: {reward: overlong_penalty, params: {max_length: 4, buffer: 2, unit: tokens}}\n"
    "  words: {reward: overlong_penalty, weight: 0, params: {max_length: 4, buffer: 2, "
    "unit: words}}\n")


def test_unit_tokens_counts_the_valid_response_ids_under_rewardkits_manager(
        tmp_path: Path, tiny_tokenizer_dir: Path):
    """The manager the overrides select hands the response's valid token ids (cut at the
    attention mask) to the rewards: 5 tokens but 3 words gets the token-based value."""
    config = tmp_path / "tokens.yaml"
    config.write_text(TOKENS_CONFIG)
    result = run_in_venv("verl", "verl_tokens_check.py", "rewardkit", str(tiny_tokenizer_dir),
                         env={"REWARDKIT_CONFIG": str(config)})
    assert result["manager"] == "RewardkitRewardManager"
    long, short = result["extra"]
    assert (long["tokens"], long["words"]) == (-1.0, -0.5)  # 5 tokens / 3 words, ramp 2..4
    assert (short["tokens"], short["tokens_failed"]) == (0.0, 0.0)
    assert result["batch_extra_info_untouched"]


def test_a_failed_components_fallback_is_shown_but_not_trained_through_verls_manager(
        tmp_path: Path, tiny_tokenizer_dir: Path):
    """docs/trainers/verl.md: under on_error: ignore a failed component shows `fallback`
    in its own key, and the `score` verl trains on is the other components' sum (as on
    TRL, ms-swift and EasyR1); `score` is the fallback only when nothing graded."""
    config = tmp_path / "tokens.yaml"
    config.write_text(TOKENS_CONFIG.replace("weight: 0, ", "weight: 2, "))
    result = run_in_venv("verl", "verl_tokens_check.py", "naive", str(tiny_tokenizer_dir),
                         env={"REWARDKIT_CONFIG": str(config), "REWARDKIT_FALLBACK": "-0.25"})
    long = result["extra"][0]
    assert (long["tokens"], long["tokens_failed"]) == (-0.25, 1.0)  # naive: no ids
    # score = 2 x words; a fallback that trained would add 1 x -0.25 to each
    assert result["scores"] == [2 * row["words"] for row in result["extra"]]
    assert all(row["tokens_failed"] == 1.0 for row in result["extra"])
    only_tokens = tmp_path / "only_tokens.yaml"
    only_tokens.write_text(TOKENS_CONFIG.split("  words:")[0])
    failed = verl.compute_score("s", "add", "7", {}, config=str(only_tokens), fallback=-0.25)
    assert failed == {"score": -0.25, "tokens": -0.25, "tokens_failed": 1.0}


def test_verls_naive_manager_passes_no_ids_so_unit_tokens_fails_not_counts_words(
        tmp_path: Path, tiny_tokenizer_dir: Path):
    config = tmp_path / "tokens.yaml"
    config.write_text(TOKENS_CONFIG)
    result = run_in_venv("verl", "verl_tokens_check.py", "naive", str(tiny_tokenizer_dir),
                         env={"REWARDKIT_CONFIG": str(config)})
    assert [row["tokens_failed"] for row in result["extra"]] == [1.0, 1.0]
