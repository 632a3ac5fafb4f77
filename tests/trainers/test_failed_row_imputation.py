"""Failed gradings under ``on_error: null`` on ms-swift and EasyR1: the group-mean
imputation, measured through each trainer's own advantage code.

Neither trainer lets a reward function leave a row out (ms-swift sums NaN as 0; a NaN
``overall`` spreads to EasyR1's whole group), so a failed row gets its group's mean: its
advantage is 0, and the group's other rows get sqrt((n - 1) / (k - 1)) times the
advantage a mask would give (k graded rows of n; both divide by the sample std).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from backend_venvs import run_in_venv
from rewardkit_trainers.rewards.easyr1 import IMPUTED_SHARE as EASYR1_SHARE
from rewardkit_trainers.rewards.easyr1 import export_reward_file, pack_answer, score_batch
from rewardkit_trainers.rewards.scoring import (
    SharedScorer,
    imputed_group_share,
    neutralise_failed_rows,
)
from rewardkit_trainers.rewards.swift import (
    IMPUTED_SHARE,
    SwiftComponent,
    drain_metrics,
    export_plugin,
)

from rewardkit import parse_config

GOOD = "<think>\n3 plus 4 is 7\n</think>\n<answer>\n7\n</answer>"


def _config(prefix: str = "", aggregate: str = "weighted_sum") -> dict:
    return {"on_error": "null", "aggregate": aggregate, "rewards": {
        prefix + "parity": {"reward": "check_parity"},
        prefix + "graded": {"reward": "check_graded", "weight": 0.5}}}


def test_a_tied_group_imputes_its_value_exactly():
    # fsum(3 * [0.7]) / 3 is 0.6999999999999998: one float32 step off a tie, which
    # EasyR1's 1e-6 epsilon would turn into a real advantage
    out = neutralise_failed_rows([0.7, 0.7, 0.7, None], ["a"] * 4, {3})
    assert out[3] == 0.7
    assert neutralise_failed_rows([0.2, 0.4, None], ["a"] * 3, {2})[2] == pytest.approx(0.3)


def test_imputed_group_share_counts_the_graded_rows_of_groups_with_a_failed_row():
    assert imputed_group_share(["a"] * 4 + ["b"] * 4, {1}) == 3 / 7
    assert imputed_group_share(["a"] * 4 + ["b"] * 4, set()) == 0.0
    assert imputed_group_share(["a", "a"], {0, 1}) == 0.0  # nothing graded


def test_swift_logs_the_imputed_group_share_once_per_batch():
    scorer = SharedScorer({"rewards": {"graded": {"reward": "grades_or_fails"},
                                       "fmt": {"reward": "soft_format"}}})
    drain_metrics()
    kwargs = {"trainer_state": SimpleNamespace(global_step=0),
              "solution": ["7", "unparseable", "7", "7", "7", "7"],
              "prompt_id": ["a", "a", "a", "b", "b", "b"]}
    for name in ("graded", "fmt"):  # ms-swift calls every ORM on the batch
        SwiftComponent(scorer, name)([GOOD] * 6, **kwargs)
    assert drain_metrics()[IMPUTED_SHARE] == [2 / 5]  # a's 2 graded rows of 5


def test_easyr1_rows_carry_the_batchs_imputed_group_share():
    scorer = SharedScorer({"rewards": {"graded": {"reward": "grades_or_fails"}}})
    inputs = [{"response": GOOD, "response_length": 9,
               "ground_truth": pack_answer(ref, pid, {})}
              for pid, ref in ((0, "7"), (0, "unparseable"), (0, "7"), (1, "7"), (1, "7"))]
    rows = score_batch(scorer, inputs, step=0)
    assert [r[EASYR1_SHARE] for r in rows] == [0.5] * 5  # EasyR1's mean is the share
    ignore = SharedScorer({"on_error": "ignore",
                           "rewards": {"graded": {"reward": "grades_or_fails"}}})
    assert EASYR1_SHARE not in score_batch(ignore, inputs, step=0)[0]  # nothing imputed


def _check_ratios(ratios: dict[str, list[list[float]]], tol: float) -> None:
    seen = set()
    for key, pairs in ratios.items():
        n, k = map(int, key.split(","))
        for measured, exact in pairs:
            assert measured == pytest.approx(exact, rel=tol)
            assert exact <= math.sqrt((n - 1) / (k - 1)) * (1 + 1e-6)  # eps only lowers it
        if all(m == pytest.approx(math.sqrt((n - 1) / (k - 1)), rel=1e-2) for m, _ in pairs):
            seen.add((n, k))
    assert {(4, 3), (4, 2), (8, 7), (8, 5)} <= seen


def test_ms_swift_advantage_of_imputed_groups_is_sqrt_n1_k1_times_a_masks(tmp_path: Path):
    """ms-swift's compute_advantages on the plugin's rewards beside its own
    request-aware compute_advantages_dynamic on the graded rows alone (a true mask)."""
    plugins = []
    for aggregate, prefix in (("weighted_sum", ""), ("normalize_then_sum", "z")):
        plugin = tmp_path / f"{aggregate}.py"
        export_plugin(parse_config(_config(prefix, aggregate)), None, plugin)
        plugins.append(str(plugin))
    for part in run_in_venv("swift", "swift_imputation_check.py", *plugins):
        assert len(part["failed_advantages"]) > 500
        assert max(map(abs, part["failed_advantages"])) < 1e-5  # 0 up to float32 rounding
        for group in part["ties"]:  # the imputed row is indistinguishable from the others
            assert len(set(group)) == 1
        _check_ratios(part["ratios"], 1e-4)
        # the graded rows of 4-groups with one failure: 1.22x
        assert min(m for m, _ in part["ratios"]["4,3"]) > 1.224
        assert all(logged == counted for logged, counted in part["shares"])
        # None (NaN) is no mask: nansum makes it 0, which trains
        assert max(map(abs, part["nan_advantages"])) > 0.5


def test_easyr1_advantage_of_imputed_groups_is_sqrt_n1_k1_times_a_masks(tmp_path: Path):
    """The exported EasyR1 file's overall through verl's compute_grpo_outcome_advantage
    (EasyR1's is a copy), beside the same function on the graded rows alone."""
    reward_file = export_reward_file(parse_config(_config()), None, tmp_path / "reward.py")
    part = run_in_venv("verl", "easyr1_imputation_check.py", str(reward_file))
    assert len(part["failed_advantages"]) > 500
    assert max(map(abs, part["failed_advantages"])) < 1e-5
    for group in part["ties"]:
        assert len(set(group)) == 1
    _check_ratios(part["ratios"], 1e-4)
    assert all(logged == counted for logged, counted in part["shares"])
    assert EASYR1_SHARE in part["keys"]
    assert part["nan_poisoned_graded_rows"] > 500  # a NaN overall is no mask either
