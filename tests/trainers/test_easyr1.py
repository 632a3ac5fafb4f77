"""EasyR1: the exported reward file, loaded the way EasyR1's AutoRewardManager loads it
(``spec_from_file_location`` as ``custom_reward_fn``, ``REWARD_TYPE``, ``partial`` with
``reward_function_kwargs``, one batch call), and the staged jobs of ``rewardkit train``."""

from __future__ import annotations

import importlib.util
import sys
from functools import partial
from pathlib import Path

import pytest
import yaml
from backend_venvs import CONFIGS, run_in_venv
from rewardkit_trainers.launch.runner import jobs, load_run
from rewardkit_trainers.rewards.easyr1 import (
    GroupsUnknown,
    export_reward_file,
    pack_answer,
    pack_parquet,
    unpack_answer,
)

from rewardkit.config import load_config

GOOD = "<think>\n3 plus 4 is 7\n</think>\n<answer>\n7\n</answer>"


def load_like_easyr1(path: Path, **reward_function_kwargs):
    spec = importlib.util.spec_from_file_location("custom_reward_fn", str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_reward_fn"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop("custom_reward_fn", None)
    assert getattr(module, "REWARD_TYPE", "batch") == "batch"
    return partial(module.compute_score, **reward_function_kwargs)


def inputs(*responses: str, truth: str = "7"):
    return [{"response": r, "response_length": len(r.split()), "ground_truth": truth}
            for r in responses]


def test_batch_call_returns_overall_and_one_key_per_component(tmp_path: Path):
    file = export_reward_file(load_config(CONFIGS / "staged.yaml"), CONFIGS / "staged.yaml",
                              tmp_path / "reward.py", step=5)
    fn = load_like_easyr1(file)
    scores = fn(inputs(GOOD, "no tags"))
    keys = {"overall", "format", "tags", "number",
            "format_failed", "tags_failed", "number_failed"}
    assert [set(s) for s in scores] == [keys, keys]
    assert scores[0]["overall"] == pytest.approx(1.1)  # pinned to step 5
    assert scores[1]["overall"] == 0.0
    assert all(isinstance(v, float) for s in scores for v in s.values())


def test_file_is_pinned_to_its_step(tmp_path: Path):
    config = load_config(CONFIGS / "staged.yaml")
    first = load_like_easyr1(export_reward_file(config, None, tmp_path / "s0.py", step=0))
    later = load_like_easyr1(export_reward_file(config, None, tmp_path / "s5.py", step=5))
    assert first(inputs(GOOD))[0]["overall"] == pytest.approx(1.0)
    assert later(inputs(GOOD))[0]["overall"] == pytest.approx(1.1)


def test_failed_grading_gets_the_fallback_and_is_counted(tmp_path: Path):
    config_file = tmp_path / "graded.yaml"
    config_file.write_text("on_error: ignore\nrewards:\n  graded: {reward: grades_or_fails}\n"
                           "  format: {reward: soft_format, weight: 0.5}\n")
    file = export_reward_file(load_config(config_file), config_file, tmp_path / "r.py",
                              fallback=-0.5)
    scores = load_like_easyr1(file)(inputs(GOOD, GOOD, truth="unparseable"))
    assert scores[0]["graded"] == -0.5 and scores[0]["graded_failed"] == 1.0
    assert scores[0]["overall"] == 0.5  # on_error: ignore -> the format term remains
    assert scores[0]["format_failed"] == 0.0


def test_reward_function_kwargs_reach_compute_score(tmp_path: Path):
    file = export_reward_file(load_config(CONFIGS / "staged.yaml"), None, tmp_path / "r.py")
    assert load_like_easyr1(file, step=5)(inputs(GOOD))[0]["overall"] == pytest.approx(1.1)


def test_train_runs_one_segment_per_stage_resuming_from_the_previous_checkpoint(tmp_path: Path):
    plan = load_run(CONFIGS / "staged.yaml", output_dir=str(tmp_path))
    planned = jobs(plan)
    assert len(planned) == 2
    assert planned[0].argv[:3] == ["python3", "-m", "verl.trainer.main"]
    configs = [yaml.safe_load(Path(j.argv[3].split("=", 1)[1]).read_text()) for j in planned]
    assert [c["trainer"]["max_steps"] for c in configs] == [2, 6]
    assert configs[0]["trainer"]["load_checkpoint_path"] is None
    assert configs[1]["trainer"]["load_checkpoint_path"].endswith("checkpoints/global_step_2")
    assert configs[0]["trainer"]["save_checkpoint_path"] == \
        configs[1]["trainer"]["save_checkpoint_path"]
    reward_files = [c["worker"]["reward"]["reward_function"].rsplit(":", 1) for c in configs]
    assert [name for _, name in reward_files] == ["compute_score", "compute_score"]
    pinned = [_pinned_step(Path(path)) for path, _ in reward_files]
    assert pinned == [0, 2]


def test_train_converts_data_to_problem_answer_parquet_and_template(tmp_path: Path):
    import pyarrow.parquet as pq

    plan = load_run(CONFIGS / "staged.yaml", output_dir=str(tmp_path))
    cfg = yaml.safe_load(Path(jobs(plan)[0].argv[3].split("=", 1)[1]).read_text())
    table = pq.read_table(cfg["data"]["train_files"])
    assert table.column_names == ["problem", "answer"]
    assert table.num_rows == 32
    reference, prompt_id, metadata = unpack_answer(table.column("answer")[3].as_py())
    assert prompt_id == 3 and reference is not None and "task" in metadata
    template = Path(cfg["data"]["format_prompt"]).read_text()
    assert "{{ content | trim }}" in template
    assert cfg["data"]["prompt_key"] == "problem" and cfg["data"]["answer_key"] == "answer"


def _pinned_step(path: Path) -> int:
    spec = importlib.util.spec_from_file_location("pinned", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.STEP


GROUPED_CONFIG = {
    "on_error": "null",
    "rewards": {"graded": {"reward": "check_graded"},
                "longest": {"reward": "check_longest", "weight": 0.5},
                "math_only": {"reward": "check_graded", "weight": 0.25,
                              "when": {"task": "math"}}},
}


def _grouped_file(tmp_path: Path, aggregate: str) -> Path:
    from rewardkit import parse_config

    return export_reward_file(parse_config({**GROUPED_CONFIG, "aggregate": aggregate}), None,
                              tmp_path / "reward.py")


@pytest.mark.parametrize("aggregate", ["weighted_sum", "normalize_then_sum"])
def test_reordered_batch_through_verl_grpo_advantage(tmp_path: Path, aggregate: str):
    """EasyR1 reorders the batch (_balance_batch) and passes only response and answer: the
    packed answer carries prompt id and columns, so per-group rewards, normalisation and
    `when:` routing equal RewardSet.score on the whole groups, and verl's GRPO advantage
    (which EasyR1 forked) gives every failed row exactly 0."""
    result = run_in_venv("verl", "easyr1_grpo_check.py", str(_grouped_file(tmp_path, aggregate)))
    order, scores = result["order"], result["scores"]
    expected = result["expected_values"]
    for name in ("longest", "math_only"):
        got = [s[name] for s in scores]
        assert got == [0.0 if v is None else v for v in expected[name]]
    # rows 2 and 6 (original order) fail to grade
    failed = {order.index(2), order.index(6)}
    for i, total in enumerate(result["expected_totals"]):
        if i in failed:
            assert total is None and abs(result["advantages"][i]) < 1e-6
            assert scores[i]["graded_failed"] == 1.0
        else:
            assert scores[i]["overall"] == pytest.approx(total, abs=1e-6)
    assert sum(abs(a) > 0.1 for a in result["advantages"]) >= 6


def test_routing_reads_the_packed_metadata(tmp_path: Path):
    fn = load_like_easyr1(_grouped_file(tmp_path, "weighted_sum"))
    batch = [{"response": "7", "response_length": 1,
              "ground_truth": pack_answer("7", 0, {"task": task})} for task in ("math", "chat")]
    scores = fn(batch)
    assert [s["math_only"] for s in scores] == [1.0, 0.0]  # routed away: scores 0, not run
    assert [s["overall"] for s in scores] == [1.0 + 0.5 + 0.25, 1.0 + 0.5]


def test_unpacked_answers_are_refused_when_groups_are_needed(tmp_path: Path):
    """The error names the pack tool; running it on the data makes the same batch score."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from rewardkit_trainers.rewards.easyr1 import main as easyr1_main

    fn = load_like_easyr1(_grouped_file(tmp_path, "weighted_sum"))
    batch = inputs(GOOD, "no tags")
    with pytest.raises(GroupsUnknown) as err:
        fn(batch)
    assert "`python -m rewardkit_trainers.easyr1 pack data/train.parquet ...`" in str(err.value)
    assert "rewardkit train --backend easyr1 --dry-run" in str(err.value)
    data = tmp_path / "train.parquet"
    pq.write_table(pa.table({"problem": ["add 3 and 4"],
                             "answer": [batch[0]["ground_truth"]]}), data)
    assert easyr1_main(["pack", str(data)]) == 0
    (packed,) = pq.read_table(data).column("answer").to_pylist()
    scores = fn([{**item, "ground_truth": packed} for item in batch])
    assert len(scores) == 2 and all("overall" in s for s in scores)


def test_pack_parquet_rewrites_the_answer_column_once(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"problem": ["a", "b"], "answer": ["1", "2"],
                             "task": ["math", "chat"]}), path)
    assert pack_parquet(path) == 2
    assert pack_parquet(path) == 2  # packed cells are left alone
    cells = pq.read_table(path).column("answer").to_pylist()
    assert [unpack_answer(c) for c in cells] == [("1", 0, {"task": "math"}),
                                                 ("2", 1, {"task": "chat"})]


def test_unit_tokens_lengths_are_easyr1s_response_length(tmp_path: Path):
    """EasyR1 hands each response's token count, not its ids: lengths in tokens use the
    count, and token n-grams without a tokenizer fail with the reason (never words)."""
    config = tmp_path / "tokens.yaml"
    config.write_text(
        "on_error: ignore\nrewards:\n"
        "  tokens: {reward: overlong_penalty, params: {max_length: 4, buffer: 2, "
        "unit: tokens}}\n"
        "  words: {reward: overlong_penalty, weight: 0, params: {max_length: 4, buffer: 2, "
        "unit: words}}\n"
        "  loops: {reward: repetition_penalty, weight: 0, params: {n: 1, unit: tokens}}\n")
    fn = load_like_easyr1(export_reward_file(load_config(config), config,
                                             tmp_path / "reward.py"))
    scores = fn([{"response": "one", "response_length": 6, "ground_truth": "7"},
                 {"response": "a b c d e f", "response_length": 2, "ground_truth": "7"}])
    assert [s["tokens"] for s in scores] == [-1.0, 0.0]
    assert [s["words"] for s in scores] == [0.0, -1.0]
    assert [s["loops_failed"] for s in scores] == [1.0, 1.0]
