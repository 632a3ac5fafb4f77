"""Trajectories: a multi-turn, tool-using sample read as turns, tool calls and results.

A :class:`~rewardkit.types.Sample` keeps the conversation as chat messages in the OpenAI
shape: ``prompt`` holds what the policy was given (system, user, earlier turns) and
``completion`` what it produced, assistant messages (``content``, ``tool_calls``) and the
tool results the environment answered with (``role: tool``, ``tool_call_id``). The tool
schemas offered are the ``tools`` column (OpenAI function schemas, JSON Schema
parameters), and ``finish_reason`` / ``truncated`` say how the generation ended.
:meth:`Trajectory.of` reads all of that once, without raising: a bad shape made by the
rollout (an unknown role, a tool result answering no call) is a :attr:`Trajectory.problem`
that a reward turns into status ``error``; a bad call the policy wrote (arguments that
are not JSON, nested past the interpreter's recursion limit, an integer over its 4,300
digits, no name) is that call's :attr:`ToolCall.error`, a wrong answer.

>>> t = Trajectory.of(Sample(completion=[
...     {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
...      "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": "4"},
...     {"role": "assistant", "content": "The sum is 4."}]))
>>> [(c.name, c.arguments, c.result.content) for c in t.calls]
[('add', {'a': 2, 'b': 2}, '4')]
>>> t.final_answer, len(t.turns)
('The sum is 4.', 2)

Per-turn rewards return one value per assistant turn (:func:`turn_score`); a component's
``turns`` setting chooses how they reach the trainer (:func:`reduce_turns`), and its
``on_truncated`` setting what a truncated sample gets (:func:`settle_component`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rewardkit.types import Sample, Score, Status, completion_text

if TYPE_CHECKING:  # typing only: execution imports nothing from here
    from rewardkit.execution import Outcome

#: roles a conversation may hold (``developer`` is OpenAI's newer name for system,
#: ``function`` its older name for a tool result)
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
#: finish reasons that mean the generation was cut off, not finished
TRUNCATED_REASONS = frozenset({"length", "max_tokens", "max_length"})
#: key of :attr:`Score.details` holding a per-turn reward's values, one per assistant turn
TURN_VALUES = "turn_values"
#: metadata key a trainer adapter sets when it had a multi-turn rollout but could not
#: rebuild its messages (the completion stays the final text): why, for the error the
#: trajectory rewards give instead of a generic "the completion is text"
ROLLOUT_PROBLEM = "rollout_problem"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the environment answered to one call: its text, and whether the tool failed
    (``error``) or ran out of time (``timed_out``, also an error)."""

    content: str
    error: bool = False
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the policy made: ``arguments`` parsed from JSON (None with ``error`` set
    when they do not parse or are not an object), the assistant ``turn`` it is in, and the
    environment's ``result`` (None when none came back)."""

    name: str
    arguments: dict[str, Any] | None
    id: str | None = None
    turn: int = 0
    error: str | None = None
    result: ToolResult | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant message of the completion: its text and the calls it made."""

    index: int
    content: str
    calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A sample read as a conversation; build it with :meth:`of`.

    ``tools`` is None when the sample carries no ``tools`` column (a backend that does not
    pass it), ``finish_reason`` and ``truncated`` None when unknown: a reward that needs
    them says status error instead of guessing.
    """

    turns: tuple[Turn, ...]
    tools: tuple[Mapping[str, Any], ...] | None
    finish_reason: str | None
    truncated: bool | None
    final_answer: str
    problem: str | None = None

    @property
    def calls(self) -> list[ToolCall]:
        """Every call of every turn, in the order made."""
        return [call for turn in self.turns for call in turn.calls]

    def tool_schema(self, name: str) -> Mapping[str, Any] | None:
        """The offered function schema named ``name`` (its ``function`` part), or None."""
        for tool in self.tools or ():
            function = _function_part(tool)
            if function.get("name") == name:
                return function
        return None

    @classmethod
    def of(cls, sample: Sample) -> Trajectory:
        """Read ``sample`` as a trajectory; never raises (see :attr:`problem`)."""
        tools, tools_problem = _tools_of(sample.metadata.get("tools"))
        finish_reason = _finish_reason(sample)
        truncated = sample_truncated(sample)
        messages = sample.completion
        if isinstance(messages, Mapping):
            messages = [messages]
        if not isinstance(messages, list | tuple):  # a plain-text completion: one turn
            return cls((Turn(0, sample.text),), tools, finish_reason, truncated, sample.text,
                       tools_problem)
        turns: list[Turn] = []
        pending: list[dict[str, Any]] = []  # every call's fields; a result is added
        problem = tools_problem
        built: list[tuple[int, str, list[dict[str, Any]]]] = []
        for position, message in enumerate(messages):
            if not isinstance(message, Mapping):
                problem = problem or f"message {position} is {type(message).__name__}, not a " \
                    "mapping with role and content"
                continue
            role = message.get("role")
            if role not in ROLES:
                problem = problem or f"message {position} has unknown role {role!r} " \
                    f"(expected one of {', '.join(sorted(ROLES))})"
                continue
            if role == "assistant":
                calls = [_parse_call(raw, len(built)) for raw in _raw_calls(message)]
                built.append((len(built), _text(message.get("content")), calls))
                pending.extend(calls)
            elif role in ("tool", "function"):
                found = _answered(pending, message)
                if found is None:
                    problem = problem or f"message {position} is a tool result " \
                        f"(tool_call_id {message.get('tool_call_id')!r}) that answers no call"
                    continue
                found["result"] = _result_of(message)
        for index, content, calls in built:
            turns.append(Turn(index, content,
                              tuple(ToolCall(**call) for call in calls)))
        return cls(tuple(turns), tools, finish_reason, truncated, sample.text, problem)


def render_messages(messages: Any) -> str:
    """A conversation as text for people (the report's sample view): one line per
    message, ``role:`` then its text, each tool call as ``-> name(arguments)`` and each
    tool result as ``<- [call id] text``; "" for a plain-text completion.

    >>> print(render_messages([{"role": "assistant", "content": "", "tool_calls": [
    ...     {"id": "c1", "function": {"name": "add", "arguments": '{"a": 2}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "4"},
    ...     {"role": "assistant", "content": "4"}]))
    assistant: -> add({"a": 2})
    tool: <- [c1] 4
    assistant: 4
    """
    if not isinstance(messages, list | tuple):
        return ""
    lines = []
    for message in messages:
        if not isinstance(message, Mapping):
            lines.append(f"?: {message!r}")
            continue
        role = str(message.get("role", "?"))
        parts = [_text(message.get("content"))] if message.get("content") else []
        for raw in _raw_calls(message) if role == "assistant" else ():
            function = raw.get("function") if isinstance(raw, Mapping) else None
            function = function if isinstance(function, Mapping) else raw
            if isinstance(function, Mapping):
                args = function.get("arguments", {})
                text = args if isinstance(args, str) else json.dumps(args, default=str)
                parts.append(f"-> {function.get('name', '?')}({text})")
            else:
                parts.append(f"-> {raw!r}")
        if role in ("tool", "function"):
            result = _result_of(message)
            mark = " (timeout)" if result.timed_out else " (error)" if result.error else ""
            parts = [f"<- [{message.get('tool_call_id') or message.get('name') or '?'}]"
                     f"{mark} {result.content}"]
        lines.append(f"{role}: " + "\n    ".join(parts))
    return "\n".join(lines)


def sample_truncated(sample: Sample) -> bool | None:
    """Whether the generation was cut off: the ``truncated`` column when given, else a
    ``finish_reason`` of ``length``; None when the sample says neither."""
    flag = sample.metadata.get("truncated")
    if isinstance(flag, bool):
        return flag
    reason = _finish_reason(sample)
    if reason is None:
        return None
    return reason in TRUNCATED_REASONS


def rollout_end(messages: Any, cut: bool, tools_run: bool = True) -> dict[str, Any]:
    """How a multi-turn rollout ended, by the one rule every trainer adapter applies to
    its backend's own signal: ``{"finish_reason": ..., "truncated": ...}``.

    ``cut`` is the backend's word that its token budget stopped the rollout (the last
    generation hit the length limit, or a tool result was dropped or left unanswered for
    want of room); ``tools_run`` whether the rollout had tools to run the calls it made
    (False: a call nothing would answer is the policy's last word).

    - ``length``, truncated: ``cut``;
    - ``tool_calls``, truncated: the last message is an assistant turn whose calls were
      never run (a turn or tool-round limit stopped the rollout), or a tool result the
      policy never answered: the rollout was cut before its answer (``tools_run`` False:
      a call nothing would answer, not truncated);
    - ``stop``, not truncated: the last message is an assistant turn that ended on its
      own and asks for nothing.

    >>> call = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}
    >>> rollout_end([call, {"role": "tool", "content": "4"}, call], cut=False)
    {'finish_reason': 'tool_calls', 'truncated': True}
    """
    items = list(messages) if isinstance(messages, list | tuple) else []
    last = items[-1] if items and isinstance(items[-1], Mapping) else {}
    if cut:
        return {"finish_reason": "length", "truncated": True}
    if last.get("role") in ("tool", "function"):
        return {"finish_reason": "tool_calls", "truncated": True}
    if last.get("role") == "assistant" and last.get("tool_calls"):
        return {"finish_reason": "tool_calls", "truncated": tools_run}
    return {"finish_reason": "stop", "truncated": False}


def _finish_reason(sample: Sample) -> str | None:
    reason = sample.metadata.get("finish_reason")
    return reason.strip().lower() if isinstance(reason, str) and reason.strip() else None


def _tools_of(value: Any) -> tuple[tuple[Mapping[str, Any], ...] | None, str | None]:
    if value is None:
        return None, None
    if isinstance(value, str):  # a JSON-encoded column (parquet, CSV)
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None, "the tools column is text that is not JSON (or nested too deep)"
    if not isinstance(value, list | tuple) or not all(isinstance(t, Mapping) for t in value):
        return None, "the tools column is not a list of function schemas"
    for i, tool in enumerate(value):
        if not isinstance(_function_part(tool).get("name"), str):
            return None, f"tools[{i}] has no function name"
    return tuple(value), None


def _function_part(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """``{"type": "function", "function": {...}}`` and a bare ``{name, parameters}``."""
    inner = tool.get("function")
    return inner if isinstance(inner, Mapping) else tool


def _text(content: Any) -> str:
    return completion_text({"content": content})


def _raw_calls(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls")
    if calls is None:
        legacy = message.get("function_call")  # OpenAI's older single-call shape
        return [legacy] if isinstance(legacy, Mapping) else []
    return list(calls) if isinstance(calls, list | tuple) else [calls]


def _parse_call(raw: Any, turn: int) -> dict[str, Any]:
    """A call's fields; what the policy got wrong goes to ``error``."""
    if not isinstance(raw, Mapping):
        return {"name": "", "arguments": None, "turn": turn,
                "error": f"a tool call that is {type(raw).__name__}, not an object"}
    inner = raw.get("function")
    function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else raw
    name = function.get("name")
    call_id = raw.get("id")
    fields: dict[str, Any] = {"name": name if isinstance(name, str) else "",
                              "arguments": None, "turn": turn,
                              "id": call_id if isinstance(call_id, str) else None}
    if not isinstance(name, str) or not name:
        fields["error"] = "a tool call without a function name"
        return fields
    arguments = function.get("arguments", function.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as exc:
            fields["error"] = f"{name}: arguments are not JSON ({_json_problem(exc)})"
            return fields
    if not isinstance(arguments, Mapping):
        fields["error"] = f"{name}: arguments are {type(arguments).__name__}, not an object"
        return fields
    fields["arguments"] = dict(arguments)
    return fields


def _json_problem(exc: ValueError | RecursionError) -> str:
    """Why ``json.loads`` refused text, in words: its message, or what Python's limits
    refused (nesting past the recursion limit, an integer over 4,300 digits)."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deep to read"
    return str(exc).split(";")[0][:120]


def _answered(pending: list[dict[str, Any]], message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pending call a tool message answers: by ``tool_call_id``, else (backends that
    send no ids) the first unanswered call of that ``name``, else the first unanswered."""
    call_id = message.get("tool_call_id")
    open_calls = [c for c in pending if "result" not in c]
    if call_id is not None:
        return next((c for c in open_calls if c.get("id") == call_id), None)
    name = message.get("name")
    by_name = [c for c in open_calls if c["name"] == name] if name else []
    chosen = by_name or open_calls
    return chosen[0] if chosen else None


def _result_of(message: Mapping[str, Any]) -> ToolResult:
    """A tool message as a result. It failed when it says so: ``status`` error/timeout,
    ``is_error``/``isError`` (MCP), ``timed_out``, or content that is a JSON object whose
    only key is ``error`` (what TRL's tool loop returns for a tool that raised)."""
    content = _text(message.get("content"))
    status = str(message.get("status", "")).lower()
    timed_out = status == "timeout" or message.get("timed_out") is True
    error = (timed_out or status == "error" or message.get("is_error") is True
             or message.get("isError") is True)
    if not error and content.lstrip().startswith("{"):
        try:
            parsed = json.loads(content)
        except (ValueError, RecursionError):  # not JSON, or beyond what Python reads
            parsed = None
        error = isinstance(parsed, dict) and list(parsed) == ["error"]
    return ToolResult(content, error, timed_out)


def turn_score(values: Sequence[float], reason: str = "", **details: Any) -> Score:
    """A per-turn reward's verdict: one value per assistant turn, kept in the details
    under ``turn_values``; its value is the last turn's until the component's ``turns``
    setting reduces them (:func:`reduce_turns`). No turns is an error, not a 0."""
    vals = [float(v) for v in values]
    if not vals:
        return Score.error("no assistant turn to score")
    if not all(math.isfinite(v) for v in vals):
        return Score.error(f"a turn value is not finite: {vals}")
    return Score(vals[-1], Status.OK, reason, {**details, TURN_VALUES: vals})


def reduce_turns(values: Sequence[float], how: str = "last", gamma: float = 1.0) -> float:
    """One value from per-turn values: ``last``, ``sum``, ``mean``, or ``discounted`` (the
    return from the first turn, ``sum(gamma**t * values[t])``).

    >>> reduce_turns([1.0, 0.0, 1.0], "discounted", 0.5)
    1.25
    """
    if how == "last":
        return float(values[-1])
    if how == "sum":
        return math.fsum(values)
    if how == "mean":
        return math.fsum(values) / len(values)
    if how == "discounted":
        return math.fsum(v * gamma ** t for t, v in enumerate(values))
    raise ValueError(f"unknown turns reduction {how!r}")


def _turn_values_problem(vals: Any, turns: int) -> str | None:
    """Why a reward's per-turn values break the contract (one finite number per assistant
    turn of the sample), or None: a wrong count is the reward's error, not a value."""
    if not isinstance(vals, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in vals):
        return f"{TURN_VALUES} must be a list of finite numbers, got {vals!r:.80}"
    if len(vals) != turns:
        return f"{len(vals)} {TURN_VALUES} for {turns} assistant turns"
    return None


#: the ``details`` key marking a score masked by ``on_truncated: mask``: the sample's
#: total is null whatever ``on_error`` says
MASKED = "masked"


def settle_component(out: Outcome, batch: Sequence[Sample], on_truncated: str = "keep",
                     turns: str = "last", gamma: float = 1.0) -> None:
    """Apply a component's trajectory settings to its scores, in place: per-turn values
    reduced as ``turns``/``gamma`` say, then truncated samples kept, zeroed or masked as
    ``on_truncated`` says (a sample that says neither finish_reason nor truncated gets
    status error under zero/mask: not knowing is not "not truncated")."""
    # Only the scores with per-turn values are listed (put() may drop entries from
    # out.scores): a list of every score held a batch's worth of tuples at once, and set
    # off the garbage collector's older generations in the middle of a training step.
    per_turn = [(i, score, score.details[TURN_VALUES]) for i, score in out.scores.items()
                if score.status == Status.OK and score.details
                and score.details.get(TURN_VALUES) is not None]
    for i, score, vals in per_turn:
        problem = _turn_values_problem(vals, len(Trajectory.of(batch[i]).turns))
        if problem:
            out.put(i, Score.error(problem))
        else:
            value = reduce_turns(vals, turns, gamma)
            out.put(i, Score(value, Status.OK, score.reason, score.details))
    if on_truncated == "keep":
        return
    for i, sample in enumerate(batch):
        current = out.scores.get(i)
        if current is not None and current.status == Status.SKIPPED:
            continue  # not routed here, or the reward does not apply
        cut = sample_truncated(sample)
        if cut is None:
            out.put(i, Score.error(f"on_truncated: {on_truncated} needs the sample's "
                                   "finish_reason or truncated column; it has neither"))
        elif cut and on_truncated == "zero":
            out.put(i, Score(0.0, Status.OK, "truncated (on_truncated: zero)",
                             {"was": out.values[i]}))
        elif cut:
            out.put(i, Score(None, Status.SKIPPED, "truncated (on_truncated: mask)",
                             {MASKED: True, "was": out.values[i]}))
