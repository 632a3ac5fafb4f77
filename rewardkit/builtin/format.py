"""Built-in answer-format rewards (registered as a default plugin).

All are parameterised by the tag names, so the ``<reasoning>/<answer>`` layout of the
TRL GSM8K recipe and the ``<think>/<answer>`` layout of R1-style prompts are configs:

==================== =================================================================
``soft_format``      both tag pairs present, reasoning before answer, anything around
``strict_format``    the whole output is exactly the reasoning block then the answer block
``tag_count``        partial credit per tag present exactly once, minus trailing text
``answer_is_number`` the answer block holds a plain number
``final_answer_line`` a regex over the output (default: ``#### The final answer is N``)
``reasoning_steps``  partial credit per step marker (``Step 1:``, ``1.``, bullets, "First,")
==================== =================================================================

All are inline (pure, linear-time on any input).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from pydantic import Field, field_validator

from rewardkit.authoring import Params, Reward, reward
from rewardkit.builtin._answers import tag_block
from rewardkit.hookspecs import hookimpl
from rewardkit.types import Sample, Score


class TagParams(Params):
    """Parameters shared by the tag-layout rewards."""

    reasoning_tag: str = Field("think", description="name of the reasoning tag")
    answer_tag: str = Field("answer", description="name of the answer tag")
    score: float = Field(1.0, description="value when the format holds")


class LayoutParams(TagParams):
    """Parameters of soft_format and strict_format."""

    min_reasoning_chars: int = Field(
        0,
        ge=0,
        description="the reasoning block must hold at least this many non-space characters "
        "(1 or more refuses an empty reasoning block)",
    )


@lru_cache(maxsize=64)
def _junction(r: str, a: str) -> re.Pattern[str]:
    return re.compile(rf"</{re.escape(r)}>\s*<{re.escape(a)}>")


@reward(params=LayoutParams)
def soft_format(sample: Sample, params: LayoutParams) -> float:
    """Both tag pairs present, reasoning block then answer block, anything around them.

    Only whitespace may separate the two blocks.

    Pays ``score``, else 0. Example: ``<think>2+2</think> <answer>4</answer>`` -> 1.0.
    Linear in the output (a lazy regex would be quadratic on repeated tags).
    """
    text = sample.text
    opener, closer = f"<{params.reasoning_tag}>", f"</{params.answer_tag}>"
    next_open = text.find(opener)
    last_close = text.rfind(closer)
    if next_open < 0 or last_close < 0:
        return 0.0
    last_open = -1
    for joint in _junction(params.reasoning_tag, params.answer_tag).finditer(text):
        if joint.end() > last_close:
            break
        while next_open >= 0 and next_open + len(opener) <= joint.start():
            last_open = next_open
            next_open = text.find(opener, next_open + 1)
        if last_open < 0:
            continue
        reasoning = text[last_open + len(opener) : joint.start()]
        if len(reasoning.strip()) >= params.min_reasoning_chars:
            return params.score
    return 0.0


@lru_cache(maxsize=64)
def _strict_pattern(r: str, a: str) -> re.Pattern[str]:
    r, a = re.escape(r), re.escape(a)
    return re.compile(rf"<{r}>\n(.*?)\n</{r}>\n<{a}>\n(.*?)\n</{a}>\n?", re.DOTALL)


@reward(params=LayoutParams)
def strict_format(sample: Sample, params: LayoutParams) -> float:
    """The whole output is exactly the reasoning block, a newline, the answer block.

    That is ``<r>\\n...\\n</r>\\n<a>\\n...\\n</a>`` with one optional final newline,
    each tag once, nothing before or after.

    Pays ``score``, else 0. Why: the soft check lets a policy pad the output; this one
    is what the prompt actually asked for.
    """
    text = sample.text
    for tag in (params.reasoning_tag, params.answer_tag):  # first: keeps the regex linear
        if text.count(f"<{tag}>") != 1 or text.count(f"</{tag}>") != 1:
            return 0.0
    found = _strict_pattern(params.reasoning_tag, params.answer_tag).fullmatch(text)
    if found is None or len(found.group(1).strip()) < params.min_reasoning_chars:
        return 0.0
    return params.score


class TagCountParams(Params):
    """Parameters of tag_count."""

    reasoning_tag: str = Field("think", description="name of the reasoning tag")
    answer_tag: str = Field("answer", description="name of the answer tag")
    per_tag: float = Field(
        0.125, description="paid for each of the four tags found exactly once with its newline"
    )
    trailing_penalty: float = Field(
        0.001, ge=0, description="subtracted per character after the last closing answer tag"
    )
    max_trailing_penalty: float | None = Field(
        None, ge=0, description="cap on the trailing-text penalty (null: no cap)"
    )


@reward(params=TagCountParams)
def tag_count(sample: Sample, params: TagCountParams) -> Score:
    """Partial format credit per tag found exactly once, minus text after the answer.

    ``per_tag`` for each of ``<r>\\n``, ``\\n</r>\\n``, ``\\n<a>\\n`` and ``\\n</a>`` that
    occurs exactly once, minus ``trailing_penalty`` per character after the last
    ``</a>`` (one final newline is free).

    A smooth signal early in training, when the strict layout is still rare. Repeating a
    tag loses its credit, and text after the answer costs, so neither pays as a hack.
    Example (defaults, think/answer): the four tags once, nothing after -> 0.5.
    """
    text = sample.text
    r, a = params.reasoning_tag, params.answer_tag
    found = sum(
        text.count(piece) == 1 for piece in (f"<{r}>\n", f"\n</{r}>\n", f"\n<{a}>\n", f"\n</{a}>")
    )
    value = found * params.per_tag
    close = f"</{a}>"
    end = text.rfind(close)
    trailing = 0
    if end >= 0:
        after = text[end + len(close) :]
        trailing = len(after) - (1 if after.startswith("\n") else 0)
        penalty = trailing * params.trailing_penalty
        if params.max_trailing_penalty is not None:
            penalty = min(penalty, params.max_trailing_penalty)
        value -= penalty
    return Score.ok(value, tags=found, trailing_chars=trailing)


class NumberParams(Params):
    """Parameters of answer_is_number."""

    answer_tag: str = Field("answer", description="name of the answer tag")
    score: float = Field(1.0, description="value when the answer is a plain number")
    integer_only: bool = Field(
        False, description="accept only integers (digits with an optional sign)"
    )


_INTEGER = re.compile(r"[-+]?\d+")
_DECIMAL = re.compile(r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)")


@reward(params=NumberParams)
def answer_is_number(sample: Sample, params: NumberParams) -> float:
    """The last answer block holds a plain number and nothing else.

    Surrounding whitespace is allowed: ``42``, ``-3``, ``2.5`` (not with
    ``integer_only``); not ``1,000``, ``$5``, ``42 apples`` or ``x = 4``.

    Pays ``score``, else 0. A format nudge toward answers a numeric grader can read.
    """
    content = tag_block(sample.text, params.answer_tag)
    if content is None:
        return 0.0
    pattern = _INTEGER if params.integer_only else _DECIMAL
    return params.score if pattern.fullmatch(content.strip()) else 0.0


class LineParams(Params):
    """Parameters of final_answer_line."""

    pattern: str = Field(
        r"\n#### The final answer is \d+",
        description="regular expression searched for in the output (Python `re` syntax)",
    )
    score: float = Field(1.0, description="value when the pattern is found")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return value


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@reward(params=LineParams)
def final_answer_line(sample: Sample, params: LineParams) -> float:
    """The output contains ``pattern``, by default the 8-shot GSM8K closing line.

    The default is ``\\n#### The final answer is \\d+``.

    Pays ``score``, else 0. Keep custom patterns free of nested quantifiers: they run on
    every completion.
    """
    return params.score if _compiled(params.pattern).search(sample.text) else 0.0


#: open-r1's step markers; numbered lines count on every line here (open-r1: only the first)
DEFAULT_STEP_MARKERS = (r"Step \d+:", r"^\d+\.", r"\n-", r"\n\*", "First,", "Second,", "Next,",
                        "Finally,")


class StepsParams(Params):
    """Parameters of reasoning_steps."""

    min_steps: int = Field(3, ge=1, description="markers needed for full credit")
    markers: list[str] = Field(
        default_factory=lambda: list(DEFAULT_STEP_MARKERS),
        min_length=1,
        description="regular expressions of a step marker (multiline: ^ is a line start)",
    )
    score: float = Field(1.0, description="value with at least min_steps markers")

    @field_validator("markers")
    @classmethod
    def _markers_compile(cls, markers: list[str]) -> list[str]:
        for marker in markers:
            try:
                re.compile(marker)
            except re.error as exc:
                raise ValueError(f"marker {marker!r} is not a valid regular expression: "
                                 f"{exc}") from None
        return markers


@lru_cache(maxsize=16)
def _steps_pattern(markers: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{m})" for m in markers), re.MULTILINE)


@reward(params=StepsParams)
def reasoning_steps(sample: Sample, params: StepsParams) -> Score:
    """Partial credit for visible step-by-step reasoning (open-r1's ``reasoning_steps``).

    ``score * min(1, markers / min_steps)``, counting every match of the step markers:
    ``Step N:``, a numbered line ``N.``, a bullet line (``-`` or ``*``) and the
    transitions ``First,`` ``Second,`` ``Next,`` ``Finally,``. Example: ``"Step 1: add"``
    -> 1/3; three steps or more -> 1.0.
    """
    found = sum(1 for _ in _steps_pattern(tuple(params.markers)).finditer(sample.text))
    return Score.ok(params.score * min(1.0, found / params.min_steps), steps=found)


@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(soft_format)
    register(strict_format)
    register(tag_count)
    register(answer_is_number)
    register(final_answer_line)
    register(reasoning_steps)
