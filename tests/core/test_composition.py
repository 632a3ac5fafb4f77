"""Aggregation, groups and metrics of a RewardSet."""

from __future__ import annotations

import math

import pytest

from rewardkit import RewardSet, Sample

OK = "<think>a</think><answer>1</answer>"


def test_weighted_sum_adds_weighted_components():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "soft_format", "weight": 0.5},
                                          "b": {"reward": "good", "weight": 2.0}}})
    res = rs.score([{"completion": OK}, {"completion": "abc"}])
    assert res.totals == [0.5 * 1 + 2 * 10, 0.5 * 0 + 2 * 3]


def test_normalize_then_sum_standardises_each_component_within_its_group():
    rs = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                              "rewards": {"len": {"reward": "good", "weight": 1.0}}})
    res = rs.score([{"prompt": "p1", "completion": "a"}, {"prompt": "p1", "completion": "abc"},
                    {"prompt": "p2", "completion": "abcdefgh"},
                    {"prompt": "p2", "completion": "abcdefgh"}])
    t = res.totals
    assert t[0] == pytest.approx(-1.0, abs=1e-3) and t[1] == pytest.approx(1.0, abs=1e-3)
    assert t[2] == t[3] == 0.0  # no spread in the group: no signal
    assert res.values("len") == [1.0, 3.0, 8.0, 8.0]  # raw values stay available


def test_group_reward_sees_each_prompts_completions_together():
    rs = RewardSet.from_dict({"rewards": {"div": {"reward": "group_diversity"}}})
    res = rs.score([{"prompt": "p", "completion": "x"}, {"prompt": "q", "completion": "y"},
                    {"prompt": "p", "completion": "x"}, {"prompt": "q", "completion": "z"}])
    assert res.values("div") == [0.5, 1.0, 0.5, 1.0]


def test_chat_message_prompts_group_by_content():
    rs = RewardSet.from_dict({"rewards": {"div": {"reward": "group_diversity"}}})
    prompt = [{"role": "user", "content": "2+2?"}]
    res = rs.score([Sample(prompt=prompt, completion=[{"role": "assistant", "content": "4"}]),
                    Sample(prompt=list(prompt), completion="5")])
    assert res.values("div") == [1.0, 1.0]


def test_metrics_report_stats_contribution_statuses_and_latency():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "soft_format", "weight": 0.5},
                                          "r": {"reward": "raises", "weight": 0}}})
    res = rs.score([{"completion": OK}, {"completion": "boom"}])
    a = res.metrics["components"]["a"]
    assert (a["mean"], a["min"], a["max"]) == (0.5, 0.0, 1.0)
    assert a["contribution"] == 0.25
    assert a["latency_ms_p95"] >= a["latency_ms_p50"] >= 0
    r = res.metrics["components"]["r"]
    assert r["count"] == {"ok": 1, "skipped": 0, "error": 1, "timeout": 0}
    assert r["error_rate"] == 0.5
    flat = res.flat_metrics()
    assert flat["rewards/a/mean"] == 0.5 and "rewards/total/mean" in flat


def test_empty_batch_scores_to_nothing():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "soft_format"}}})
    res = rs.score([])
    assert res.totals == [] and math.isnan(res.metrics["total"]["mean"])


def test_stateful_reward_runs_setup_once_per_instance():
    rs = RewardSet.from_dict({"rewards": {"c": {"reward": "counter"}}})
    assert rs.score([{"completion": "a"}, {"completion": "b"}]).values("c") == [1.0, 2.0]
    assert rs.score([{"completion": "c"}]).values("c") == [3.0]


def test_scoring_one_component_for_trainer_adapters():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "soft_format"},
                                          "b": {"reward": "good"}}})
    res = rs.score([{"completion": OK}], components=["b"])
    assert list(res.outcomes) == ["b"]


def test_each_component_exposes_its_normalised_value_and_weighted_contribution():
    rs = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                              "rewards": {"len": {"reward": "good", "weight": 2.0},
                                          "fmt": {"reward": "soft_format", "weight": 0.5}}})
    res = rs.score([{"prompt": "p", "completion": "a"}, {"prompt": "p", "completion": OK}])
    assert res.values("len") == [1.0, 10.0]  # capped length
    assert res.normalized("len") == pytest.approx([-1.0, 1.0], abs=1e-3)
    assert res.contributions("len") == pytest.approx([-2.0, 2.0], abs=1e-3)
    assert res.contributions("fmt") == pytest.approx([-0.5, 0.5], abs=1e-3)
    for i, total in enumerate(res.totals):
        assert total == pytest.approx(res.contributions("len")[i] + res.contributions("fmt")[i])


def test_under_weighted_sum_the_normalised_value_is_the_value():
    rs = RewardSet.from_dict({"rewards": {"len": {"reward": "good", "weight": 3.0}}})
    res = rs.score([{"completion": "ab"}, {"completion": "abcd"}])
    assert res.normalized("len") == res.values("len") == [2.0, 4.0]
    assert res.contributions("len") == [6.0, 12.0] == res.totals


def test_concatenated_results_keep_normalised_values():
    from rewardkit import ScoreResult

    rs = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                              "rewards": {"len": {"reward": "good"}}})
    parts = [rs.score([{"prompt": "p", "completion": c} for c in batch])
             for batch in (["a", "abc"], ["ab", "ab"])]
    merged = ScoreResult.concat(parts)
    assert merged.normalized("len") == parts[0].normalized("len") + parts[1].normalized("len")


def test_is_scheduled_says_whether_a_weight_moves_with_the_step():
    rs = RewardSet.from_dict({"rewards": {
        "fixed": {"reward": "soft_format", "weight": 0.5},
        "ramp": {"reward": "soft_format",
                 "weight": {"schedule": "linear", "start": 0.0, "end": 1.0, "steps": 10}},
        "staged": {"reward": "soft_format", "weight": 1.0,
                   "stages": [{"until_step": 5, "weight": 0.2}, {"weight": 1.0}]},
        "same": {"reward": "soft_format", "weight": 1.0,
                 "stages": [{"until_step": 5, "params": {}}, {}]}}})
    assert [rs.is_scheduled(n) for n in ("fixed", "ramp", "staged", "same")] == \
        [False, True, True, False]


def test_params_at_gives_a_components_parameters_at_a_step():
    rs = RewardSet.from_dict({"rewards": {"fmt": {
        "reward": "soft_format", "stages": [{"until_step": 5, "params": {}},
                                            {"params": {"min_reasoning_chars": 5}}]}}})
    assert rs.params_at("fmt", 0).min_reasoning_chars != 5
    assert rs.params_at("fmt", 5).min_reasoning_chars == 5


def _valued(values: list[object], **config: object) -> tuple[RewardSet, list[dict]]:
    rs = RewardSet.from_dict({**config, "rewards": {"v": {"reward": "metadata_value"}}})
    return rs, [{"completion": "x", "metadata": {"value": v}} for v in values]


def test_values_near_the_bound_are_kept_even_where_their_sum_passes_it():
    """Inline values are checked a chunk at a time; a chunk whose sum of magnitudes is past
    MAX_ABS_VALUE is checked value by value, so each valid one is kept."""
    from rewardkit.types import MAX_ABS_VALUE

    near = MAX_ABS_VALUE * 0.9
    rs, rows = _valued([near, -near, near, MAX_ABS_VALUE * 2])
    res = rs.score(rows)
    assert res.values("v")[:3] == [near, -near, near]
    assert res.values("v")[3] is None
    assert res.outcomes["v"].score(3).status.value == "error"


def test_ints_and_bools_become_floats():
    rs, rows = _valued([1, True, 0.5, False])
    values = rs.score(rows).values("v")
    assert values == [1.0, 1.0, 0.5, 0.0] and {type(v) for v in values} == {float}


def test_a_total_of_negative_zeros_is_positive_zero():
    rs, rows = _valued([-0.0, -0.0])
    rs2 = RewardSet.from_dict({"rewards": {"v": {"reward": "metadata_value"},
                                           "w": {"reward": "metadata_value", "weight": 3.0}}})
    for totals in (rs.score(rows).totals, rs2.score(rows).totals):
        assert totals == [0.0, 0.0]
        assert all(math.copysign(1.0, t) == 1.0 for t in totals)


@pytest.mark.parametrize("on_error", ["null", "ignore"])
def test_a_single_unit_weight_component_with_a_failed_row(on_error: str):
    rs, rows = _valued([1.0, "not a number", 2.0], on_error=on_error)
    totals = rs.score(rows).totals
    assert totals[0] == 1.0 and totals[2] == 2.0
    assert totals[1] is None
