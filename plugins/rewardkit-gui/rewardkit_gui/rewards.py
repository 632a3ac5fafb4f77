"""Rewards of a GUI navigation agent: did it answer in the format, and does it get there.

``gui_navigation`` compares the predicted action list with the gold one: by how much
of the way to the target it covers (``progress``, the recommended partial credit
against sparse rewards early in training), by the distance between the end points
(``smooth``, the seed's formula, which pays an answer that does not move), or exactly
(``strict``, the business metric); a config switches the mode by step with
``stages``. ``gui_format`` checks the ``<think>..</think><answer>..</answer>`` layout
with an action list in the answer that ``gui_navigation`` can read.

>>> from rewardkit import Sample
>>> nav = gui_navigation({"mode": "progress"})
>>> score = nav.score(Sample(completion="<answer>['UP']</answer>", reference=["UP", "UP"]))
>>> score.value, score.reason
(0.5, 'half of the way (1 step(s) off)')
>>> seed = gui_navigation({"mode": "smooth"})
>>> score = seed.score(Sample(completion="<answer>['OK']</answer>", reference=["UP"]))
>>> round(score.value, 3), score.reason
(0.833, '1 step(s) off')
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from rewardkit import Params, Sample, Score, graded_text, reward, visible_length
from rewardkit_gui.actions import (
    ACTIONS,
    find_action_lists,
    manhattan,
    parse_actions,
    parse_literal,
    replay,
)

_tag_cache: dict[str, re.Pattern[str]] = {}


def _tag_pattern(tag: str) -> re.Pattern[str]:
    pattern = _tag_cache.get(tag)
    if pattern is None:
        pattern = re.compile(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", re.DOTALL)
        _tag_cache[tag] = pattern
    return pattern


def answer_block(text: str, tag: str) -> str | None:
    """The content of the last complete ``<tag>...</tag>`` block of ``text``, or None."""
    blocks = answer_blocks(text, tag)
    return blocks[-1] if blocks else None


def answer_blocks(text: str, tag: str) -> list[str]:
    """The contents of every complete ``<tag>...</tag>`` block of ``text``, in order."""
    return [match.group(1) for match in _tag_pattern(tag).finditer(text)]


class NavigationParams(Params):
    mode: Literal["progress", "smooth", "strict"] = Field(
        "progress",
        description="progress: the share of the way from the start to the target that "
        "the predicted path covers, (d_start - d_end) / d_start, at least 0 (no move or a "
        "wrong direction: 0); smooth: the seed's 1 - d/(threshold+1) by the distance d "
        "between the end points (pays answers that do not move); strict: 1 only for an "
        "identical list",
    )
    threshold: int = Field(
        5,
        ge=0,
        description="smooth mode: a distance d <= threshold pays 1 - d/(threshold+1); "
        "farther pays 0 (the other modes ignore it)",
    )
    answer_tag: str = Field(
        "answer",
        description="read the action list from the last <answer_tag> block; empty string = "
        "from the whole completion",
    )
    reasoning_tag: str | None = Field(
        None,
        description="name of the reasoning tag of a reasoning model: only what follows the "
        "last closing </tag> is read (answer blocks and lists inside the reasoning are not "
        "the answer), and a reasoning block that never closes pays 0; None reads the whole "
        "output, less a <think> block (rewardkit.graded_text)",
    )
    require_answer_tag: bool = Field(
        False,
        description="when true, a completion without the answer block scores 0 instead of "
        "being searched as a whole",
    )


@reward(params=NavigationParams)
def gui_navigation(sample: Sample, params: NavigationParams) -> Score:
    """Does the predicted action list get to the gold target (progress, smooth) or equal
    it (strict).

    The reference is the gold action list in any accepted form (see
    :func:`rewardkit_gui.actions.parse_actions`); an unreadable reference is an error,
    not a 0. Case is ignored. An empty or missing prediction, one with an action the
    remote does not have, or several different lists (a hedge: in one answer, across
    answer blocks, or under both an ``action`` and an ``actions`` key) pays 0. Only what
    follows the reasoning is read (:func:`rewardkit.graded_text`): neither a list nor an
    answer block inside it is the answer.

    Both lists are replayed from where the episode starts, (0, 0). Progress mode pays
    ``(d_start - d_end) / d_start``, at least 0, where ``d_start`` is the target's
    distance from the start and ``d_end`` from where the prediction ends: 1 at the
    target, 0 for not moving or moving away (a gold path that ends where it starts pays 1
    only for ending there too). Smooth mode is the seed's: 1 at distance 0,
    ``1 - d/(threshold+1)`` up to ``threshold``, else 0, so an answer that does not move
    is paid whenever the target is near. Both pay 1 for any path to the right place,
    detours included; strict mode does not.
    """
    gold = parse_actions(sample.reference)
    if gold is None:
        return Score.error(f"reference is not an action list of the remote's keys "
                           f"({', '.join(sorted(ACTIONS))}): {_preview(sample.reference)}")
    if not gold:
        return Score.error("reference action list is empty")

    text = graded_text(sample.text, params.reasoning_tag)
    if text is None:
        return Score.ok(0.0, "the reasoning never closes: no answer given")
    blocks = answer_blocks(text, params.answer_tag) if params.answer_tag else []
    if not blocks and params.answer_tag and params.require_answer_tag:
        return Score.ok(0.0, f"no <{params.answer_tag}> block")
    if blocks:
        lists = [found for block in blocks for found in find_action_lists(block)]
        if len(blocks) > 1 and len(set(lists)) > 1:
            return Score.ok(0.0, f"{len(blocks)} answer blocks with {len(set(lists))} "
                            "different action lists: a hedge is no answer")
        lists = find_action_lists(blocks[-1])
    else:
        lists = find_action_lists(text)
    if not lists:
        return Score.ok(0.0, "no action list found")
    if len(set(lists)) > 1:
        return Score.ok(0.0, f"{len(set(lists))} different action lists: a hedge is no answer")
    predicted = lists[0]
    if not predicted:
        return Score.ok(0.0, "no predicted actions")

    if params.mode == "strict":
        if predicted == gold:
            return Score.ok(1.0, "identical action list", n_actions=len(predicted))
        return Score.ok(0.0, "action list differs", n_actions=len(predicted))

    end, target = replay(predicted), replay(gold)
    distance = manhattan(end, target)
    details = {"distance": distance, "end": end, "n_actions": len(predicted)}
    if params.mode == "progress":
        return _progress(distance, manhattan((0, 0), target), details)
    if distance == 0:
        value, reason = 1.0, "reaches the target"
    elif distance <= params.threshold:
        value, reason = 1.0 - distance / (params.threshold + 1), f"{distance} step(s) off"
    else:
        value, reason = 0.0, f"{distance} steps off, beyond threshold {params.threshold}"
    return Score.ok(value, reason, **details)


def _progress(distance: int, start_distance: int, details: dict[str, object]) -> Score:
    """Progress-mode score: how much closer to the target the path ends than it began."""
    if distance == 0:
        return Score.ok(1.0, "reaches the target", **details)
    if distance >= start_distance:
        return Score.ok(0.0, f"no closer to the target than the start ({distance} step(s) "
                        f"off, {start_distance} at the start)", **details)
    value = (start_distance - distance) / start_distance
    share = "half" if value == 0.5 else f"{value:.0%}"
    return Score.ok(value, f"{share} of the way ({distance} step(s) off)", **details)


class FormatParams(Params):
    reasoning_tag: str = Field("think", description="name of the reasoning tag")
    answer_tag: str = Field("answer", description="name of the answer tag")
    allow_empty_reasoning: bool = Field(
        False, description="accept a reasoning block with only whitespace in it"
    )
    answer_shape: Literal["list", "any"] = Field(
        "list",
        description="list: the answer is a non-empty list whose first item is an object "
        "with an `action` key (the SEEDS rule); any: any accepted action-list form, e.g. "
        "{'action': ['UP']}; either way every item is an action gui_navigation accepts",
    )


@reward(params=FormatParams)
def gui_format(sample: Sample, params: FormatParams) -> float:
    """1 when the whole output is ``<think>...</think>`` then ``<answer>...</answer>`` and
    the answer is an action list ``gui_navigation`` can read, else 0.

    Nothing but whitespace may surround or separate the two blocks, each tag appears
    exactly once, the reasoning has visible characters (unless
    ``allow_empty_reasoning``), and the answer content must decode on its own as JSON or
    a Python literal (single quotes), with no text around it, into at least one action
    of the remote (:data:`rewardkit_gui.actions.ACTIONS`) and nothing else.
    """
    text = sample.text
    r, a = params.reasoning_tag, params.answer_tag
    for tag in (f"<{r}>", f"</{r}>", f"<{a}>", f"</{a}>"):
        if text.count(tag) != 1:
            return 0.0
    match = re.fullmatch(
        rf"\s*<{re.escape(r)}>(.*)</{re.escape(r)}>\s*<{re.escape(a)}>(.*)</{re.escape(a)}>\s*",
        text,
        re.DOTALL,
    )
    if match is None:
        return 0.0
    reasoning, answer = match.groups()
    if visible_length(reasoning) == 0 and not params.allow_empty_reasoning:
        return 0.0
    try:
        decoded = parse_literal(answer)
    except ValueError:
        return 0.0
    if not parse_actions(decoded):  # None (not actions) or () (no action)
        return 0.0
    if params.answer_shape == "list":
        ok = isinstance(decoded, list) and isinstance(decoded[0], dict) and "action" in decoded[0]
        return 1.0 if ok else 0.0
    return 1.0


def _preview(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
