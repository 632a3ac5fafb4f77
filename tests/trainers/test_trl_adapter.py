"""The TRL reward callables, called the way GRPOTrainer calls them (no training here)."""

from __future__ import annotations

import copy
import math
import pickle
from types import SimpleNamespace

import pytest
from rewardkit_trainers.rewards.trl import AGGREGATION, ScheduleNotAttached, trl_rewards

GOOD = "<think>\n3 plus 4 is 7\n</think>\n<answer>\n7\n</answer>"
BAD = "no tags"

CONFIG = {
    "rewards": {
        "format": {"reward": "soft_format", "weight": 0.5},
        "tags": {"reward": "tag_count",
                 "weight": {"schedule": "linear", "start": 0.0, "end": 1.0, "steps": 10}},
        "graded": {"reward": "grades_or_fails", "weight": 1.0},
    }
}


def call(func, completions, step=0, references=None, log=None, **columns):
    """``func`` called as GRPOTrainer calls it, after ``attach`` (which the training
    tests run on a real GRPOTrainer) would have marked it."""
    func.attached = True
    n = len(completions)
    return func(prompts=["add 3 and 4"] * n, completions=completions,
                completion_ids=[[1, 2]] * n,
                trainer_state=SimpleNamespace(global_step=step),
                log_metric=log, reference=references or ["7"] * n, **columns)


def test_one_callable_per_component_named_after_it():
    rewards = trl_rewards(CONFIG)
    assert [f.__name__ for f in rewards.funcs] == ["format", "tags", "graded"]


def test_callable_returns_raw_component_values():
    fmt, tags, graded = trl_rewards(CONFIG).funcs
    assert call(fmt, [GOOD, BAD]) == [1.0, 0.0]
    assert call(tags, [GOOD, BAD]) == [0.5, 0.0]
    assert call(graded, [GOOD, BAD]) == [1.0, 0.0]


def test_a_scheduled_config_refuses_to_score_before_attach():
    fmt, *_ = trl_rewards(CONFIG).funcs
    with pytest.raises(ScheduleNotAttached, match=r"rewards\.attach\(trainer\)"):
        fmt(prompts=["p"], completions=[GOOD], trainer_state=SimpleNamespace(global_step=0),
            reference=["7"])
    (constant,) = trl_rewards({"rewards": {"format": {"reward": "soft_format"}}}).funcs
    assert constant(prompts=["p"], completions=[GOOD], trainer_state=None) == [1.0]


def test_weights_and_aggregation_map_to_grpo_config():
    rewards = trl_rewards(CONFIG)
    assert rewards.grpo_kwargs() == {"reward_weights": [0.5, 0.0, 1.0]}  # TRL's default sum
    assert rewards.weights(10) == [0.5, 1.0, 1.0]
    assert rewards.scheduled


def test_normalize_then_sum_maps_to_trl_multi_objective_aggregation():
    rewards = trl_rewards({**CONFIG, "aggregate": "normalize_then_sum"})
    assert rewards.grpo_kwargs()["multi_objective_aggregation"] == "normalize_then_sum"
    assert AGGREGATION["weighted_sum"] == "sum_then_normalize"


def test_failed_grading_is_none_for_every_component_of_that_row():
    fmt, _, graded = trl_rewards(CONFIG).funcs
    refs = ["7", "unparseable"]
    assert call(graded, [GOOD, GOOD], references=refs) == [1.0, None]
    # on_error: null -> the whole row is unscorable, so TRL masks it
    assert call(fmt, [GOOD, GOOD], references=refs) == [1.0, None]


def test_on_error_ignore_keeps_the_other_components():
    fmt, _, graded = trl_rewards({**CONFIG, "on_error": "ignore"}).funcs
    refs = ["7", "unparseable"]
    assert call(graded, [GOOD, GOOD], references=refs) == [1.0, None]
    assert call(fmt, [GOOD, GOOD], references=refs) == [1.0, 1.0]


def test_stages_follow_trainer_state_global_step():
    config = {"rewards": {"format": {"reward": "soft_format", "stages": [
        {"until_step": 5},
        {"params": {"min_reasoning_chars": 50}},
    ]}}}
    (fmt,) = trl_rewards(config).funcs
    assert call(fmt, [GOOD], step=4) == [1.0]
    assert call(fmt, [GOOD], step=5) == [0.0]


def test_status_rates_latency_and_weight_go_through_log_metric():
    logged: dict[str, float] = {}
    _, _, graded = trl_rewards(CONFIG).funcs
    call(graded, [GOOD, GOOD], references=["7", "unparseable"], step=3,
         log=lambda k, v: logged.__setitem__(k, v))
    assert logged["rewards/graded/error_rate"] == 0.5
    assert logged["rewards/graded/weight"] == 1.0
    assert {"rewards/graded/timeout_rate", "rewards/graded/skip_rate",
            "rewards/graded/latency_ms_p50", "rewards/graded/latency_ms_p95"} <= set(logged)


def test_conversational_completions_and_dataset_columns_reach_the_reward():
    config = {"rewards": {"math_only": {"reward": "soft_format", "when": {"task": "math"}}}}
    (func,) = trl_rewards(config).funcs
    completions = [[{"role": "assistant", "content": GOOD}]] * 2
    prompts = [[{"role": "user", "content": "add 3 and 4"}]] * 2
    out = func(prompts=prompts, completions=completions, completion_ids=None,
               trainer_state=None, task=["math", "code"])
    assert out == [1.0, None]  # routed away -> None (TRL: NaN, left out of the mean)


def test_callables_survive_pickle_and_deepcopy():
    funcs = trl_rewards(CONFIG).funcs
    for clone in (pickle.loads(pickle.dumps(funcs)), copy.deepcopy(funcs)):
        assert [f.__name__ for f in clone] == ["format", "tags", "graded"]
        assert call(clone[0], [GOOD]) == [1.0]


def test_one_scoring_pass_serves_all_components(monkeypatch: pytest.MonkeyPatch):
    rewards = trl_rewards(CONFIG)
    calls = []
    original = rewards.scorer.reward_set.score
    monkeypatch.setattr(rewards.scorer.reward_set, "score",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    for f in rewards.funcs:
        call(f, [GOOD, BAD], step=2)
    assert len(calls) == 1


def test_nan_free_values_are_plain_floats():
    fmt, *_ = trl_rewards(CONFIG).funcs
    values = call(fmt, [GOOD, BAD])
    assert all(isinstance(v, float) and not math.isnan(v) for v in values)


def test_exported_module_exposes_reward_funcs_and_grpo_kwargs(tmp_path):
    import importlib.util

    from backend_venvs import CONFIGS
    from rewardkit_trainers.rewards.trl import export_module

    out = export_module(CONFIGS / "staged.yaml", tmp_path / "my_rewards.py")
    spec = importlib.util.spec_from_file_location("my_rewards", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert [f.__name__ for f in module.reward_funcs] == ["format", "tags", "number"]
    assert module.grpo_kwargs["reward_weights"] == [0.5, 0.0, 0.5]
    assert module.REWARDS.scheduled


def test_exported_module_reads_the_configs_reference_column(tmp_path):
    """GSM8K keeps the gold answer in `answer`: the module must read that column."""
    import importlib.util

    from rewardkit_trainers.rewards.trl import export_module

    config = tmp_path / "gsm8k.yaml"
    config.write_text(
        "rewards:\n  correct: {reward: math_answer, params: {extract: [hashes]}}\n"
        "train:\n  model: m\n  dataset: {train: data.jsonl, prompt_column: question,\n"
        "                                reference_column: answer}\n")
    out = export_module(config, tmp_path / "gsm8k_rewards.py")
    spec = importlib.util.spec_from_file_location("gsm8k_rewards", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.REFERENCE_COLUMN == "answer"
    (correct,) = module.reward_funcs
    values = correct(prompts=["q", "q"], completions=["so #### 12", "so #### 13"],
                     answer=["#### 12", "#### 12"], question=["q", "q"])
    assert values == [1.0, 0.0]


def test_exported_module_without_train_section_reads_reference(tmp_path):
    from rewardkit_trainers.rewards.trl import export_module

    config = tmp_path / "plain.yaml"
    config.write_text("rewards:\n  fmt: {reward: soft_format}\n")
    text = export_module(config, tmp_path / "plain_rewards.py").read_text()
    assert "REFERENCE_COLUMN = 'reference'" in text
