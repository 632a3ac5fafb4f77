"""The values rewardkit passes around: what is scored (`Sample`) and the verdict (`Score`)."""

from __future__ import annotations

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
        try:
            hash(group)
        except TypeError:  # a list or mapping from a JSON column
            return json.dumps(group, sort_keys=True, default=str)
        return group
    prompt = sample.prompt
    key = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    step = sample.metadata.get("step") if sample.metadata else None
    if step is None:
        return key
    try:
        hash(step)
    except TypeError:
        step = json.dumps(step, sort_keys=True, default=str)
    return (step, key)


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
                return _out_of_range(float(v))
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
    return Score.error(f"reward returned {value:.6g}, beyond the value bound "
                       f"+-{MAX_ABS_VALUE:g}")
