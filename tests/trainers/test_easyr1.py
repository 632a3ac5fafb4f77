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
from backend_venvs import CONFIGS
from rewardkit_trainers.easyr1 import export_reward_file
from rewardkit_trainers.runner import load_run

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


def test_train_runs_one_job_per_stage_resuming_from_the_previous_checkpoint(tmp_path: Path):
    plan = load_run(CONFIGS / "staged.yaml", output_dir=str(tmp_path))
    jobs = plan.jobs()
    assert len(jobs) == 2
    assert jobs[0].argv[:3] == ["python3", "-m", "verl.trainer.main"]
    configs = [yaml.safe_load(Path(j.argv[3].split("=", 1)[1]).read_text()) for j in jobs]
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
    cfg = yaml.safe_load(Path(plan.jobs()[0].argv[3].split("=", 1)[1]).read_text())
    table = pq.read_table(cfg["data"]["train_files"])
    assert table.column_names == ["problem", "answer"]
    assert table.num_rows == 32
    template = Path(cfg["data"]["format_prompt"]).read_text()
    assert "{{ content | trim }}" in template
    assert cfg["data"]["prompt_key"] == "problem" and cfg["data"]["answer_key"] == "answer"


def _pinned_step(path: Path) -> int:
    spec = importlib.util.spec_from_file_location("pinned", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.STEP
