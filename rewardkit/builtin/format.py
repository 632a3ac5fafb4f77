"""Built-in answer-format rewards (registered as a default plugin).

All are parameterised by the tag names, so the ``<reasoning>/<answer>`` layout of the
TRL GSM8K recipe and the ``<think>/<answer>`` layout of R1-style prompts are configs:

==================== =================================================================
``soft_format``      the output is the reasoning block then the answer block, each tag
                     once, any whitespace around them
``strict_format``    the whole output is exactly the reasoning block then the answer block
``tag_count``        partial credit per tag present exactly once, minus text outside the
                     blocks
``answer_is_number`` the one answer block holds a plain number and ends the output
``final_answer_line`` a regex that ends the output (default: ``#### The final answer is N``)
``reasoning_steps``  partial credit per step (``Step 1:``, ``1.``, bullets, "First,") with
                     something in it
==================== =================================================================

Content means visible characters (:func:`rewardkit.text.visible.visible_length`): a block of
zero-width spaces is empty. All are inline (pure, linear-time on any input).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from pydantic import Field, field_validator

from rewardkit.authoring import Params, Reward, reward
from rewardkit.builtin._tag_blocks import tag_block
from rewardkit.hookspecs import hookimpl
from rewardkit.text.visible import visible_length, visible_text
from rewardkit.types import Sample, Score


class TagParams(Params):
    """Parameters shared by the tag-layout rewards."""

    reasoning_tag: str = Field("think", description="name of the reasoning tag")
    answer_tag: str = Field("answer", description="name of the answer tag")
    score: float = Field(1.0, description="value when the format holds")


class LayoutParams(TagParams):
    """Parameters of soft_format and strict_format."""

    min_reasoning_chars: int = Field(
        1,
        ge=0,
        description="the reasoning block must hold at least this many visible characters "
        "(zero-width and other invisible characters do not count); 0 accepts an empty "
        "block, as the TRL recipe's regex does",
    )


class SoftLayoutParams(LayoutParams):
    """Parameters of soft_format."""

    ends_output: bool = Field(
        True, description="nothing visible after the answer block (false: anything after "
        "it, as the TRL recipe's regex, anchored at the start only; pays whatever the model "
        "goes on to write)"
    )


@dataclass(frozen=True)
class _Layout:
    """The text of an output around its four tags, each found exactly once, in order."""

    before: str
    reasoning: str
    between: str
    answer: str
    after: str


def _layout(text: str, reasoning_tag: str, answer_tag: str) -> _Layout | None:
    """Split ``text`` at ``<r>``, ``</r>``, ``<a>``, ``</a>``; None unless each of the
    four occurs exactly once and in that order (a repeated, stray or unbalanced tag is
    not the structure the prompt asked for)."""
    tags = (f"<{reasoning_tag}>", f"</{reasoning_tag}>", f"<{answer_tag}>", f"</{answer_tag}>")
    starts = []
    for tag in tags:
        first = text.find(tag)
        if first < 0 or text.find(tag, first + 1) >= 0:
            return None
        starts.append(first)
    if starts != sorted(starts):
        return None
    ends = [start + len(tag) for start, tag in zip(starts, tags, strict=True)]
    return _Layout(text[: starts[0]], text[ends[0] : starts[1]], text[ends[1] : starts[2]],
                   text[ends[2] : starts[3]], text[ends[3] :])


@reward(params=SoftLayoutParams)
def soft_format(sample: Sample, params: SoftLayoutParams) -> float:
    """The output is the reasoning block then the answer block, lenient on whitespace only.

    Each of the four tags exactly once, in order; nothing visible before, between or
    after the blocks (any whitespace, newlines or none, is fine); a non-empty answer and
    at least ``min_reasoning_chars`` visible characters of reasoning. Stray, repeated or
    unbalanced tags, text around the blocks and an empty answer pay 0: the soft check
    forgives layout, not structure. ``ends_output: false`` lets anything follow the answer
    block (the TRL recipe's regex is anchored at the start only); the four tags still
    occur once each, so a second block after the first pays 0 either way.

    Pays ``score``, else 0. Example: ``<think>2+2</think> <answer>4</answer>`` -> 1.0.
    Linear in the output.
    """
    parts = _layout(sample.text, params.reasoning_tag, params.answer_tag)
    if parts is None:
        return 0.0
    outside = parts.before + parts.between + (parts.after if params.ends_output else "")
    if visible_length(outside):
        return 0.0
    if visible_length(parts.answer) == 0:
        return 0.0
    if visible_length(parts.reasoning) < params.min_reasoning_chars:
        return 0.0
    return params.score


@lru_cache(maxsize=64)
def _strict_pattern(r: str, a: str) -> re.Pattern[str]:
    r, a = re.escape(r), re.escape(a)
    return re.compile(rf"<{r}>\n(.*?)\n</{r}>\n<{a}>\n(.*?)\n</{a}>\n?", re.DOTALL)


@reward(params=LayoutParams)
def strict_format(sample: Sample, params: LayoutParams) -> float:
    """The whole output is exactly the reasoning block, a newline, the answer block.

    That is ``<r>\\n...\\n</r>\\n<a>\\n...\\n</a>`` with one optional final newline,
    each tag once, nothing before or after, a non-empty answer and at least
    ``min_reasoning_chars`` visible characters of reasoning.

    Pays ``score``, else 0. Why: the soft check forgives whitespace; this one is the
    exact layout the prompt asked for.
    """
    text = sample.text
    for tag in (params.reasoning_tag, params.answer_tag):  # first: keeps the regex linear
        if text.count(f"<{tag}>") != 1 or text.count(f"</{tag}>") != 1:
            return 0.0
    found = _strict_pattern(params.reasoning_tag, params.answer_tag).fullmatch(text)
    if found is None or visible_length(found.group(2)) == 0:
        return 0.0
    if visible_length(found.group(1)) < params.min_reasoning_chars:
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
        0.001, ge=0, description="subtracted per character outside the blocks: before the "
        "reasoning block, between the blocks and after the first closing answer tag (the "
        "newlines the tags need are free)"
    )
    max_trailing_penalty: float | None = Field(
        None, ge=0, description="cap on that penalty (null: no cap)"
    )


@reward(params=TagCountParams)
def tag_count(sample: Sample, params: TagCountParams) -> Score:
    """Partial format credit per tag found exactly once, minus text outside the blocks.

    ``per_tag`` for each of ``<r>\\n``, ``\\n</r>\\n``, ``\\n<a>\\n`` and ``\\n</a>`` that
    occurs exactly once while its bare tag (``<r>``, ...) occurs exactly once too, and
    whose block holds visible text; minus ``trailing_penalty`` per character outside the
    blocks: before the first ``<r>``, between the blocks, and after the first ``</a>``
    (the newlines the tags need are free).

    A smooth signal early in training, when the strict layout is still rare. Repeating a
    tag, a stray copy of it anywhere, or an empty block loses that credit, and padding
    costs wherever it goes (after the answer even when a second ``</a>`` is glued on at
    its end), and a tag out of the layout's order (``</a>`` before ``<r>``) earns nothing,
    so none of them pays as a hack. The TRL recipe charged only text after the
    last ``</a>``. Example (defaults, think/answer): the four tags once, nothing
    around -> 0.5.
    """
    text = sample.text
    r, a = params.reasoning_tag, params.answer_tag
    # the layout's pieces in their order, each with where it is when it may earn credit
    places = [
        text.find(piece)
        if text.count(piece) == 1 and text.count(bare) == 1 and _has_content(text, block)
        else -1
        for piece, bare, block in (
            (f"<{r}>\n", f"<{r}>", r), (f"\n</{r}>\n", f"</{r}>", r),
            (f"\n<{a}>\n", f"<{a}>", a), (f"\n</{a}>", f"</{a}>", a),
        )
    ]
    found = sum(_in_order(places, i) for i in range(len(places)))
    value = found * params.per_tag
    outside = _outside_chars(text, r, a)
    penalty = outside * params.trailing_penalty
    if params.max_trailing_penalty is not None:
        penalty = min(penalty, params.max_trailing_penalty)
    return Score.ok(value - penalty, tags=found, outside_chars=outside)


def _in_order(places: list[int], i: int) -> bool:
    """Whether piece ``i`` was found (``places[i] >= 0``) with every other found piece on
    its own side of it: the layout's earlier pieces before it, the later ones after it
    (the four tags once each in another order earn nothing)."""
    here = places[i]
    return here >= 0 and all(
        there < 0 or (there < here if j < i else there > here)
        for j, there in enumerate(places) if j != i
    )


def _outside_chars(text: str, r: str, a: str) -> int:
    """Characters of ``text`` outside its blocks: before the first ``<r>``, between the
    ``</r>`` after it and the next ``<a>``, after the ``</a>`` that follows (a place whose
    tags are missing has nothing to count). The newlines the tags' pieces need are free:
    one before ``<r>``, one after ``</r>`` and one before ``<a>``, one after ``</a>``."""
    open_r = text.find(f"<{r}>")
    close_r = text.find(f"</{r}>", max(open_r, 0))
    open_a = text.find(f"<{a}>", max(close_r, 0))
    close_a = text.find(f"</{a}>", max(open_a, 0))
    count = 0
    if open_r > 0:
        count += open_r - (1 if text[open_r - 1] == "\n" else 0)
    if 0 <= close_r < open_a:
        between = text[close_r + len(r) + 3 : open_a]
        between = between[1:] if between.startswith("\n") else between
        count += len(between) - (1 if between.endswith("\n") else 0)
    if close_a >= 0:
        after = text[close_a + len(a) + 3 :]
        count += len(after) - (1 if after.startswith("\n") else 0)
    return count


def _has_content(text: str, tag: str) -> bool:
    """False when ``text`` has a ``<tag>...</tag>`` block with nothing visible in it (a
    tag whose partner is missing has no block to judge, and keeps its credit)."""
    start, end = text.find(f"<{tag}>"), text.find(f"</{tag}>")
    if start < 0 or end < start:
        return True
    return visible_length(text[start + len(tag) + 2 : end]) > 0


class NumberParams(Params):
    """Parameters of answer_is_number."""

    answer_tag: str = Field("answer", description="name of the answer tag")
    score: float = Field(1.0, description="value when the answer is a plain number")
    integer_only: bool = Field(
        False, description="accept only integers (digits with an optional sign)"
    )
    signed: bool = Field(
        True, description="accept a leading + or - (false: digits only, as the TRL recipe's "
        "str.isdigit)"
    )
    ends_output: bool = Field(
        True, description="nothing visible after the answer block (false: anything after "
        "it, as the TRL recipe, which reads the block and ignores what follows)"
    )


_NUMBERS = {
    (True, True): re.compile(r"[-+]?\d+"),
    (True, False): re.compile(r"\d+"),
    (False, True): re.compile(r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)"),
    (False, False): re.compile(r"\d+(?:\.\d+)?|\.\d+"),
}


@reward(params=NumberParams)
def answer_is_number(sample: Sample, params: NumberParams) -> float:
    """The output's one answer block holds a plain number and nothing else, and ends it.

    Surrounding whitespace is allowed: ``42``, ``-3``, ``2.5`` (not with
    ``integer_only``); not ``1,000``, ``$5``, ``42 apples`` or ``x = 4``. The answer tag
    occurs once (opener and closer), and nothing visible follows the block: stuffed or
    repeated blocks, a block inside the reasoning (its closing tag follows) and junk
    after the answer pay 0 (``ends_output: false`` lets text follow the block, as the TRL
    recipe; the tag still occurs once). A wrong number still pays: this is a format check.

    Pays ``score``, else 0. A format nudge toward answers a numeric grader can read.
    Linear in the output.
    """
    text, tag = sample.text, params.answer_tag
    if text.count(f"<{tag}>") != 1 or text.count(f"</{tag}>") != 1:
        return 0.0
    content = tag_block(text, tag)
    if content is None:
        return 0.0
    if params.ends_output and visible_length(text[text.index(f"</{tag}>") + len(tag) + 3 :]):
        return 0.0
    pattern = _NUMBERS[params.integer_only, params.signed]
    return params.score if pattern.fullmatch(content.strip()) else 0.0


class LineParams(Params):
    """Parameters of final_answer_line."""

    pattern: str = Field(
        r"\n#### The final answer is \d+",
        description="regular expression searched for in the output (Python `re` syntax)",
    )
    score: float = Field(1.0, description="value when the pattern is found")
    ends_output: bool = Field(
        True, description="the first match's line ends the output: after the match only "
        "the rest of its number and words without digits on that line, nothing visible "
        "after it (false: the pattern anywhere, as the seed's regex; pays a second answer "
        "line and whatever the model writes after it)"
    )

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


#: what may follow a matched number on its line: the rest of the number (``1,000``, ``2.5``)
_NUMBER_TAIL = re.compile(r"[\d.,]*")


@reward(params=LineParams)
def final_answer_line(sample: Sample, params: LineParams) -> float:
    """The output ends with ``pattern``, by default the 8-shot GSM8K closing line.

    The default is ``\\n#### The final answer is \\d+``. With ``ends_output`` (the
    default) the first match's line is the output's last: the rest of that line may
    finish the number (``1,000``) and add words without digits (``apples``, a period),
    and nothing visible follows it. So a second answer line, the same line repeated, a
    line listing several answers (``1 or 2 or 18``) and text the model goes on to write
    (a base model's next invented question) pay 0. A wrong number still pays: this is
    a format check.

    Pays ``score``, else 0. Keep custom patterns free of nested quantifiers: they run on
    every completion.
    """
    text = sample.text
    found = _compiled(params.pattern).search(text)
    if found is None:
        return 0.0
    if params.ends_output:
        rest = text[found.end() :]
        if not rest:  # the match ends the output (the common case)
            return params.score
        line, _, after = rest.partition("\n")
        line = line[_NUMBER_TAIL.match(line).end() :]  # type: ignore[union-attr]
        if any(ch.isdigit() for ch in line) or visible_length(after):
            return 0.0
    return params.score


#: open-r1's step markers; numbered lines count on every line here (open-r1: only the first)
DEFAULT_STEP_MARKERS = (r"Step \d+:", r"^\d+\.", r"\n-", r"\n\*", "First,", "Second,", "Next,",
                        "Finally,")


class StepsParams(Params):
    """Parameters of reasoning_steps."""

    min_steps: int = Field(3, ge=1, description="steps needed for full credit")
    markers: list[str] = Field(
        default_factory=lambda: list(DEFAULT_STEP_MARKERS),
        min_length=1,
        description="regular expressions of a step marker (multiline: ^ is a line start)",
    )
    min_step_chars: int = Field(
        1, ge=1, description="letters or digits (visible ones) a step needs after its marker, "
        "before the next marker, to count: a marker with nothing or only punctuation in it "
        "is no step"
    )
    score: float = Field(1.0, description="value with at least min_steps steps")

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

    ``score * min(1, steps / min_steps)``. A step is a match of the step markers
    (``Step N:``, a numbered line ``N.``, a bullet line (``-`` or ``*``), the transitions
    ``First,`` ``Second,`` ``Next,`` ``Finally,``) followed by at least
    ``min_step_chars`` visible letters or digits before the next marker. So ``Step 1:
    Step 2: Step 3:``, empty bullets and ``Step 1: .`` are no steps, and ``Step 1:
    First, add`` is one.
    Example: ``"Step 1: add"`` -> 1/3; three steps or more -> 1.0.
    """
    text = sample.text
    starts, ends = [], []
    for marker in _steps_pattern(tuple(params.markers)).finditer(text):
        starts.append(marker.start())
        ends.append(marker.end())
    starts.append(len(text))
    found = sum(_word_chars(text[end:next_start]) >= params.min_step_chars
                for end, next_start in zip(ends, starts[1:], strict=False))
    return Score.ok(params.score * min(1.0, found / params.min_steps), steps=found)


def _word_chars(text: str) -> int:
    """How many visible letters and digits ``text`` has (what a step's content needs)."""
    return sum(ch.isalnum() for ch in visible_text(text))


@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(soft_format)
    register(strict_format)
    register(tag_count)
    register(answer_is_number)
    register(final_answer_line)
    register(reasoning_steps)
