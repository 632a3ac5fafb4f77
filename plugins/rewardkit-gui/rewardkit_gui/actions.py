"""Action lists of a GUI agent: reading them from model output, and replaying them.

An action list is what a navigation model answers, in any of the forms models and
datasets use::

    {'action': ['UP', 'UP', 'LEFT']}          # one dict, a list of actions
    [{'action': 'UP'}, {'action': 'LEFT'}]     # a list of one-action dicts
    ["up", "left"]                             # a plain list

JSON or Python literal syntax (single quotes), any case, with text around it. Every
action is a key of the remote (:data:`ACTIONS`): a list holding anything else (an
unknown name, ``null``, a number) is no action list, for either reward, because the
environment could not execute it. A mapping with both an ``action`` and an ``actions``
key that hold different actions is none either (a hedge between two readers).

>>> parse_actions("Sure! {'action': ['up', 'Left']} done")
('UP', 'LEFT')
>>> replay(("UP", "UP", "LEFT"))
(-1, -2)
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator, Mapping
from typing import Any

#: moves on the screen grid as (dx, dy); y grows downwards, as on a screen
MOVES: dict[str, tuple[int, int]] = {
    "UP": (0, -1),
    "DOWN": (0, 1),
    "LEFT": (-1, 0),
    "RIGHT": (1, 0),
}

#: the remote's keys: the moves, and the keys that do not move the focus
ACTIONS: frozenset[str] = frozenset(MOVES) | {"OK", "SELECT", "ENTER", "BACK", "HOME", "MENU"}

_ACTION_KEYS = ("action", "actions")
# A bracketed span longer than this is not an action list anyone meant to write; it is
# skipped so spam cannot make parsing slow.
_MAX_SPAN_CHARS = 200_000
# How many bracketed spans of one text are tried before giving up.
_MAX_TRIES = 32

Actions = tuple[str, ...]


def parse_actions(value: Any) -> Actions | None:
    """The action names in ``value``, upper-cased, or None when it holds no action list.

    ``value`` is a string (model output or a serialised reference) or an already
    decoded JSON value (a reference read from a dataset). In a string, the first
    bracketed span (``[...]`` or ``{...}``) that decodes to an action list wins, so text
    around the list is ignored. An empty list is a valid, empty action list ``()``.
    Every item must name one of :data:`ACTIONS`, else the list is none (None): this is
    the one definition of a valid action, for ``gui_navigation`` and ``gui_format``.
    """
    if isinstance(value, str):
        return _parse_text(value)
    readings = _readings(value)
    return readings.pop() if len(readings) == 1 else None


def parse_literal(text: str) -> Any:
    """Decode ``text`` as JSON, or as a Python literal (single quotes), or raise ValueError.

    Only literals are evaluated (``ast.literal_eval``), never code.
    """
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ValueError(f"not JSON or a Python literal: {exc}") from None


def replay(actions: Actions) -> tuple[int, int]:
    """Where ``actions`` lead from (0, 0): up is y-1, down y+1, left x-1, right x+1.

    Names other than UP/DOWN/LEFT/RIGHT (e.g. ``OK``) do not move.
    """
    x = y = 0
    for name in actions:
        dx, dy = MOVES.get(name, (0, 0))
        x += dx
        y += dy
    return x, y


def manhattan(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Grid distance between two points."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def find_action_lists(text: str) -> list[Actions]:
    """Every action list written in ``text``, in order: the outermost bracketed spans
    that decode to one (a list inside a list that is one is not counted again).

    At most ``_MAX_TRIES`` spans are decoded, so spam cannot make this slow. Two
    different lists in one answer are a hedge, which ``gui_navigation`` does not pay; a
    mapping whose ``action`` and ``actions`` keys disagree gives both readings (an
    unreadable one as ``()``), a hedge too.

    >>> find_action_lists("['UP'] or ['DOWN']")
    [('UP',), ('DOWN',)]
    >>> find_action_lists("{'action': ['UP', 'LEFT']}")
    [('UP', 'LEFT')]
    """
    found: list[Actions] = []
    covered_to = tries = 0
    for start, end in _bracket_spans(text):
        if start < covered_to or end - start > _MAX_SPAN_CHARS:
            continue
        if tries >= _MAX_TRIES:
            break
        tries += 1
        span = text[start:end]
        try:
            decoded = parse_literal(span)
        except ValueError:
            # model output often says 'UP' where JSON wants "UP"; try that cheaply
            try:
                decoded = json.loads(span.replace("'", '"'))
            except (json.JSONDecodeError, RecursionError):
                continue
        readings = _readings(decoded)
        if len(readings) > 1:  # both keys, different actions: a hedge, whichever is valid
            found += sorted(r or () for r in readings)
            covered_to = end
        elif (actions := readings.pop()) is not None:
            found.append(actions)
            covered_to = end
    return found


def _parse_text(text: str) -> Actions | None:
    lists = find_action_lists(text)
    return lists[0] if lists else None


def _bracket_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every balanced ``[...]`` / ``{...}`` span, by start position.

    One pass with a stack, so unbalanced input (``[[[[`` x 1 MB) stays linear. A closer
    that does not match the innermost opener resets the scan.
    """
    pairs = {"]": "[", "}": "{"}
    stack: list[tuple[str, int]] = []
    spans: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        if ch in "[{":
            stack.append((ch, i))
        elif ch in pairs:
            if stack and stack[-1][0] == pairs[ch]:
                _, start = stack.pop()
                spans.append((start, i + 1))
            else:
                stack.clear()
    spans.sort()
    return iter(spans)


def _readings(value: Any) -> set[Actions | None]:
    """What a decoded value reads as, by a reader of the first ``action`` / ``actions``
    key of each mapping and by one of the last: two readings when the keys disagree
    (``{'action': ['UP'], 'actions': ['DOWN']}``, a hedge between two readers)."""
    return {_actions_of(value, 0), _actions_of(value, -1)}


def _actions_of(value: Any, pick: int = 0) -> Actions | None:
    if isinstance(value, Mapping):
        inner = _action_value(value, pick)
        if isinstance(inner, str):
            return _names([inner])
        if isinstance(inner, list | tuple):
            return _list_actions(inner, pick)
        return None
    if isinstance(value, list | tuple):
        return _list_actions(value, pick)
    return None


def _list_actions(items: list[Any] | tuple[Any, ...], pick: int = 0) -> Actions | None:
    names: list[str] = []
    for item in items:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, Mapping):
            inner = _action_value(item, pick)
            if isinstance(inner, str):
                names.append(inner)
            elif isinstance(inner, list | tuple) and all(isinstance(n, str) for n in inner):
                names.extend(inner)
            else:
                return None
        else:
            return None
    return _names(names)


def _action_value(mapping: Mapping[Any, Any], pick: int = 0) -> Any:
    """The value under the mapping's ``action`` / ``actions`` key (``pick`` 0: the first
    such key, -1: the last), or None when it has none."""
    found = [inner for key, inner in mapping.items()
             if isinstance(key, str) and key.strip().lower() in _ACTION_KEYS]
    return found[pick] if found else None


def _names(raw: list[str]) -> Actions | None:
    names = tuple(name.strip().upper() for name in raw)
    if any(name not in ACTIONS for name in names):
        return None
    return names
