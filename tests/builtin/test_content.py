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


@pytest.mark.parametrize("separator", [",", ".", ";", "/", ", "])
def test_overlong_penalty_counts_400_joined_words_as_400(separator: str) -> None:
    """Issue 33 item 4: 400 words joined by commas (no space) were counted as 84, one
    word per 24 characters, so a padded completion passed as short; each counts one."""
    reward = get_reward("overlong_penalty")({"max_length": 200, "buffer": 100,
                                             "unit": "words"})
    score = reward.score(Sample(completion=separator.join(["word"] * 400)))
    assert score.details is not None and score.details["length"] == 400
    assert score.value == -1.0


def test_repetition_penalty_scores_a_megabyte_loop_quickly() -> None:
    reward = get_reward("repetition_penalty")()
    # CPU seconds of this process, not wall time: a quadratic scan takes minutes of CPU,
    # a linear one a fraction of a second, whatever else the machine is running
    start = time.process_time()
    score = reward.score(Sample(completion="the answer is 4. " * 60_000))
    assert time.process_time() - start < 2.0
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


NEGATED = "No fever. Not influenza."


def test_keyword_coverage_pays_negated_mentions_unless_the_negation_check_is_on() -> None:
    groups = {"groups": [{"any_of": ["fever"]}, {"any_of": ["influenza"]}]}
    assert get_reward("keyword_coverage")(groups).score(Sample(completion=NEGATED)).value == 1.0
    checked = get_reward("keyword_coverage")({**groups, "negation": True})
    assert checked.score(Sample(completion=NEGATED)).value == 0.0
    assert checked.score(Sample(completion="Fever; influenza.")).value == 1.0


def test_keyword_coverage_negation_check_stays_linear_on_negated_keyword_spam() -> None:
    reward = get_reward("keyword_coverage")({**SYMPTOMS, "negation": True})
    start = time.process_time()  # CPU: the cost, whatever the machine's load
    score = reward.score(Sample(completion="no fever and no rest " * 50_000))
    assert time.process_time() - start < 1.0
    assert score.value == 0.0


def test_keyword_coverage_negation_examples_in_the_docs_are_what_it_does() -> None:
    import re
    from pathlib import Path

    import yaml

    page = (Path(__file__).resolve().parents[2] / "docs" / "rewards.md").read_text()
    section = page.split("**Negated keywords.**", 1)[1].split("\n## ", 1)[0]
    component = yaml.safe_load(re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)[0])
    reward = get_reward("keyword_coverage")(component["coverage"]["params"])
    rows = re.findall(r"^\| `(.+?)` \| (\d) \|$", section, re.MULTILINE)
    assert len(rows) == 4
    for text, value in rows:
        assert reward.score(Sample(completion=text)).value == float(value), text
