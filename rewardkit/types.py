"""The values rewardkit passes around: what is scored (`Sample`) and the verdict (`Score`)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: largest value magnitude a reward may return: beyond it the score is ``error``. Model
#: output controls what a number-parsing grader returns; with this bound (and the weight
#: bound of the config) no sum, square or mean of scores can overflow to inf.
MAX_ABS_VALUE = 1e12
#: longest reason a reward's verdict keeps: a longer one (a whole input echoed) is cut
#: where the verdict is taken (:func:`coerce_value`), saying how much was cut
MAX_REASON_CHARS = 10_000
#: most characters a reward's details keep (about, as JSON): larger ones (an input echoed,
#: a parser's dump) are cut where the verdict is taken (:func:`coerce_value`), entries
#: small enough kept whole and the key ``details_cut`` saying what was cut. Larger than
#: the reason's bound: details carry per-test outcomes and per-turn values
MAX_DETAILS_CHARS = 100_000
#: the key a cut ``details`` gains, saying what was cut
DETAILS_CUT = "details_cut"


class Status(StrEnum):
    """How a reward's verdict on one sample came about.

    A wrong answer is ``OK`` with value 0. ``SKIPPED`` means the reward does not apply
    to the sample (routing, or the reward said so); ``ERROR`` and ``TIMEOUT`` mean the
    grading itself failed and the value is ``None``, never a silent 0 or 1.
    """

    OK = "ok"
    SKIPPED = "skipped"
    ERROR = "error"
    TIMEOUT = "timeout"


class ExecutionMode(StrEnum):
    """Where a reward runs: in the caller, in a worker process with a hard timeout, or on
    an event loop (I/O-bound rewards)."""

    INLINE = "inline"
    PROCESS = "process"
    ASYNC = "async"


@dataclass(frozen=True, slots=True)
class Score:
    """One reward's verdict on one sample."""

    value: float | None
    status: Status = Status.OK
    reason: str = ""
    details: Mapping[str, Any] | None = None

    @classmethod
    def ok(cls, value: float, reason: str = "", **details: Any) -> Score:
        return cls(float(value), Status.OK, reason, details or None)

    @classmethod
    def skip(cls, reason: str = "does not apply", **details: Any) -> Score:
        return cls(None, Status.SKIPPED, reason, details or None)

    @classmethod
    def error(cls, reason: str, **details: Any) -> Score:
        return cls(None, Status.ERROR, reason, details or None)

    @classmethod
    def timeout(cls, reason: str) -> Score:
        return cls(None, Status.TIMEOUT, reason, None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "status": str(self.status),
            "reason": self.reason,
        }
        if self.details:
            out["details"] = dict(self.details)
        return out


def completion_text(completion: Any) -> str:
    """The text of a completion, whether it is a string or a list of chat messages.

    For chat messages it is the final assistant message's content: in a multi-turn,
    tool-using trajectory that is the final answer, the earlier turns and tool results
    are not (:mod:`rewardkit.trajectory` reads those); with no message marked as
    assistant, every message's content joined. Multimodal content parts contribute
    their text parts.

    >>> completion_text([{"role": "assistant", "content": "4"}])
    '4'
    >>> completion_text([{"role": "assistant", "content": "", "tool_calls": []},
    ...                  {"role": "tool", "content": "4"},
    ...                  {"role": "assistant", "content": "It is 4."}])
    'It is 4.'
    """
    if isinstance(completion, str):
        return completion
    if completion is None:
        return ""
    if isinstance(completion, Mapping):
        return _content_text(completion.get("content", ""))
    if isinstance(completion, list | tuple):
        messages = [m for m in completion if isinstance(m, Mapping)]
        if len(messages) != len(completion):
            return "".join(str(part) for part in completion)
        assistant = [m for m in messages if m.get("role") == "assistant"]
        if assistant:
            return _content_text(assistant[-1].get("content", ""))
        return "\n".join(_content_text(m.get("content", "")) for m in messages)
    return str(completion)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping):
                if part.get("type", "text") == "text":
                    texts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                texts.append(part)
        return "".join(texts)
    return "" if content is None else str(content)


@dataclass(slots=True)
class Sample:
    """One thing to score: a completion of a prompt, its reference and dataset metadata.

    ``text`` is the completion's text (see :func:`completion_text`), computed once, and
    ``size`` its length (the engine's size guard reads it without touching the text).
    ``group`` identifies the prompt the completion answers (a trainer's prompt id, a
    ``group`` column); per-group rewards and group normalisation see all completions of
    one :func:`group_key`.

    A multi-turn sample's completion is its chat messages (assistant ``tool_calls``, tool
    results); the ``tools`` offered, the ``finish_reason`` and a ``truncated`` flag are
    metadata columns; :meth:`rewardkit.trajectory.Trajectory.of` reads them all.
    """

    prompt: Any = ""
    completion: Any = ""
    reference: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    text: str = field(default="", init=False, compare=False)
    group: Any = field(default=None, compare=False)
    size: int = field(default=0, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.text = completion_text(self.completion)
        completion = self.completion
        self.size = len(self.text) if isinstance(completion, str) else _messages_size(completion)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Sample:
        """Build a sample from a dataset row: ``prompt``, ``completion``, ``reference``,
        ``group`` (see :func:`group_key`); every other key goes to ``metadata``."""
        metadata = {k: v for k, v in row.items() if k not in _SAMPLE_KEYS}
        if isinstance(row.get("metadata"), Mapping):
            metadata.update(row["metadata"])
        return cls(
            prompt=row.get("prompt", ""),
            completion=row.get("completion", ""),
            reference=row.get("reference"),
            metadata=metadata,
            group=row.get("group"),
        )


def _messages_size(completion: Any) -> int:
    """The length of everything a chat completion holds, every turn's text and every tool
    call's arguments, not only the scored final answer: the size guard bounds what the
    trajectory rewards parse too."""
    if not isinstance(completion, list | tuple):
        return len(completion_text(completion))
    size = 0
    for message in completion:
        if not isinstance(message, Mapping):
            size += len(str(message))
            continue
        size += len(_content_text(message.get("content", "")))
        calls = message.get("tool_calls")
        if not calls:
            continue
        for call in calls if isinstance(calls, list | tuple) else [calls]:
            function = call.get("function") if isinstance(call, Mapping) else None
            args = function.get("arguments") if isinstance(function, Mapping) else call
            size += len(args) if isinstance(args, str) else len(str(args))
    return size


_SAMPLE_KEYS = frozenset({"prompt", "completion", "reference", "metadata", "group"})


def group_key(sample: Sample) -> Hashable:
    """The GRPO group a sample belongs to: the one definition, used by scoring (group
    rewards, ``normalize_then_sum``, ``rewardkit score``'s batching) and by the report.

    An explicit group wins: ``Sample.group``, which a trainer sets to its prompt id and
    :meth:`Sample.from_dict` reads from a ``group`` column. Without one, the samples of
    one prompt form a group, within their training step when the row records one (a
    ``step`` column, as ``rewardkit train`` writes): the same prompt at two steps is two
    groups. A trainer that sets no group (TRL) merges a prompt drawn twice in one step
    into one group.

    >>> group_key(Sample.from_dict({"prompt": "2+2?", "completion": "4", "group": 7}))
    7
    >>> group_key(Sample.from_dict({"prompt": "2+2?", "completion": "4", "step": 3}))
    (3, '2+2?')
    """
    group = sample.group
    if group is not None:
        return _hashable(group)
    prompt = sample.prompt
    key: Hashable = prompt if isinstance(prompt, str) else _Prompt(_hashable(prompt))
    step = sample.metadata.get("step") if sample.metadata else None
    if step is None:
        return key
    return (_hashable(step), key)


class _Prompt:
    """The key of a prompt that is not a string (a chat's messages): equal to the key of
    an equal prompt only, never to a string (a string prompt that spells a chat's JSON
    text is its own group) nor to an explicit ``group`` value."""

    __slots__ = ("value",)

    def __init__(self, value: Hashable) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Prompt) and self.value == other.value

    def __hash__(self) -> int:
        return hash((_Prompt, self.value))

    def __repr__(self) -> str:
        return f"prompt({self.value!r})"


class _Unhashable:
    """The key of a group value that is neither JSON nor hashable: its type and text,
    equal to no string, number or tuple."""

    __slots__ = ("kind", "text")

    def __init__(self, value: Any) -> None:
        self.kind, self.text = type(value).__name__, str(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable) and (self.kind, self.text) == (other.kind, other.text)

    def __hash__(self) -> int:
        return hash((_Unhashable, self.kind, self.text))


class _NaN:
    """The key of a NaN group value: NaN is not equal to itself, so without it each row
    given the group NaN was a group of its own in memory (one in the file's index)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return hash(_NaN)

    def __repr__(self) -> str:
        return "nan"


_NAN = _NaN()


def _hashable(value: Any) -> Hashable:
    """``value`` as a hashable key that equals another's exactly when the values are
    equal: a JSON list is the tuple of its items (a list group ``[1]`` is not the string
    group ``"[1]"``), a mapping the frozenset of its items."""
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, Mapping):
        return frozenset((_hashable(k), _hashable(v)) for k, v in value.items())
    if isinstance(value, set | frozenset):
        return frozenset(_hashable(v) for v in value)
    if isinstance(value, float) and value != value:
        return _NAN
    try:
        hash(value)
    except TypeError:
        return _Unhashable(value)
    return value


def group_key_text(key: Hashable) -> str:
    """A :func:`group_key` value as text, for an on-disk group index or a shard boundary:
    two keys give the same text exactly when they are one group (``==``): 1, 1.0 and
    True give one text, 7 and "7" two, the list group ``[1]`` and the string ``"[1]"``
    two, a chat prompt and the string of its JSON text two.

    >>> group_key_text(1) == group_key_text(1.0) == group_key_text(True)
    True
    >>> group_key_text(7) == group_key_text("7")
    False
    """
    return json.dumps(_tagged(key), ensure_ascii=False, separators=(",", ":"))


def _tagged(key: Any) -> Any:
    if isinstance(key, str):
        return key  # a bare JSON string: every other kind below is a list
    if isinstance(key, bool | int):
        return ["n", int(key)]
    if isinstance(key, float):
        return ["n", int(key)] if key.is_integer() else ["n", repr(key)]
    if isinstance(key, _NaN):
        return ["n", "nan"]  # the text a float NaN had: one group, as before on disk
    if key is None:
        return ["z"]
    if isinstance(key, tuple):
        return ["t", [_tagged(k) for k in key]]
    if isinstance(key, frozenset):
        items = [_tagged(k) for k in key]
        return ["m", sorted(items, key=repr)]  # repr: one text per item, cheaper than JSON
    if isinstance(key, _Prompt):
        return ["p", _tagged(key.value)]
    if isinstance(key, _Unhashable):
        return ["o", key.kind, key.text]
    return ["o", type(key).__name__, str(key)]


def group_members(keys: Iterable[Hashable]) -> list[list[int]]:
    """The positions of each group among ``keys`` (:func:`group_key` values), in
    first-seen order: the one rule that says which rows are one group, used by scoring
    (:func:`rewardkit.reward_set.group_indices`) and by the trainer adapters. Keys are
    compared as Python values, so 1, 1.0 and True are one group.

    >>> group_members([7, "a", 7.0, "a", (3, "q")])
    [[0, 2], [1, 3], [4]]
    """
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        members.setdefault(key, []).append(i)
    return list(members.values())


def coerce_value(value: Any) -> Score:
    """Turn what a reward returned into a Score, refusing what is not a finite number."""
    if type(value) is float:
        if -MAX_ABS_VALUE <= value <= MAX_ABS_VALUE:
            return Score(value)
        return _out_of_range(value)
    if isinstance(value, Score):
        if value.status is Status.OK:
            v = value.value
            if v is None or isinstance(v, bool) or not isinstance(v, int | float):
                return Score.error(f"ok score with value {v!r}")
            if not -MAX_ABS_VALUE <= v <= MAX_ABS_VALUE:
                return _out_of_range(v)
        reason = value.reason
        details = value.details
        long_reason = isinstance(reason, str) and len(reason) > MAX_REASON_CHARS
        long_details = (details is not None
                        and _json_size(details, MAX_DETAILS_CHARS) > MAX_DETAILS_CHARS)
        if long_reason or long_details:
            if long_reason:
                cut = len(reason) - MAX_REASON_CHARS
                reason = f"{reason[:MAX_REASON_CHARS]}... ({cut:,} characters cut)"
            return Score(value.value, value.status, reason,
                         _cut_details(details) if long_details else details)
        return value
    if value is None:
        return Score.skip("reward returned None")
    if isinstance(value, bool | int):
        if -MAX_ABS_VALUE <= value <= MAX_ABS_VALUE:
            return Score(float(value))
        return _out_of_range(value)
    if isinstance(value, float):  # float subclasses, numpy floats
        return coerce_value(float(value))
    try:
        import numbers

        if isinstance(value, numbers.Real):
            return coerce_value(float(value))
    except Exception:  # pragma: no cover - defensive
        pass
    return Score.error(f"reward returned {type(value).__name__}, expected a number")


def _out_of_range(value: float) -> Score:
    if isinstance(value, float) and not math.isfinite(value):
        return Score.error(f"reward returned {value!r}")
    try:
        shown = f"{value:.6g}"
    except OverflowError:  # an int past the float range (a grader's 10**400)
        bits = int(value).bit_length()  # str() refuses past 4,300 digits
        shown = f"an integer of about {int(bits * math.log10(2)) + 1:,} digits"
    return Score.error(f"reward returned {shown}, beyond the value bound "
                       f"+-{MAX_ABS_VALUE:g}")


_FIXED_SIZE = {bool: 5, type(None): 4, float: 12}


def _json_size(value: Any, budget: float) -> int:
    """About how many characters ``value`` takes as JSON, counted until the count passes
    ``budget`` (then a number past it is returned): bounded work whatever ``value`` holds.
    Walked without recursion, so nesting of any depth is counted."""
    size = 0
    stack = [value]
    pop, add = stack.pop, stack.append
    fixed = _FIXED_SIZE
    while stack:
        v = pop()
        kind = type(v)
        if kind is str:
            size += len(v) + 2
        elif kind is list or kind is tuple:
            size += len(v) + 2
            if size > budget:
                return size
            for item in v:  # plain items counted here: details' usual lists, quickly
                item_kind = type(item)
                if item_kind is str:
                    size += len(item) + 2
                elif item_kind in fixed:
                    size += fixed[item_kind]
                elif item_kind is list or item_kind is tuple:  # [[id, followed], ...]
                    size += len(item) + 2
                    if size > budget:
                        return size
                    for inner in item:
                        inner_kind = type(inner)
                        if inner_kind is str:
                            size += len(inner) + 2
                        elif inner_kind in fixed:
                            size += fixed[inner_kind]
                        else:
                            add(inner)
                else:
                    add(item)
            if size > budget:
                return size
        elif kind is bool or v is None:
            size += 5
        elif kind is dict:
            size += 4 * len(v) + 2
            if size > budget:
                return size
            for key, item in v.items():
                size += len(key) if type(key) is str else 8
                item_kind = type(item)
                if item_kind is str:
                    size += len(item) + 2
                elif item_kind in fixed:
                    size += fixed[item_kind]
                else:
                    add(item)
        elif kind is float:
            size += 12
        elif kind is int:
            size += v.bit_length() // 3 + 1  # a little more than its digits
        else:
            size += _other_size(v, budget - size)
        if size > budget:
            return size
    return size


def _other_size(value: Any, budget: float) -> int:
    """:func:`_json_size` of what is not a plain JSON value: a subclass of one (a str
    enum, a numpy float), another mapping or sequence, a buffer (its bytes), else its
    text (what the output's ``default=str`` writes)."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, bool | int):
        return int(value).bit_length() // 3 + 1
    if isinstance(value, float):
        return 12
    if isinstance(value, Mapping):
        return _json_size(dict(value.items()), budget)
    if isinstance(value, list | tuple | set | frozenset):
        return _json_size(list(value), budget)
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    try:
        return len(str(value)) + 2
    except Exception:
        return 16


def _cut_details(details: Any) -> dict[Any, Any]:
    """``details`` cut to about :data:`MAX_DETAILS_CHARS`: the smallest entries kept whole,
    the others as the start of their text ending ``... (N characters cut)`` while room is
    left, the rest left out; :data:`DETAILS_CUT` says so."""
    entries = list(details.items()) if isinstance(details, Mapping) else [("details", details)]
    sizes = [_json_size(k, MAX_DETAILS_CHARS) + _json_size(v, MAX_DETAILS_CHARS) + 2
             for k, v in entries]
    room = MAX_DETAILS_CHARS - 1_000  # for the marker
    whole: set[int] = set()
    for i in sorted(range(len(entries)), key=sizes.__getitem__):
        if sizes[i] > room:
            break
        whole.add(i)
        room -= sizes[i]
    shortened, left_out = [], 0
    out: dict[Any, Any] = {}
    rest = len(entries) - len(whole)
    for i, (key, value) in enumerate(entries):
        if i in whole:
            out[key] = value
            continue
        share = max(200, room // max(1, rest))
        if room < 200:
            left_out += 1
            continue
        out[key] = _shortened(value, min(share, room))
        room -= len(out[key]) + len(str(key)) + 6
        shortened.append(repr(key) if len(repr(key)) <= 60 else f"{repr(key)[:60]}...")
        rest -= 1
    total = _json_size(details, float("inf"))
    what = [f"{', '.join(shortened)} shortened"] if shortened else []
    if left_out:
        what.append(f"{left_out:,} more left out")
    out[DETAILS_CUT] = (f"details of about {total:,} characters cut to about "
                        f"{MAX_DETAILS_CHARS:,}: {'; '.join(what)}")
    return out


def _shortened(value: Any, limit: int) -> str:
    """The start of ``value``'s text (a string's own characters, else JSON-like text),
    about ``limit`` characters, ending ``... (N characters cut)``."""
    if isinstance(value, str):
        text, total, about = value[:limit], len(value), ""
    else:
        text, total, about = _text_within(value, limit), _json_size(value, float("inf")), "about "
    written = len(json.dumps(text, ensure_ascii=False))  # quotes and controls escaped
    if written > limit:
        text = text[:len(text) * limit // written]
    return f"{text}... ({about}{max(0, total - len(text)):,} characters cut)"


class _Piece(str):
    """Text of the JSON-like rendering itself (a bracket, a separator), not a value."""


def _text_within(value: Any, limit: int) -> str:
    """The first ``limit`` characters of ``value`` written as JSON-like text, in work
    bounded by ``limit`` (only as many items are looked at as can be written)."""
    parts: list[str] = []
    written = 0
    stack: list[Any] = [value]
    while stack and written < limit:
        v = stack.pop()
        if type(v) is _Piece:
            piece = str(v)
        elif isinstance(v, str):
            piece = json.dumps(v[:limit - written], ensure_ascii=False)
        elif isinstance(v, list | tuple):
            items = list(v[:limit - written])
            stack.append(_Piece("]"))
            for j in range(len(items) - 1, -1, -1):
                stack.append(items[j])
                if j:
                    stack.append(_Piece(", "))
            piece = "["
        elif isinstance(v, Mapping):
            pairs = list(itertools.islice(v.items(), max(0, limit - written)))
            stack.append(_Piece("}"))
            for j in range(len(pairs) - 1, -1, -1):
                key, item = pairs[j]
                stack.append(item)
                stack.append(_Piece(f"{json.dumps(str(key)[:limit])}: "))
                if j:
                    stack.append(_Piece(", "))
            piece = "{"
        elif v is None or isinstance(v, bool | float):
            piece = json.dumps(v)
        elif isinstance(v, int):
            piece = str(v) if v.bit_length() < 1_000 else f"<an integer of {v.bit_length()} bits>"
        else:
            try:
                piece = json.dumps(str(v)[:limit - written], ensure_ascii=False)
            except Exception:
                piece = f"<{type(v).__name__}>"
        parts.append(piece)
        written += len(piece)
    return "".join(parts)[:limit]

