"""The tool-use rewards: each reads the sample as a :class:`rewardkit.trajectory.Trajectory`.

=====================  =============================================================
``tool_call_valid``    every call parses and fits the offered schema (name, required
                       arguments, types, enums); per turn with ``per_turn: true``
``tool_call_match``    the calls made are the reference calls (BFCL's tolerant rules,
                       parallel calls in any order)
``tool_errors``        share of the calls whose tool answered without an error or a
                       timeout
``tool_efficiency``    calls and assistant turns within a budget
``non_stop_penalty``   a penalty when the generation did not stop by itself
=====================  =============================================================

Shared rules. A trajectory the rollout shaped wrong (an unknown role, a tool result that
answers no call) is status error, as is a sample without what a reward needs (no ``tools``
column for ``tool_call_valid``, no ``finish_reason`` for ``non_stop_penalty``, a completion
that is text rather than messages for every trajectory reward): a backend
that does not pass a field gets a visible error, never a silent 0. What the policy wrote
wrong (arguments that are not JSON, a call of no offered function) is a wrong answer:
status ok, value 0, the reason saying which call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from rewardkit import Params, Reward, Sample, Score
from rewardkit.trajectory import (
    ROLLOUT_PROBLEM,
    TRUNCATED_REASONS,
    ToolCall,
    Trajectory,
    _raw_calls,
    turn_score,
)
from rewardkit_tools.matching import (
    ReferenceCall,
    ReferenceError_,
    assign,
    mismatch,
    parse_reference,
)
from rewardkit_tools.schema import call_problem
from rewardkit_tools.source_values import UndecodableError, schema_language


class _TrajectoryReward(Reward):
    """A reward of the sample's trajectory: :meth:`score` reads it, or gives the shared
    status error (a text completion, a malformed trajectory), and each reward states
    only its own rule in :meth:`score_trajectory`. Not registered itself."""

    def score(self, sample: Sample) -> Score:
        if isinstance(sample.completion, str):
            if sample.metadata.get(ROLLOUT_PROBLEM):
                return Score.error("the backend could not rebuild the rollout's messages: "
                                   f"{sample.metadata[ROLLOUT_PROBLEM]}")
            return Score.error("the completion is text, not chat messages: no tool call can "
                               "be read (a backend that passes only the final text passes no "
                               "trajectory; tool calls are not parsed out of text)")
        t = Trajectory.of(sample)
        if t.problem:
            return Score.error(f"malformed trajectory: {t.problem}")
        return self.score_trajectory(t, sample)

    def score_trajectory(self, t: Trajectory, sample: Sample) -> Score:
        """The reward's value for the well-formed trajectory ``t`` of ``sample``."""
        raise NotImplementedError


class _NotStrictJSON(ValueError):
    """Text Python's json module reads that strict JSON (RFC 8259) does not allow."""


def _no_constant(name: str) -> Any:
    raise _NotStrictJSON(f"{name} is not JSON (JSON has no NaN or Infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotStrictJSON(f"{text} is out of the range of a JSON number")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _NotStrictJSON(f"key {key!r} appears twice in one object (which one a "
                                 "tool reads depends on its parser)")
        seen.add(key)
    return dict(pairs)


def strict_json_problem(arguments: Any) -> str | None:
    """Why a call's ``arguments`` are not strict JSON although Python's ``json`` reads
    them: a ``NaN`` / ``Infinity`` constant, a number out of range (``1e999``), an object
    with a key twice; or, for arguments a backend passed already parsed, a number that
    is not finite. None when they are strict JSON or not JSON at all (the trajectory
    says so already).

    >>> strict_json_problem('{"a": NaN}')
    'NaN is not JSON (JSON has no NaN or Infinity)'
    >>> strict_json_problem('{"a": 1, "a": 2}') is not None, strict_json_problem('{"a": 1}')
    (True, None)
    """
    if isinstance(arguments, str):
        try:
            json.loads(arguments, parse_constant=_no_constant, parse_float=_finite,
                       object_pairs_hook=_unique_keys)
        except _NotStrictJSON as exc:
            return str(exc)
        except (ValueError, RecursionError):  # not JSON at all: the trajectory says so
            return None
        return None
    stack = [arguments]
    while stack:
        value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return f"{value} is not a JSON number"
        if isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return None


def _strict_problems(sample: Sample) -> list[str | None]:
    """Per call, in the order :attr:`Trajectory.calls` lists them, why its arguments
    are not strict JSON (None when they are)."""
    messages = sample.completion
    if isinstance(messages, Mapping):
        messages = [messages]
    found: list[str | None] = []
    for message in messages if isinstance(messages, list | tuple) else ():
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for raw in _raw_calls(message):
            inner = raw.get("function") if isinstance(raw, Mapping) else None
            function = inner if isinstance(inner, Mapping) else raw
            arguments = function.get("arguments", function.get("parameters")) \
                if isinstance(function, Mapping) else None
            found.append(strict_json_problem(arguments))
    return found


def _call_problem(call: ToolCall, t: Trajectory, allow_extra: bool,
                  strict: str | None = None) -> str | None:
    if call.error or call.arguments is None:
        return call.error or f"{call.name}: no arguments"
    if strict:
        return f"{call.name}: arguments are not strict JSON: {strict}"
    function = t.tool_schema(call.name)
    if function is None:
        return f"{call.name} is not an offered tool"
    return call_problem(call.name, call.arguments, function, allow_extra)


class ValidParams(Params):
    """Parameters of tool_call_valid."""

    credit: Literal["all", "fraction"] = Field(
        "all", description="all: 1 when every call is valid, else 0; fraction: the share of "
        "valid calls")
    allow_extra: bool = Field(
        False, description="accept arguments the schema does not name (JSON Schema's "
        "default); function-calling APIs refuse them")
    per_turn: bool = Field(
        False, description="one value per assistant turn: 1 when all its calls are valid; "
        "a turn without calls is 1 when it is the last (the answer), else 0 (turns that "
        "neither call nor answer would dilute an invalid call under turns: mean); the "
        "component's turns setting reduces them")


class ToolCallValid(_TrajectoryReward):
    """The tool calls parse and fit the offered schemas (the ``tools`` column).

    A trajectory without any call is 0 (a validity reward that paid nothing-called would
    pay for not using the tools); status error when the sample has no ``tools`` column.
    Details: ``calls``, ``invalid`` (a reason per invalid call).
    Example: tools ``add(a: integer, b: integer)`` and a call ``add({"a": 2, "b": 2})``
    -> 1.0; ``add({"a": "2"})`` -> 0.0.
    """

    name: ClassVar[str] = "tool_call_valid"
    Params: ClassVar[type[Params]] = ValidParams

    def score_trajectory(self, t: Trajectory, sample: Sample) -> Score:
        params: ValidParams = self.params  # type: ignore[assignment]
        if t.tools is None:
            return Score.error("the sample has no tools column (the offered tool schemas); "
                               "this backend or dataset does not pass it")
        calls = t.calls
        if not calls:
            return Score.ok(0.0, "no tool call", calls=0)
        strict = _strict_problems(sample)
        if len(strict) != len(calls):  # cannot happen: the calls are read in this order
            strict = [None] * len(calls)
        problems = [_call_problem(c, t, params.allow_extra, s)
                    for c, s in zip(calls, strict, strict=True)]
        invalid = [p for p in problems if p]
        if params.per_turn:
            last = len(t.turns) - 1
            bad = {id(c) for c, p in zip(calls, problems, strict=True) if p}
            by_turn = [float(not any(id(c) in bad for c in turn.calls))
                       if turn.calls or turn.index == last else 0.0 for turn in t.turns]
            return turn_score(by_turn, "; ".join(invalid[:3]), calls=len(calls),
                              invalid=invalid)
        good = len(calls) - len(invalid)
        value = good / len(calls) if params.credit == "fraction" else float(not invalid)
        return Score.ok(value, "; ".join(invalid[:3]), calls=len(calls), invalid=invalid)


class MatchParams(Params):
    """Parameters of tool_call_match."""

    calls_column: str | None = Field(
        None, description="metadata column holding the reference calls; default: the "
        "sample's reference (its 'calls' key when it is an object with one)")
    order: Literal["any", "strict"] = Field(
        "any", description="any: parallel calls match in any order (one-to-one); strict: "
        "the n-th call must be the n-th reference call")
    credit: Literal["all", "fraction"] = Field(
        "all", description="all: 1 when the calls are exactly the reference calls; "
        "fraction: matched calls / max(reference calls, calls made), so extra calls cost")
    texts: Literal["bfcl", "spaces", "exact"] = Field(
        "bfcl", description="text arguments compared as BFCL does (no case, spaces or "
        ",./-_*^: names and dates match loosely, but 3*4 equals 3/4), without case and "
        "white space only (expressions, code, paths), or exactly")
    use_schema: bool = Field(
        True, description="take required arguments and types from the offered schemas "
        "(integer-for-number coercion, type checks) when the sample has a tools column")
    unanswered: Literal["counted", "unmatched"] = Field(
        "counted", description="counted: a call matches whether or not a result came back "
        "(offline function calling, BFCL); unmatched: a call no tool result answered "
        "matches nothing (executed rollouts: a right call left unrun, with the answer from "
        "memory beside it, is not paid)")
    language: Literal["auto", "python", "java", "javascript"] = Field(
        "auto", description="how argument values are read: python, as JSON values "
        "(BFCL's Python categories); java / javascript, each value a string of that "
        "language's source read by its declared type, as BFCL's Java and JavaScript "
        "categories (\"3\" for an integer, \"new int[]{1, 2}\" for an Array); auto, "
        "from the offered schemas' type names: python unless they name a Java or "
        "JavaScript type (String, long, ArrayList, Boolean ...), then the language that "
        "has them all (both: read both ways, an error where the readings differ)")


class ToolCallMatch(_TrajectoryReward):
    """The calls made are the reference calls, compared as values by the Berkeley Function
    Calling Leaderboard's tolerant rules (see ``rewardkit_tools.matching``): name,
    required and optional arguments, several allowed values, integer-for-number coercion,
    texts without case and punctuation, parallel calls in any order.

    Every call of the trajectory counts, in every turn: calling every tool, repeating a
    call or adding one after the right call is a mismatch (or costs its share with
    ``credit: fraction``). Status error when the sample has no reference calls, and when
    ``language`` (java, javascript: BFCL's categories whose values are source text) meets
    a declared type BFCL does not decode.
    Details: ``matched``, ``expected``, ``calls``, ``mismatches``.
    Example: reference ``[{"add": {"a": [2], "b": [2]}}]`` and the call
    ``add({"b": 2, "a": 2})`` -> 1.0.
    """

    name: ClassVar[str] = "tool_call_match"
    Params: ClassVar[type[Params]] = MatchParams

    def score_trajectory(self, t: Trajectory, sample: Sample) -> Score:
        params: MatchParams = self.params  # type: ignore[assignment]
        raw = _reference_calls(sample, params.calls_column)
        if raw is None:
            where = f"column {params.calls_column!r}" if params.calls_column else "reference"
            return Score.error(f"the sample has no reference calls ({where})")
        try:
            refs = parse_reference(raw)
        except ReferenceError_ as exc:
            return Score.error(str(exc))
        language = params.language
        if language == "auto":
            names = {r.name for r in refs} | {c.name for c in t.calls}
            offered = [f for n in sorted(names) if (f := self._schema(t, n)) is not None]
            said = schema_language(offered)
            if said == "both":
                return Score.error("the offered schemas' type names are neither all "
                                   "Java's nor all JavaScript's (long with Boolean, dict ...): "
                                   "set the language param")
            if said == "java or javascript":  # String, integer ...: read both ways
                java, javascript = (self._match(t, refs, lang) for lang in
                                    ("java", "javascript"))
                if java.status == javascript.status and java.value == javascript.value:
                    return java
                return Score.error("the offered schemas' type names (String) fit Java and "
                                   "JavaScript, which read these calls differently "
                                   f"({java.value} vs {javascript.value}): set the "
                                   "language param")
            language = said or "python"
        return self._match(t, refs, language)

    def _schema(self, t: Trajectory, name: str) -> Any:
        params: MatchParams = self.params  # type: ignore[assignment]
        return t.tool_schema(name) if params.use_schema and t.tools is not None else None

    def _match(self, t: Trajectory, refs: list[ReferenceCall], language: str) -> Score:
        params: MatchParams = self.params  # type: ignore[assignment]
        calls = t.calls

        def why(c: int, r: int) -> str | None:
            call = calls[c]
            if params.unanswered == "unmatched" and call.result is None:
                return f"{call.name}: no tool result came back (the call was not run)"
            if call.arguments is None:
                return call.error or f"{call.name}: no arguments"
            return mismatch(call.name, call.arguments, refs[r], self._schema(t, refs[r].name),
                            params.texts, language)

        try:
            return self._assigned(calls, refs, why)
        except UndecodableError as error:
            return Score.error(str(error))

    def _assigned(self, calls: list[ToolCall], refs: list[ReferenceCall],
                  why: Callable[[int, int], str | None]) -> Score:
        params: MatchParams = self.params  # type: ignore[assignment]
        if params.order == "strict":
            pairs = {r: r for r in range(min(len(calls), len(refs))) if why(r, r) is None}
        else:
            pairs = assign(len(calls), len(refs), lambda c, r: why(c, r) is None)
        matched = len(pairs)
        mismatches = [why(c, c) if params.order == "strict" and c < len(refs) else
                      next((w for r in range(len(refs)) if (w := why(c, r))), "no reference")
                      for c in range(len(calls)) if c not in pairs.values()][:5]
        if len(calls) != len(refs):
            mismatches.insert(0, f"{len(calls)} calls made, {len(refs)} expected")
        if params.credit == "fraction":
            value = matched / max(len(refs), len(calls)) if refs or calls else 1.0
        else:
            value = float(matched == len(refs) == len(calls))
        return Score.ok(value, "; ".join(m for m in mismatches if m)[:500], matched=matched,
                        expected=len(refs), calls=len(calls), mismatches=mismatches)


def _reference_calls(sample: Sample, column: str | None) -> Any:
    if column:
        return sample.metadata.get(column)
    ref = sample.reference
    if isinstance(ref, dict) and "calls" in ref:
        return ref["calls"]
    return ref


class ErrorParams(Params):
    """Parameters of tool_errors."""

    unanswered: Literal["failed", "ignored"] = Field(
        "failed", description="a call no result came back for (the rollout stopped before "
        "the tool ran): failed, or left out of the count")


class ToolErrors(_TrajectoryReward):
    """The share of calls whose tool answered without an error or a timeout (a result
    with ``status: error|timeout``, ``is_error``, or TRL's ``{"error": ...}`` content).

    Skipped when the trajectory holds no tool result at all (single-turn outputs whose
    calls were never run): nothing to count, and a 1 for no calls would pay for not
    calling. Details: ``errors``, ``timeouts``, ``unanswered``, ``calls``.
    """

    name: ClassVar[str] = "tool_errors"
    Params: ClassVar[type[Params]] = ErrorParams

    def score_trajectory(self, t: Trajectory, sample: Sample) -> Score:
        params: ErrorParams = self.params  # type: ignore[assignment]
        calls = t.calls
        results = [c.result for c in calls]
        if not any(r is not None for r in results):
            return Score.skip("no tool result in the trajectory")
        errors = sum(1 for r in results if r is not None and r.error and not r.timed_out)
        timeouts = sum(1 for r in results if r is not None and r.timed_out)
        unanswered = sum(1 for r in results if r is None)
        counted = len(calls) - (unanswered if params.unanswered == "ignored" else 0)
        failed = errors + timeouts + (unanswered if params.unanswered == "failed" else 0)
        value = (counted - failed) / counted if counted else 0.0
        return Score.ok(value, f"{failed} of {counted} calls failed" if failed else "",
                        errors=errors, timeouts=timeouts, unanswered=unanswered,
                        calls=len(calls))


class EfficiencyParams(Params):
    """Parameters of tool_efficiency."""

    max_calls: int = Field(3, ge=1, description="calls within which the value is 1")
    max_turns: int = Field(4, ge=1, description="assistant turns within which the value is 1")
    min_calls: int = Field(
        1, ge=0, description="fewer calls than this is 0 (an agent that never calls a tool "
        "is not efficient, it skipped the task)")
    repeat_counts: float = Field(
        2.0, ge=1.0, description="a call identical to an earlier one (same name and "
        "arguments) counts this many times")


class ToolEfficiency(_TrajectoryReward):
    """Calls and turns used, against a budget: 1 within it, ``budget / used`` beyond
    (the product of the call and the turn factors). Meant as a small shaping weight next
    to correctness: on its own it pays any cheap trajectory. Details: ``calls``,
    ``turns``, ``repeats``.
    """

    name: ClassVar[str] = "tool_efficiency"
    Params: ClassVar[type[Params]] = EfficiencyParams

    def score_trajectory(self, t: Trajectory, sample: Sample) -> Score:
        params: EfficiencyParams = self.params  # type: ignore[assignment]
        calls = t.calls
        if len(calls) < params.min_calls:
            return Score.ok(0.0, f"{len(calls)} calls, fewer than {params.min_calls}",
                            calls=len(calls), turns=len(t.turns), repeats=0)
        seen: set[str] = set()
        repeats = 0
        for call in calls:
            key = json.dumps([call.name, call.arguments], sort_keys=True, default=str)
            repeats += key in seen
            seen.add(key)
        used = len(calls) + repeats * (params.repeat_counts - 1.0)
        value = min(1.0, params.max_calls / used) if used else 1.0
        value *= min(1.0, params.max_turns / max(1, len(t.turns)))
        return Score.ok(value, calls=len(calls), turns=len(t.turns), repeats=repeats)


class NonStopParams(Params):
    """Parameters of non_stop_penalty."""

    penalty: float = Field(-1.0, ge=-1e6, le=1e6, description="value when the generation "
                           "did not stop by itself")
    stop_reasons: Sequence[str] = Field(
        ("stop", "eos", "end_turn", "stop_sequence", "tool_calls"),
        description="finish reasons that count as stopping (lower case)")


class NonStopPenalty(Reward):
    """``penalty`` when the generation did not end by itself, 0 when it did (open-instruct's
    non_stop_penalty as a component: add it with weight 1, or use ``on_truncated`` on the
    other components for SkyRL's zero-on-non-stop).

    Reads ``truncated`` (a flag column) or ``finish_reason``; status error when the sample
    has neither, so a backend that does not pass them is visible, not a silent 0.
    Example: ``finish_reason: length`` -> -1.0; ``stop`` -> 0.0.
    """

    name: ClassVar[str] = "non_stop_penalty"
    Params: ClassVar[type[Params]] = NonStopParams

    def score(self, sample: Sample) -> Score:
        params: NonStopParams = self.params  # type: ignore[assignment]
        flag = sample.metadata.get("truncated")
        reason = sample.metadata.get("finish_reason")
        if isinstance(flag, bool) and flag:
            return Score.ok(params.penalty, "truncated")
        if isinstance(reason, str) and reason.strip():
            reason = reason.strip().lower()
            if reason in TRUNCATED_REASONS or reason not in params.stop_reasons:
                return Score.ok(params.penalty, f"finish_reason {reason}")
            return Score.ok(0.0)
        if isinstance(flag, bool):
            return Score.ok(0.0)
        return Score.error("the sample has no finish_reason or truncated column; this "
                           "backend or dataset does not pass it")
