"""Length and content rewards: behaviours beyond the golden cases."""

from __future__ import annotations

import pickle
import time

import pytest

from rewardkit import ConfigError, RewardSet, Sample, get_reward

SYMPTOMS = {"groups": [{"name": "symptom", "any_of": ["fever"]},
                       {"name": "therapy", "any_of": ["rest"]}]}


def test_overlong_buffer_longer_than_max_length_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:
        RewardSet.from_dict({"rewards": {"len": {"reward": "overlong_penalty",
                                                 "params": {"max_length": 10, "buffer": 20}}}})
    assert "buffer (20) exceeds max_length (10)" in err.value.render()


def test_overlong_penalty_is_monotone_in_length() -> None:
    reward = get_reward("overlong_penalty")({"max_length": 50, "buffer": 25})
    values = [reward.score(Sample(completion="x" * n)).value for n in range(0, 80, 5)]
    assert values == sorted(values, reverse=True)
    assert values[0] == 0.0 and values[-1] == -1.0


def test_repetition_penalty_scores_a_megabyte_loop_quickly() -> None:
    reward = get_reward("repetition_penalty")()
    start = time.perf_counter()
    score = reward.score(Sample(completion="the answer is 4. " * 60_000))
    assert time.perf_counter() - start < 2.0
    assert score.value is not None and score.value < -0.99


def test_keyword_coverage_reports_missing_groups() -> None:
    score = get_reward("keyword_coverage")(SYMPTOMS).score(Sample(completion="fever"))
    assert score.details is not None and score.details["missing"] == ["therapy"]


def test_keyword_coverage_with_a_bad_regex_fails_when_the_config_loads() -> None:
    params = {"groups": [{"any_of": ["(fever"], "regex": True}]}
    with pytest.raises(ConfigError) as err:
        RewardSet.from_dict({"rewards": {"kw": {"reward": "keyword_coverage",
                                                "params": params}}})
    assert "not a valid regular expression" in err.value.render()


def test_keyword_coverage_survives_pickling_for_process_workers() -> None:
    reward = get_reward("keyword_coverage")(SYMPTOMS)
    clone = pickle.loads(pickle.dumps(reward))
    assert clone.score(Sample(completion="fever; rest")).value == 1.0


def test_keyword_coverage_runs_in_a_worker_process() -> None:
    rs = RewardSet.from_dict({"rewards": {"kw": {"reward": "keyword_coverage",
                                                 "params": SYMPTOMS, "mode": "process"}}})
    assert rs.score([{"completion": "fever and rest"}]).values("kw") == [1.0]
