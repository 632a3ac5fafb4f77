"""gym_answer against reasoning-gym's own scorers (issue 36): a dataset's own answer is
paid on rows as they ship (metadata as JSON text), an answer that fits another row is not
paid on this one, and the scorer is built once per dataset in a worker."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("rewardkit_gym")
pytest.importorskip("reasoning_gym")

from rewardkit_gym.data import generate, unpaid_references
from rewardkit_gym.reward import scorer_for

from rewardkit import Sample, Status, get_reward


def score(row: dict, answer: str, **params: object):
    sample = Sample.from_dict({**row, "completion": f"<answer>{answer}</answer>"})
    return get_reward("gym_answer")(params).score(sample)


@pytest.mark.parametrize("dataset", ["arc_agi", "rearc"])
def test_grid_datasets_pay_their_own_answer_from_json_rows(dataset: str) -> None:
    """Their scorers compare tuples, which JSON turns into lists: before issue 36 the
    dataset's own answer was paid 0 with status ok."""
    rows = generate(dataset, 3, 11, {})
    assert all(isinstance(json.loads(r["gym_entry"])["output"], list) for r in rows)
    for row in rows:
        got = score(row, row["reference"])
        assert (got.status, got.value) == (Status.OK, 1.0), got
    assert unpaid_references(rows) == 0  # gym-data no longer warns
    wrong = rows[0]["reference"].replace("2", "3", 1)
    if wrong != rows[0]["reference"]:
        assert score(rows[0], wrong).value == 0.0


def test_puzzle24_pays_only_an_expression_of_the_rows_own_numbers() -> None:
    """puzzle24's scorer checks that the expression is 24 and has four numbers in range,
    not that they are the puzzle's: one expression was paid on every row."""
    rows = generate("puzzle24", 6, 5, {})
    own = json.loads(rows[0]["gym_entry"])["numbers"]
    other = next(r for r in rows[1:]
                 if sorted(json.loads(r["gym_entry"])["numbers"]) != sorted(own))
    assert score(rows[0], rows[0]["reference"]).value == 1.0
    got = score(rows[0], other["reference"])
    assert (got.status, got.value) == (Status.OK, 0.0)
    assert "numbers" in got.reason
    assert score(rows[0], other["reference"], credit="scorer").value == 0.0


def test_puzzle24_without_the_numbers_in_its_metadata_is_an_error() -> None:
    row = generate("puzzle24", 1, 5, {})[0]
    entry = json.loads(row["gym_entry"])
    del entry["numbers"]
    got = score({**row, "gym_entry": json.dumps(entry)}, row["reference"])
    assert got.status is Status.ERROR and "numbers" in got.reason


def test_the_scorer_is_built_once_per_dataset() -> None:
    assert scorer_for("group_anagrams") is scorer_for("group_anagrams")
    assert scorer_for("group_anagrams") is not scorer_for("spell_backward")
    with pytest.raises(ValueError):
        scorer_for("no_such_dataset")
