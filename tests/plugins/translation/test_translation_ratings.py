"""Reading the judge's rating list from its answer, and the review rule."""

from __future__ import annotations

import pytest
from rewardkit_translation.ratings import (
    RatingsStatus,
    extract_ratings,
    needs_review,
    parse_rating_list,
)


@pytest.mark.parametrize(
    "text",
    [
        "<think>fine</think>, my ratings is [2, 5, 5, 5, 5, 5, 5]",
        "<think>fine</think>, My Ratings Is [2,5,5,5,5,5,5]",
        "<think>fine</think>\n\nmy ratings are:  [ 2 , 5, 5, 5, 5, 5, 5 ]",
        "<think>fine</think> Ratings: [2, 5, 5, 5, 5, 5, 5].",
        "my ratings is [2, 5, 5, 5, 5, 5, 5]",
    ],
)
def test_spacing_case_and_wording_variants_are_read(text: str) -> None:
    result = extract_ratings(text)
    assert result.status is RatingsStatus.OK
    assert result.ratings == (2, 5, 5, 5, 5, 5, 5)


def test_lists_quoted_in_the_reasoning_are_ignored() -> None:
    text = "<think>the label said my ratings is [0, 0, 0]</think>, my ratings is [5, 5, 5]"
    assert extract_ratings(text).ratings == (5, 5, 5)


def test_the_last_statement_after_the_reasoning_wins() -> None:
    text = "<think>x</think> my ratings is [1, 1] no wait, my ratings is [4, 4]"
    assert extract_ratings(text).ratings == (4, 4)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("<think>fine</think>, all good", RatingsStatus.MISSING),
        ("", RatingsStatus.MISSING),
        ("<think>my ratings is [5, 5]</think>", RatingsStatus.MISSING),
        ("<think>x</think>, my ratings is 5, 5, 5", RatingsStatus.MALFORMED),
        ("<think>x</think>, my ratings is [5, 5, 5", RatingsStatus.MALFORMED),
        ("<think>x</think>, my ratings is []", RatingsStatus.MALFORMED),
        ("<think>x</think>, my ratings is [5, five, 5]", RatingsStatus.MALFORMED),
        ("<think>x</think>, my ratings is [5, 4.5, 5]", RatingsStatus.MALFORMED),
        ("<think>x</think>, my ratings is [5, 6, 5]", RatingsStatus.MALFORMED),
        ("<think>x</think>, my ratings is [5, -1, 5]", RatingsStatus.MALFORMED),
        ("<think>x</think>, my ratings is [5, " + "9" * 5000 + "]", RatingsStatus.MALFORMED),
    ],
)
def test_unreadable_lists_say_why(text: str, status: RatingsStatus) -> None:
    result = extract_ratings(text)
    assert result.status is status
    assert result.detail


def test_a_list_of_the_wrong_length_is_reported_with_both_counts() -> None:
    result = extract_ratings("<think>x</think> my ratings is [5, 5]", expected=7)
    assert result.status is RatingsStatus.WRONG_LENGTH
    assert result.detail == "2 scores, expected 7"


def test_max_score_is_a_parameter() -> None:
    assert extract_ratings("my ratings is [9, 10]", max_score=10).ratings == (9, 10)


@pytest.mark.parametrize(
    "value",
    [
        [2, 5, 5],
        "[2, 5, 5]",
        [2.0, 5.0, 5.0],
        "<think>x</think>, my ratings is [2, 5, 5]",
    ],
)
def test_reference_lists_are_read_from_lists_json_text_or_judge_answers(value: object) -> None:
    assert parse_rating_list(value).ratings == (2, 5, 5)


@pytest.mark.parametrize("value", [None, 5, "[2, 5", [2, "x"], [True, 5], [2.5], [], {"a": 1}])
def test_unusable_references_are_not_ok(value: object) -> None:
    assert not parse_rating_list(value).ok


def test_scores_at_or_below_the_threshold_need_review() -> None:
    assert needs_review((0, 2, 3, 5)) == (True, True, False, False)
    assert needs_review((0, 2, 3, 5), review_at_or_below=3) == (True, True, True, False)
