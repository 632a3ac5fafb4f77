"""How both engines of ``rewardkit score`` read a line of samples and write it back.

A line is read by :func:`read_lines` (split at ``\\n`` only: a bare ``\\r`` is part of the
line, as JSON allows; a line over ``limits.max_line_bytes`` is reported, never read
whole) and checked by :func:`parse_line`. What counts as malformed: not valid UTF-8, not
a JSON object, no ``completion`` key, a ``completion`` that is null, a number or
true/false (not text: ``84`` is not scored as ``"84"``; :func:`row_problem`, which parquet
rows get too), the non-standard constants ``NaN`` / ``Infinity``, or nesting deeper than
``MAX_DEPTH``. A scored row is the input row plus ``reward`` and ``components``
(:func:`scored_row`), written by :func:`render` as standard JSON in valid UTF-8.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from typing import IO, Any

from rewardkit.reward_set import SampleScores
from rewardkit.trajectory import TURN_VALUES
from rewardkit.types import Status

#: deepest nesting of a row's JSON (rows deeper are malformed: they break recursion
#: limits and pickling)
MAX_DEPTH = 100


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not standard JSON: {name}")


def _depth(obj: Any, limit: int) -> int:
    """Nesting depth of ``obj``, counted up to ``limit + 1``."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def row_problem(row: Any) -> str:
    """Why ``row`` (a parsed JSONL line or a parquet row) cannot be scored, or "": not an
    object, no ``completion``, or a ``completion`` that is null, a number or true/false
    (not text: ``84`` would be scored as ``"84"``, null as an empty completion)."""
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    if "completion" not in row:
        return "no 'completion' key"
    if row["completion"] is None or isinstance(row["completion"], bool | int | float):
        return (f"'completion' is {json.dumps(row['completion'])}, not text or chat "
                "messages (write it as a string)")
    return ""


def parse_line(raw: bytes, line_no: int) -> tuple[dict[str, Any] | None, str]:
    """(row, "") for a good line, (None, why) for a malformed one, (None, "") if blank."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"invalid UTF-8 at byte {exc.start + 1}; the line would not be " \
                     "written back unchanged"
    if line_no == 1 and text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return None, ""
    try:
        row = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # int()'s digit limit, in our terms
            return None, ("a number too long to read (over "
                          f"{sys.get_int_max_str_digits():,} digits)")
        return None, str(exc)
    except RecursionError:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    why = row_problem(row)
    if why:
        return None, why
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and _depth(row, MAX_DEPTH) > MAX_DEPTH:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    return row, ""


def _lines(fh: IO[bytes], max_bytes: int, first: int = 1
           ) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, byte offset, raw line) split at ``\\n`` only, from where ``fh`` is
    (its line number ``first``, offsets counted from there); the line is None when it is
    longer than ``max_bytes`` (``limits.max_line_bytes``): such a line is read in pieces
    and dropped, so memory is bounded by the cap, never by the longest line."""
    offset = 0
    line_no = first - 1
    while raw := fh.readline(max_bytes + 1):
        line_no += 1
        start = offset
        offset += len(raw)
        if len(raw) <= max_bytes or raw.endswith(b"\n"):
            yield line_no, start, raw
            continue
        while (piece := fh.readline(1 << 20)) and not piece.endswith(b"\n"):
            offset += len(piece)
        offset += len(piece)
        yield line_no, start, None


def _too_long(max_bytes: int) -> str:
    return f"line longer than {max_bytes:,} bytes (limits.max_line_bytes): not read"


def read_lines(fh: IO[bytes], max_bytes: int, first: int = 1
               ) -> Iterator[tuple[int, int, dict[str, Any] | None, str]]:
    """(line number, byte offset, row, why) for each line of ``fh`` from where it is, as
    both engines read them: ``row`` is None for a blank line (``why`` "") and for a
    malformed one or one over ``max_bytes`` (``why`` says what is wrong, for the report)."""
    for line_no, offset, raw in _lines(fh, max_bytes, first):
        row, why = (None, _too_long(max_bytes)) if raw is None else parse_line(raw, line_no)
        yield line_no, offset, row, why


def count_lines(fh: IO[bytes], max_bytes: int) -> int:
    """Lines of ``fh`` that are not blank (an over-long one counts: it is reported)."""
    return sum(1 for _, _, raw in _lines(fh, max_bytes) if raw is None or raw.strip())


def scored_row(row: dict[str, Any], scored: SampleScores) -> dict[str, Any]:
    """``row`` plus ``reward`` (the total, or null) and ``components``
    ({name: {value, status, reason}}, plus an ok score's ``turn_values`` from a per-turn
    reward, which the summary and ``rewardkit report`` read back): the output format of
    both engines."""
    components: dict[str, dict[str, Any]] = {
        name: {"value": s.value, "status": str(s.status), "reason": s.reason}
        for name, s in scored.scores.items()}
    for name, s in scored.scores.items():
        turns = s.details.get(TURN_VALUES) if s.details else None
        if isinstance(turns, list) and s.status is Status.OK:
            components[name][TURN_VALUES] = turns
    return {**row, "reward": scored.total, "components": components}


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


def render(row: dict[str, Any]) -> bytes:
    """One output line: standard JSON (no NaN), valid UTF-8 (lone surrogates escaped)."""
    try:
        text = json.dumps(row, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # a number out of float range in the input (1e400): null
        row = _finite(row)
        text = json.dumps(row, ensure_ascii=False, default=str, allow_nan=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate ("\ud83d") stays a JSON escape
        return json.dumps(row, ensure_ascii=True, default=str,
                          allow_nan=False).encode("ascii") + b"\n"
