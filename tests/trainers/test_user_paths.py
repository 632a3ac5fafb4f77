"""The paths users type still work after the trainers were split by role (rewards/ and
launch/): ``rewardkit_trainers.trl``, ``.swift``, ``.easyr1``, ``pkg://rewardkit_trainers.verl``
(and ``.verl_manager``) and the ``-m`` entry points re-export the modules that moved.

Through the upstream code: ms-swift's plugin loader registers the ORMs of a plugin file
importing ``rewardkit_trainers.swift`` (test_swift.py), verl's ``get_custom_reward_fn``
loads ``pkg://rewardkit_trainers.verl`` (backends/verl_check.py); here the rest, each
used as a user would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from backend_venvs import ROOT, venv_python

from rewardkit import Sample

CONFIG = {"on_error": "ignore", "rewards": {"fmt": {"reward": "soft_format"}}}
GOOD = "<think>a</think><answer>1</answer>"


def test_trl_path_gives_the_reward_callables(tmp_path: Path):
    from rewardkit_trainers import rewards
    from rewardkit_trainers.trl import trl_rewards

    assert trl_rewards is rewards.trl.trl_rewards
    built = trl_rewards(CONFIG)
    assert built.names == ["fmt"]
    assert built.funcs[0](prompts=["q"], completions=[GOOD]) == [1.0]
    # a module `rewardkit export trl` wrote before the split imports the old path
    module = tmp_path / "old_trl_rewards.py"
    module.write_text("from rewardkit_trainers.trl import trl_rewards\n"
                      f"REWARDS = trl_rewards({CONFIG!r})\nreward_funcs = REWARDS.funcs\n")
    out = subprocess.run([sys.executable, "-c", "import old_trl_rewards as m; "
                          f"print(m.reward_funcs[0](prompts=['q'], completions=[{GOOD!r}]))"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.0]"


def test_easyr1_path_scores_and_packs(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from rewardkit_trainers.easyr1 import pack_answer, score_batch
    from rewardkit_trainers.rewards.scoring import SharedScorer

    rows = score_batch(SharedScorer(CONFIG), [
        {"response": GOOD, "response_length": 5, "ground_truth": pack_answer("1", 0, {})}],
        step=0)
    assert rows == [{"overall": 1.0, "fmt": 1.0, "fmt_failed": 0.0}]
    data = tmp_path / "train.parquet"
    pq.write_table(pa.table({"problem": ["q"], "answer": ["1"], "task": ["math"]}), data)
    out = subprocess.run([sys.executable, "-m", "rewardkit_trainers.easyr1", "pack", str(data)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"packed 1 rows of {data}"
    assert '"prompt_id": 0' in pq.read_table(data).column("answer")[0].as_py()


def test_verl_path_is_the_same_module_state(tmp_path: Path):
    from rewardkit_trainers import rewards, verl

    config = tmp_path / "r.yaml"
    config.write_text("on_error: ignore\nrewards: {fmt: {reward: soft_format}}\n")
    assert verl.compute_score is rewards.verl.compute_score
    assert verl.compute_score("demo", GOOD, "1", config=str(config)) == {
        "score": 1.0, "fmt": 1.0, "fmt_failed": 0.0}


def test_verl_manager_path_loads_in_verl(tmp_path: Path):
    python = venv_python("verl")
    out = subprocess.run(
        [str(python), "-c", "from rewardkit_trainers.verl_manager import RewardkitRewardManager"
         " as old\nfrom rewardkit_trainers.rewards.verl_manager import RewardkitRewardManager"
         " as new\nprint(old is new, old.__mro__[1].__name__)"],
        capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-2:] == ["True", "NaiveRewardManager"]


@pytest.mark.parametrize("module", ["rewardkit_trainers.trl_train",
                                    "rewardkit_trainers.launch.trl_train"])
def test_launched_trl_entry_points_parse_their_arguments(module: str):
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "--config" in out.stdout and "--train" in out.stdout


def test_swift_path_is_the_moved_module():
    # the shims re-export: no state of their own (the pending metrics are the moved module's)
    from rewardkit_trainers import swift
    from rewardkit_trainers.rewards import swift as moved

    assert swift.register_orms is moved.register_orms
    assert swift.PENDING_METRICS is moved.PENDING_METRICS
    assert swift.swift_samples(["x"], {"solution": ["1"]})[0] == Sample(
        completion="x", reference="1")
