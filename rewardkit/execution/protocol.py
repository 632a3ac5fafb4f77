"""What the pool and its workers say to each other: messages, items, and shared memory.

The parent (:mod:`rewardkit.execution.pool`) and a worker
(:mod:`rewardkit.execution.worker`) talk over a pipe, one pickled message per chunk of
items, and share a small memory area (an anonymous file both map). Both ends read this
module, so the format is written once:

- the parent sends ``("run", call, chunk, key, reward_blob | None, group, slot, items)``
  with ``items`` as :func:`encode_items` writes them (samples as columns: no object per
  sample to pickle), or :data:`STOP`;
- the worker answers ``("loaded", call)`` or ``("load_error", call, reason)`` after
  unpickling a reward, then for each chunk ``("s", call, chunk, {item: wire})`` as
  verdicts that are not plain values pile up and ``("d", call, chunk, {...})`` at its
  end; a Score crosses as :func:`wire_score` writes it and :func:`to_score` reads it;
- in the shared memory the worker writes, per item, when it started it, once done its
  value if it is a plain ``ok`` float, then the count of items done (layout below): the
  parent reads there which item is in progress (per-item hard timeouts) and, if the
  worker dies, which results it keeps.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.types import Sample, Score, Status

#: set in a worker's environment: the parent's main script, for rewards defined there
MAIN_PATH_ENV = "REWARDKIT_PARENT_MAIN"
#: set in a worker while it runs the parent's main script: no pool may start then
LOADING_MAIN_ENV = "REWARDKIT_LOADING_PARENT_MAIN"
#: a Score as it crosses the pipe: (value, status, reason, details)
WireScore = tuple[float | None, str, str, Any]
#: most items in one chunk (one message to a worker; the answers come back through the
#: shared memory and one message, more when many verdicts carry details)
MAX_CHUNK = 256
# A worker's shared memory: a header, then two slots for the results of the chunk in
# progress and of the one queued behind it (a worker holds up to two chunks, so it never
# waits for the parent between chunks).
#: header: call id, chunk number, items finished (int64 each), when the item in
#: progress started (float64, ``time.monotonic``)
HEADER = struct.Struct("qqqd")
HEADER_BYTES = 64
#: chunks a worker holds at once
SLOTS = 2
#: per-item codes: value not in the shared memory (not finished, or its answer goes in
#: a message), value in the shared memory
PENDING, PLAIN = 0, 1
AREA_BYTES = HEADER_BYTES + SLOTS * 17 * MAX_CHUNK


def slot_offsets(slot: int) -> tuple[int, int, int]:
    """Byte offsets of a slot's values (float64), seconds (float64) and codes (uint8)."""
    base = HEADER_BYTES + slot * 17 * MAX_CHUNK
    return base, base + 8 * MAX_CHUNK, base + 16 * MAX_CHUNK


@dataclass
class Chunk:
    """Items of one call sent to a worker in one message: their positions in the call."""

    seq: int
    positions: list[int]
    slot: int
    #: when its worker could start it: sent, or the chunk before it finished, or the
    #: reward finished loading
    ready_at: float
    #: answers sent in messages: item number -> wire form
    answers: dict[int, Any] = field(default_factory=dict)
    #: its end message arrived
    finished: bool = False


#: the message that stops a worker
STOP = pickle.dumps(("stop",))
_OK = Status.OK

_STATUS = {str(s): s for s in Status}
_new_score = Score.__new__
_set = object.__setattr__


def _score(value: float | None, status: str, reason: str, details: Any) -> Score:
    # what the frozen dataclass's __init__ does, at half its cost (once per sample)
    score = _new_score(Score)
    _set(score, "value", value)
    _set(score, "status", _STATUS.get(status, status))
    _set(score, "reason", reason)
    _set(score, "details", details)
    return score


def to_score(answer: WireScore | list[WireScore]) -> Score | list[Score]:
    """A Score (a list of them for a group) from its wire form."""
    if isinstance(answer, list):
        return [_score(*wire) for wire in answer]
    return _score(*answer)


#: detail values of these types cross the pipe as they are; others are checked first
_SIMPLE = frozenset({str, int, float, bool, type(None)})


def wire_score(score: Score) -> tuple[Any, str, str, Any]:
    """A Score as it crosses the pipe. Details whose values are not plain are checked
    to pickle and unpickle (else they go as their repr), so an answer message always
    reads back in the parent."""
    details = score.details
    if details is not None:
        if type(details) is not dict:
            details = dict(details)
        for value in details.values():
            if type(value) not in _SIMPLE and not _plain_list(value, 2):
                details = _safe_details(details)
                break
    status = score.status
    reason = score.reason
    return (score.value, "ok" if status is _OK else str(status),
            reason if type(reason) is str else str(reason), details)


def _plain_list(value: Any, depth: int) -> bool:
    """A list or tuple of plain values, or (``depth`` 2) of such lists (what a reward's
    details usually hold, ``[["id", True], ...]``): it pickles and unpickles as it is,
    with no trial round trip."""
    if type(value) is not list and type(value) is not tuple:
        return False
    simple = _SIMPLE
    for item in value:
        if type(item) not in simple and (depth < 2 or not _plain_list(item, 1)):
            return False
    return True


def _safe_details(details: dict[Any, Any]) -> dict[Any, Any]:
    try:
        pickle.loads(pickle.dumps(details, protocol=pickle.HIGHEST_PROTOCOL))
        return details
    except Exception:
        return {k: repr(v) for k, v in details.items()}


def encode_items(items: Sequence[Any], group: bool) -> Any:
    """The items of a chunk as they cross the pipe. Samples go as columns (a list per
    field, so a prompt shared by a group is sent once and no object is rebuilt per
    sample by the pickler); anything else as it is."""
    if group:
        flat = [s for members in items for s in members]
        return ("groups", [len(members) for members in items], encode_items(flat, False))
    if not all(type(s) is Sample for s in items):
        return ("objects", list(items))
    completions = [s.completion for s in items]
    if all(type(c) is str for c in completions):
        # one string: pickled in one copy, cut up again in the worker
        return ("joined", "".join(completions), [len(c) for c in completions],
                [s.prompt for s in items], [s.reference for s in items],
                [s.metadata for s in items], [s.group for s in items],
                [None if s.text is s.completion else s.text for s in items])
    return ("columns",
            [s.prompt for s in items], completions,
            [s.reference for s in items], [s.metadata for s in items],
            [s.group for s in items],
            # the text is sent only where it is not the completion itself
            [None if s.text is s.completion else s.text for s in items])


def decode_items(encoded: Any) -> list[Any]:
    """The items :func:`encode_items` encoded."""
    kind = encoded[0]
    if kind == "groups":
        flat = decode_items(encoded[2])
        out, at = [], 0
        for size in encoded[1]:
            out.append(flat[at:at + size])
            at += size
        return out
    if kind == "objects":
        return list(encoded[1])
    if kind == "joined":
        _, joined, lengths, prompts, references, metadatas, groups, texts = encoded
        completions, at = [], 0
        for length in lengths:
            completions.append(joined[at:at + length])
            at += length
    else:
        _, prompts, completions, references, metadatas, groups, texts = encoded
    new = Sample.__new__
    samples = []
    for prompt, completion, reference, metadata, group, text in zip(
            prompts, completions, references, metadatas, groups, texts, strict=True):
        sample = new(Sample)
        sample.prompt = prompt
        sample.completion = completion
        sample.reference = reference
        sample.metadata = metadata
        sample.group = group
        sample.text = completion if text is None else text
        sample.size = len(sample.text)
        samples.append(sample)
    return samples
