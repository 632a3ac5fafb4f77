"""translation_verdict: the business verdict of SEEDS C case 1, overall or per criterion."""

from __future__ import annotations

import time

import pytest
from rewardkit_translation.rewards import translation_verdict

from rewardkit import Sample, Status, get_reward

LABEL_REVIEW = [2, 5, 5, 5, 5, 5, 5]  # criterion 1 needs review
LABEL_OK = [5, 4, 5, 3, 5, 5, 5]


def answer(ratings: str) -> str:
    return f"<think>Checked each criterion.</think>, my ratings is {ratings}"


def verdict(completion: str, reference: object = LABEL_REVIEW, **params: object) -> float | None:
    sample = Sample(completion=completion, reference=reference)
    return translation_verdict(params).score(sample).value


def test_the_reward_is_registered_by_the_plugin() -> None:
    assert get_reward("translation_verdict") is translation_verdict
    assert translation_verdict.plugin == "rewardkit-translation"


# -- mode all -------------------------------------------------------------------------
def test_all_pays_one_when_both_say_review_even_with_other_scores() -> None:
    assert verdict(answer("[5, 5, 5, 0, 5, 5, 5]")) == 1.0


def test_all_pays_one_when_both_say_ok() -> None:
    assert verdict(answer("[3, 3, 3, 3, 3, 3, 3]"), reference=LABEL_OK) == 1.0


def test_all_pays_zero_when_the_prediction_misses_a_needed_review() -> None:
    assert verdict(answer("[3, 5, 5, 5, 5, 5, 5]")) == 0.0


def test_all_pays_zero_for_a_needless_review() -> None:
    assert verdict(answer("[5, 4, 5, 2, 5, 5, 5]"), reference=LABEL_OK) == 0.0


def test_the_review_threshold_is_a_parameter() -> None:
    # with "3 or below needs review" the OK label becomes a review label
    assert verdict(answer("[3, 5, 5, 5, 5, 5, 5]"), reference=LABEL_OK, review_at_or_below=3) == 1.0
    assert verdict(answer("[4, 5, 5, 5, 5, 5, 5]"), reference=LABEL_OK, review_at_or_below=3) == 0.0


# -- mode per_criterion ---------------------------------------------------------------
def test_per_criterion_pays_the_fraction_of_matching_criterion_verdicts() -> None:
    value = verdict(answer("[2, 5, 5, 1, 5, 5, 5]"), mode="per_criterion")
    assert value == pytest.approx(6 / 7)


def test_per_criterion_pays_one_when_every_verdict_matches_despite_other_scores() -> None:
    assert verdict(answer("[0, 3, 4, 3, 3, 4, 3]"), mode="per_criterion") == 1.0


# -- unreadable outputs ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("completion", "why"),
    [
        ("<think>fine</think>, looks good to me", "missing"),
        (answer("[2, 5, 5"), "malformed"),
        (answer("[2, 5, 5]"), "wrong_length"),
        (answer("[" + ", ".join(["0"] * 500) + "]"), "wrong_length"),
    ],
)
def test_unreadable_ratings_pay_zero_and_say_why(completion: str, why: str) -> None:
    score = translation_verdict().score(Sample(completion=completion, reference=LABEL_REVIEW))
    assert (score.value, score.status) == (0.0, Status.OK)
    assert score.reason.startswith(f"ratings {why}")


def test_the_value_of_unreadable_ratings_is_a_parameter() -> None:
    assert verdict("no ratings", unreadable_value=-1.0) == -1.0


def test_require_think_refuses_an_answer_without_reasoning() -> None:
    bare = "my ratings is [2, 5, 5, 5, 5, 5, 5]"
    assert verdict(bare) == 1.0
    assert verdict(bare, require_think=True) == 0.0
    assert verdict("<think> </think>" + bare, require_think=True) == 0.0
    assert verdict("<think>why</think>" + bare, require_think=True) == 1.0


@pytest.mark.parametrize("invisible", ["\u200b", "\u2060\ufeff", "\u00ad\u200e", "\u3164",
                                       "\u2800\u3000", "\ufe0f\u034f"])
def test_require_think_counts_only_visible_reasoning(invisible: str) -> None:
    bare = ", my ratings is [5, 5, 5, 5, 5, 5, 5]"
    assert verdict(f"<think>{invisible}</think>{bare}", LABEL_OK, require_think=True) == 0.0
    assert verdict(f"<think>{invisible}ok</think>{bare}", LABEL_OK, require_think=True) == 1.0


def test_criteria_fixes_the_expected_list_length() -> None:
    score = translation_verdict({"criteria": 6}).score(
        Sample(completion=answer("[2, 5, 5, 5, 5, 5]"), reference=LABEL_REVIEW)
    )
    assert score.status is Status.ERROR  # the 7-score label does not fit 6 criteria


# -- references -----------------------------------------------------------------------
def test_the_reference_may_be_json_text() -> None:
    assert verdict(answer("[2, 5, 5, 5, 5, 5, 5]"), reference="[2, 5, 5, 5, 5, 5, 5]") == 1.0


@pytest.mark.parametrize("reference", [None, "n/a", [], [2, 9], "[2, 5"])
def test_an_unreadable_reference_is_an_error_not_a_zero(reference: object) -> None:
    score = translation_verdict().score(Sample(completion=answer("[2]"), reference=reference))
    assert score.status is Status.ERROR
    assert score.value is None


def test_unknown_params_are_rejected() -> None:
    with pytest.raises(ValueError, match="extra"):
        translation_verdict({"review_below": 2})


def test_a_megabyte_of_reasoning_still_scores_the_ratings_quickly() -> None:
    reasoning = "my ratings is [0, 0] " * 50_000
    text = f"<think>{reasoning}</think>, my ratings is [2, 5, 5, 5, 5, 5, 5]"
    start = time.perf_counter()
    assert verdict(text) == 1.0
    assert time.perf_counter() - start < 5


def test_several_different_rating_lists_after_the_reasoning_are_a_hedge() -> None:
    hedge = answer("[5, 4, 5, 3, 5, 5, 5] or maybe [2, 5, 5, 5, 5, 5, 5]")
    score = translation_verdict().score(Sample(completion=hedge, reference=LABEL_OK))
    assert (score.value, score.details) == (0.0, {"status": "hedged"})
    assert score.reason == "ratings hedged: 2 different rating lists in the answer"


def test_lists_of_another_length_or_inside_the_reasoning_are_no_hedge() -> None:
    text = ("<think>Maybe [2, 5, 5, 5, 5, 5, 5]?</think>, my ratings is [5, 4, 5, 3, 5, 5, 5] "
            "(see note [1])")
    assert verdict(text, LABEL_OK) == 1.0
