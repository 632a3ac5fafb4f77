"""Reading action lists from model output and references, and replaying them."""

from __future__ import annotations

import time

import pytest
from rewardkit_gui.actions import manhattan, parse_actions, replay


@pytest.mark.parametrize(
    "text",
    [
        "{'action': ['UP', 'UP', 'LEFT']}",
        '{"action": ["UP", "UP", "LEFT"]}',
        "[{'action': 'UP'}, {'action': 'UP'}, {'action': 'LEFT'}]",
        '["up", "Up", "left"]',
        "{'Actions': ['up', 'up', 'left']}",
        "[{'action': ['UP', 'UP']}, {'action': 'LEFT'}]",
    ],
)
def test_every_accepted_form_gives_the_same_actions(text: str) -> None:
    assert parse_actions(text) == ("UP", "UP", "LEFT")


def test_text_around_the_list_is_ignored() -> None:
    text = "Sure, here you go:\n```json\n{'action': ['down', 'right']}\n```\nHope it helps!"
    assert parse_actions(text) == ("DOWN", "RIGHT")


def test_a_bracketed_aside_before_the_list_does_not_hide_it() -> None:
    assert parse_actions("[thinking] the answer is ['UP']") == ("UP",)


def test_decoded_values_are_accepted_as_references() -> None:
    assert parse_actions(["up", "down"]) == ("UP", "DOWN")
    assert parse_actions({"action": ["Left"]}) == ("LEFT",)


def test_action_names_are_stripped_and_upper_cased() -> None:
    assert parse_actions("[' up ', 'Right']") == ("UP", "RIGHT")


def test_an_empty_list_is_an_empty_action_list_not_a_failure() -> None:
    assert parse_actions("[]") == ()
    assert parse_actions("{'action': []}") == ()


@pytest.mark.parametrize(
    "value",
    [
        "no list here",
        "",
        "[1, 2, 3]",
        "{'key': 'UP'}",
        "['UP', 3]",
        "[{'move': 'UP'}]",
        "['UP', '']",
        "['UP'",
        None,
        42,
        {"action": 7},
    ],
)
def test_values_without_an_action_list_give_none(value: object) -> None:
    assert parse_actions(value) is None


def test_unbalanced_brackets_over_a_megabyte_parse_quickly() -> None:
    start = time.perf_counter()
    assert parse_actions("[" * 1_000_000) is None
    assert parse_actions("{'action': [" + "'UP', " * 300_000) is None
    assert time.perf_counter() - start < 5


def test_replay_moves_y_down_the_screen_and_x_right() -> None:
    assert replay(("UP", "UP", "LEFT")) == (-1, -2)
    assert replay(("DOWN", "RIGHT", "RIGHT")) == (2, 1)
    assert replay(()) == (0, 0)


def test_replay_ignores_names_that_are_not_moves() -> None:
    assert replay(("UP", "OK", "SELECT")) == (0, -1)


def test_manhattan_distance_adds_both_axes() -> None:
    assert manhattan((0, 0), (2, -3)) == 5
