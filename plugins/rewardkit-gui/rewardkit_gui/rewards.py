"""Rewards of a GUI navigation agent: did it answer in the format, and does it get there.

``gui_navigation`` compares the predicted action list with the gold one, either by
where the two lead (``smooth``, partial credit against sparse rewards early in
training) or exactly (``strict``, the business metric); a config switches the mode by
step with ``stages``. ``gui_format`` checks the ``<think>..</think><answer>..</answer>``
layout with an action list in the answer.

>>> from rewardkit import Sample
>>> nav = gui_navigation({"mode": "smooth"})
>>> score = nav.score(Sample(completion="<answer>['UP', 'UP']</answer>", reference=["UP"]))
>>> round(score.value, 3), score.reason
(0.833, '1 step(s) off')
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from rewardkit import Params, Sample, Score, reward
from rewardkit_gui.actions import manhattan, parse_actions, parse_literal, replay

_tag_cache: dict[str, re.Pattern[str]] = {}


def _tag_pattern(tag: str) -> re.Pattern[str]:
    pattern = _tag_cache.get(tag)
    if pattern is None:
        pattern = re.compile(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", re.DOTALL)
        _tag_cache[tag] = pattern
    return pattern


def answer_block(text: str, tag: str) -> str | None:
    """The content of the last complete ``<tag>...</tag>`` block of ``text``, or None."""
    last = None
    for match in _tag_pattern(tag).finditer(text):
        last = match
    return last.group(1) if last else None


class NavigationParams(Params):
    mode: Literal["smooth", "strict"] = Field(
        "smooth",
        description="smooth: partial credit by the distance between the end points of the "
        "predicted and gold action lists; strict: 1 only for an identical list",
    )
    threshold: int = Field(
        5,
        ge=0,
        description="smooth mode: a distance d <= threshold pays 1 - d/(threshold+1); "
        "farther pays 0",
    )
    answer_tag: str = Field(
        "answer",
        description="read the action list from the last <answer_tag> block; empty string = "
        "from the whole completion",
    )
    require_answer_tag: bool = Field(
        False,
        description="when true, a completion without the answer block scores 0 instead of "
        "being searched as a whole",
    )


@reward(params=NavigationParams)
def gui_navigation(sample: Sample, params: NavigationParams) -> Score:
    """Does the predicted action list reach the gold target (smooth) or equal it (strict).

    The reference is the gold action list in any accepted form (see
    :func:`rewardkit_gui.actions.parse_actions`); an unreadable reference is an error,
    not a 0. Case is ignored. Smooth mode replays both lists from (0, 0) and pays
    1 at distance 0, ``1 - d/(threshold+1)`` up to ``threshold``, else 0; an empty or
    missing prediction pays 0. Note that smooth mode pays 1 for any path to the right
    place, detours included; strict mode does not.
    """
    gold = parse_actions(sample.reference)
    if gold is None:
        return Score.error(f"reference is not an action list: {_preview(sample.reference)}")
    if not gold:
        return Score.error("reference action list is empty")

    text = sample.text
    if params.answer_tag:
        block = answer_block(text, params.answer_tag)
        if block is None and params.require_answer_tag:
            return Score.ok(0.0, f"no <{params.answer_tag}> block")
        if block is not None:
            text = block
    predicted = parse_actions(text)
    if predicted is None:
        return Score.ok(0.0, "no action list found")
    if not predicted:
        return Score.ok(0.0, "no predicted actions")

    if params.mode == "strict":
        if predicted == gold:
            return Score.ok(1.0, "identical action list", n_actions=len(predicted))
        return Score.ok(0.0, "action list differs", n_actions=len(predicted))

    end = replay(predicted)
    distance = manhattan(end, replay(gold))
    if distance == 0:
        value, reason = 1.0, "reaches the target"
    elif distance <= params.threshold:
        value, reason = 1.0 - distance / (params.threshold + 1), f"{distance} step(s) off"
    else:
        value, reason = 0.0, f"{distance} steps off, beyond threshold {params.threshold}"
    return Score.ok(value, reason, distance=distance, end=end, n_actions=len(predicted))


class FormatParams(Params):
    reasoning_tag: str = Field("think", description="name of the reasoning tag")
    answer_tag: str = Field("answer", description="name of the answer tag")
    allow_empty_reasoning: bool = Field(
        False, description="accept a reasoning block with only whitespace in it"
    )
    answer_shape: Literal["list", "any"] = Field(
        "list",
        description="list: the answer is a non-empty list whose first item is an object "
        "with an `action` key (the SEEDS rule); any: any accepted action-list form with at "
        "least one action, e.g. {'action': ['UP']}",
    )


@reward(params=FormatParams)
def gui_format(sample: Sample, params: FormatParams) -> float:
    """1 when the whole output is ``<think>...</think>`` then ``<answer>...</answer>`` and
    the answer is an action list, else 0.

    Nothing but whitespace may surround or separate the two blocks, each tag appears
    exactly once, and the answer content must decode on its own as JSON or a Python
    literal (single quotes), with no text around it.
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
    if not reasoning.strip() and not params.allow_empty_reasoning:
        return 0.0
    try:
        decoded = parse_literal(answer)
    except ValueError:
        return 0.0
    if params.answer_shape == "list":
        ok = (
            isinstance(decoded, list)
            and len(decoded) > 0
            and isinstance(decoded[0], dict)
            and "action" in decoded[0]
        )
    else:
        ok = bool(parse_actions(decoded))
    return 1.0 if ok else 0.0


def _preview(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
