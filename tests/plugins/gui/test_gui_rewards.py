"""gui_navigation (smooth / strict) and gui_format, as SEEDS C case 2 defines them."""

from __future__ import annotations

import time

import pytest
from rewardkit_gui.rewards import gui_format, gui_navigation

from rewardkit import Sample, Status, get_reward

GOLD = {"action": ["UP", "UP", "LEFT"]}
GOOD = "<think>Target is two rows up, one left.</think><answer>{answer}</answer>"


def nav(completion: str, reference: object = GOLD, **params: object) -> float | None:
    return gui_navigation(params).score(Sample(completion=completion, reference=reference)).value


def fmt(completion: str, **params: object) -> float:
    return float(gui_format(params).score(Sample(completion=completion)))


def test_both_rewards_are_registered_by_the_plugin() -> None:
    assert get_reward("gui_navigation") is gui_navigation
    assert get_reward("gui_format") is gui_format
    assert gui_navigation.plugin == "rewardkit-gui"


# -- gui_navigation, smooth -----------------------------------------------------------
@pytest.mark.parametrize("mode", ["progress", "smooth"])
def test_pays_one_at_the_target(mode: str) -> None:
    assert nav(GOOD.format(answer="['up', 'up', 'left']"), mode=mode) == 1.0


@pytest.mark.parametrize("mode", ["progress", "smooth"])
def test_pays_one_for_a_detour_that_ends_at_the_target(mode: str) -> None:
    assert nav(GOOD.format(answer="['LEFT', 'UP', 'RIGHT', 'LEFT', 'UP']"), mode=mode) == 1.0


@pytest.mark.parametrize(("answer", "distance"), [("['UP', 'UP']", 1), ("['DOWN']", 4)])
def test_smooth_pays_one_minus_distance_over_threshold_plus_one(
    answer: str, distance: int
) -> None:
    assert nav(GOOD.format(answer=answer), mode="smooth") == pytest.approx(1 - distance / 6)


def test_smooth_pays_zero_beyond_the_threshold() -> None:
    assert nav(GOOD.format(answer="['DOWN', 'DOWN', 'RIGHT']"), mode="smooth") == 0.0


def test_smooth_threshold_is_a_parameter() -> None:
    assert nav(GOOD.format(answer="['UP', 'UP']"), mode="smooth", threshold=1) == 0.5
    assert nav(GOOD.format(answer="['UP']"), mode="smooth", threshold=1) == 0.0


def test_smooth_pays_an_answer_that_does_not_move_when_the_target_is_near() -> None:
    assert nav(GOOD.format(answer="[{'action': 'OK'}]"), mode="smooth") == 0.5


# -- gui_navigation, progress (the default) -------------------------------------------
def test_progress_is_the_default_mode() -> None:
    assert gui_navigation().params.mode == "progress"


@pytest.mark.parametrize("answer", ["[{'action': 'OK'}]", "['DOWN']", "['RIGHT']",
                                    "['UP', 'DOWN']", "['DOWN', 'DOWN', 'RIGHT', 'RIGHT']"])
def test_progress_pays_nothing_for_not_moving_or_moving_away(answer: str) -> None:
    assert nav(GOOD.format(answer=answer)) == 0.0


@pytest.mark.parametrize(("answer", "value"), [("['UP']", 1 / 3), ("['UP', 'UP']", 2 / 3),
                                               ("['LEFT', 'UP', 'UP', 'UP']", 2 / 3)])
def test_progress_pays_the_share_of_the_way_covered(answer: str, value: float) -> None:
    assert nav(GOOD.format(answer=answer)) == pytest.approx(value)


def test_progress_is_monotone_in_the_distance_left() -> None:
    gold = ["DOWN"] * 4 + ["RIGHT"] * 5
    values = [nav(GOOD.format(answer=repr(gold[:n])), reference=gold) for n in range(1, 10)]
    assert values == sorted(values) and values[-1] == 1.0


# -- what an action is ----------------------------------------------------------------
@pytest.mark.parametrize("answer", ["['UP', 'SELF_DESTRUCT']", "[{'action': None}]",
                                    "['UP', 42]", "[{'action': ''}]"])
def test_a_list_with_anything_but_remote_keys_is_no_answer(answer: str) -> None:
    score = gui_navigation().score(Sample(completion=GOOD.format(answer=answer),
                                          reference=GOLD))
    assert (score.value, score.reason) == (0.0, "no action list found")


def test_a_reference_with_an_unknown_action_is_an_error_naming_the_keys() -> None:
    score = gui_navigation().score(Sample(completion="['UP']", reference=["UP", "JUMP"]))
    assert score.status is Status.ERROR
    assert score.reason is not None and "BACK, DOWN" in score.reason


@pytest.mark.parametrize("answer", ["[{'action': None}]", "[{'action': 'SELF_DESTRUCT'}]",
                                    "[{'action': 'SELF_DESTRUCT'}, 42, 'junk']"])
def test_format_pays_nothing_navigation_cannot_read(answer: str) -> None:
    text = GOOD.format(answer=answer)
    assert fmt(text) == 0.0
    assert gui_navigation().score(Sample(completion=text, reference=GOLD)).reason == \
        "no action list found"


@pytest.mark.parametrize("answer", ["[{'action': 'UP'}, 42, 'junk']", "[{'action': 'UP'}, {}]"])
def test_format_pays_nothing_for_junk_items_beside_an_action(answer: str) -> None:
    # navigation reads the action object inside (text around a list is ignored); the
    # format reward asks for the whole answer to be the action list
    assert fmt(GOOD.format(answer=answer)) == 0.0


def test_no_predicted_actions_pays_zero_even_when_already_at_distance_zero() -> None:
    assert nav(GOOD.format(answer="[]"), reference=["UP", "DOWN"]) == 0.0


def test_output_without_any_action_list_pays_zero() -> None:
    score = gui_navigation().score(Sample(completion="I cannot tell.", reference=GOLD))
    assert (score.value, score.status) == (0.0, Status.OK)


# -- gui_navigation, strict -----------------------------------------------------------
def test_strict_pays_one_for_the_identical_list_in_any_form_and_case() -> None:
    assert nav(GOOD.format(answer="[{'action': 'up'}, {'action': 'Up'}, {'action': 'LEFT'}]"),
               mode="strict") == 1.0


def test_strict_pays_zero_for_a_different_path_to_the_same_place() -> None:
    assert nav(GOOD.format(answer="['LEFT', 'UP', 'UP']"), mode="strict") == 0.0


def test_strict_pays_zero_for_a_near_miss() -> None:
    assert nav(GOOD.format(answer="['UP', 'UP']"), mode="strict") == 0.0


# -- where the prediction is read -----------------------------------------------------
def test_the_last_answer_block_is_the_prediction() -> None:
    text = "<think>x</think><answer>moving</answer><answer>['UP', 'UP', 'LEFT']</answer>"
    assert nav(text, mode="strict") == 1.0


@pytest.mark.parametrize("mode", ["progress", "smooth", "strict"])
def test_answer_blocks_with_different_lists_are_a_hedge(mode: str) -> None:
    text = "<think>x</think><answer>['DOWN']</answer><answer>['UP', 'UP', 'LEFT']</answer>"
    score = gui_navigation({"mode": mode}).score(Sample(completion=text, reference=GOLD))
    assert (score.value, score.reason) == (
        0.0, "2 answer blocks with 2 different action lists: a hedge is no answer")


def test_answer_blocks_with_the_same_list_are_no_hedge() -> None:
    text = ("<answer>['UP', 'UP', 'LEFT']</answer> again: "
            "<answer>{'action': ['up', 'up', 'left']}</answer>")
    assert nav(text, mode="strict") == 1.0


@pytest.mark.parametrize("answer", ["{'action': ['UP', 'UP', 'LEFT'], 'actions': ['DOWN']}",
                                    "{'actions': ['UP', 'UP', 'LEFT'], 'Action': 'DOWN'}",
                                    "[{'action': 'UP', 'actions': 'DOWN'}, 'UP', 'LEFT']"])
def test_an_action_and_an_actions_key_that_differ_are_a_hedge(answer: str) -> None:
    assert nav(GOOD.format(answer=answer), mode="strict") == 0.0
    assert nav(GOOD.format(answer=answer)) == 0.0


def test_an_action_and_an_actions_key_that_agree_are_read() -> None:
    answer = "{'action': ['UP', 'UP', 'LEFT'], 'actions': ['up', 'up', 'left']}"
    assert nav(GOOD.format(answer=answer), mode="strict") == 1.0


def test_lists_in_the_reasoning_are_ignored_when_there_is_an_answer_block() -> None:
    text = "<think>not ['UP', 'UP', 'LEFT'] but</think><answer>['DOWN']</answer>"
    assert nav(text, mode="strict") == 0.0


def test_without_an_answer_block_the_whole_output_is_searched() -> None:
    assert nav("{'action': ['UP', 'UP', 'LEFT']}", mode="strict") == 1.0


def test_require_answer_tag_pays_zero_without_the_block() -> None:
    assert nav("{'action': ['UP', 'UP', 'LEFT']}", require_answer_tag=True) == 0.0


def test_an_empty_answer_tag_reads_the_whole_output_after_the_reasoning() -> None:
    text = "<think>not ['DOWN']</think>Press ['UP', 'UP', 'LEFT'] <answer>['UP']</answer>"
    assert nav(text, mode="strict", answer_tag="") == 0.0  # two different lists
    text = "<think>not ['DOWN']</think>Press ['UP', 'UP', 'LEFT'] and you are there."
    assert nav(text, mode="strict", answer_tag="") == 1.0


def test_a_list_only_in_the_reasoning_is_no_answer() -> None:
    score = gui_navigation().score(Sample(
        completion="<think>Maybe ['UP', 'UP', 'LEFT'].</think> I cannot decide.", reference=GOLD))
    assert (score.value, score.reason) == (0.0, "no action list found")


@pytest.mark.parametrize("mode", ["progress", "smooth", "strict"])
def test_several_different_lists_in_the_answer_are_a_hedge(mode: str) -> None:
    score = gui_navigation({"mode": mode}).score(Sample(
        completion="<think>up or down</think><answer>['UP'] or ['DOWN']</answer>",
        reference=["UP"]))
    assert score.value == 0.0
    assert score.reason == "2 different action lists: a hedge is no answer"


def test_the_same_list_written_twice_is_no_hedge() -> None:
    assert nav(GOOD.format(answer="['UP', 'UP', 'LEFT'], i.e. ['up', 'up', 'left']"),
               mode="strict") == 1.0


# -- references -----------------------------------------------------------------------
@pytest.mark.parametrize("reference", [["UP", "UP", "LEFT"], "{'action': ['UP', 'UP', 'LEFT']}",
                                       '[{"action": "UP"}, {"action": "UP"}, {"action": "LEFT"}]'])
def test_the_reference_may_be_any_accepted_form(reference: object) -> None:
    assert nav(GOOD.format(answer="['UP', 'UP', 'LEFT']"), reference=reference,
               mode="strict") == 1.0


@pytest.mark.parametrize("reference", [None, "UP UP LEFT", [1, 2], [], "{'action': []}"])
def test_an_unusable_reference_is_an_error_not_a_zero(reference: object) -> None:
    score = gui_navigation().score(Sample(completion="['UP']", reference=reference))
    assert score.status is Status.ERROR
    assert score.value is None


def test_unknown_params_are_rejected() -> None:
    with pytest.raises(ValueError, match="extra"):
        gui_navigation({"mode": "smooth", "treshold": 3})


def test_mode_must_be_progress_smooth_or_strict() -> None:
    with pytest.raises(ValueError):
        gui_navigation({"mode": "fuzzy"})


# -- gui_format -----------------------------------------------------------------------
def test_format_pays_one_for_think_then_answer_with_a_list_of_action_objects() -> None:
    assert fmt("<think>two up</think>\n<answer>[{'action': 'UP'}, {'action': 'UP'}]</answer>")


def test_format_accepts_json_double_quotes_and_surrounding_whitespace() -> None:
    assert fmt('\n <think>a</think> <answer> [{"action": "UP"}] </answer>\n') == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "<answer>[{'action': 'UP'}]</answer>",  # no reasoning
        "<think>a</think>",  # no answer
        "<answer>[{'action': 'UP'}]</answer><think>a</think>",  # wrong order
        "Sure! <think>a</think><answer>[{'action': 'UP'}]</answer>",  # text before
        "<think>a</think><answer>[{'action': 'UP'}]</answer> done",  # text after
        "<think>a</think>so<answer>[{'action': 'UP'}]</answer>",  # text between
        "<think>a</think><answer>[{'action': 'UP'}]</answer><answer>[]</answer>",  # repeated
        "<think><think>a</think></think><answer>[{'action': 'UP'}]</answer>",  # nested
        "<think>a</think><answer>[]</answer>",  # empty list
        "<think>a</think><answer>['UP', 'UP']</answer>",  # first item has no action
        "<think>a</think><answer>[{'move': 'UP'}]</answer>",
        "<think>a</think><answer>I go up: [{'action': 'UP'}]</answer>",  # junk in answer
        "<think>a</think><answer>[{'action': 'UP'}</answer>",  # unclosed
    ],
)
def test_format_pays_zero_for_anything_else(text: str) -> None:
    assert fmt(text) == 0.0


def test_format_pays_zero_for_an_empty_reasoning_block_unless_allowed() -> None:
    text = "<think>  </think><answer>[{'action': 'UP'}]</answer>"
    assert fmt(text) == 0.0
    assert fmt(text, allow_empty_reasoning=True) == 1.0


def test_format_answer_shape_any_accepts_the_dict_form() -> None:
    text = "<think>a</think><answer>{'action': ['UP', 'UP']}</answer>"
    assert fmt(text) == 0.0
    assert fmt(text, answer_shape="any") == 1.0


def test_format_tag_names_are_parameters() -> None:
    text = "<reasoning>a</reasoning><result>[{'action': 'UP'}]</result>"
    assert fmt(text, reasoning_tag="reasoning", answer_tag="result") == 1.0


# -- huge outputs ---------------------------------------------------------------------
def test_a_megabyte_of_reasoning_still_scores_the_answer_quickly() -> None:
    reasoning = "Maybe [UP] or {LEFT}? " * 50_000
    text = f"<think>{reasoning}</think><answer>['UP', 'UP', 'LEFT']</answer>"
    start = time.perf_counter()
    assert nav(text, mode="strict") == 1.0
    assert fmt(text.replace("['UP', 'UP', 'LEFT']", "[{'action': 'UP'}]")) == 1.0
    assert time.perf_counter() - start < 5
