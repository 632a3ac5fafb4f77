"""Entry point of a process-mode worker: ``python -m rewardkit.execution.worker FD PARENT AREA``.

Receives ``("run", call, chunk, key, reward_blob | None, group, slot, items)``
(pickled, one message per chunk; the messages and the shared memory layout are those of
:mod:`rewardkit.execution.protocol`). For each item in turn it records in the shared
memory ``AREA`` when the item started, and when it is done its value (a plain ``ok``
float) or that its answer went in a message, then the count of items done: the parent
reads there which item is in progress (per-item hard timeouts) and, if the worker dies,
which results it keeps. Verdicts that are not a plain value (reasons, details, other
statuses, groups) are sent as ``("s", call, chunk, {item: wire_score(s)})`` as they pile
up; ``("d", call, chunk, {...})`` ends the chunk. Exits when the pipe closes, on
``("stop",)``, or when its parent goes away (the parent's reaper process kills it even
while it runs code that holds the GIL). Ctrl-C is the parent's to handle: the worker
ignores SIGINT. Its ``oom_score_adj`` is 800: out of memory, it goes before the trainer.
Whatever a reward raises, ``SystemExit`` included, is that item's error.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import sys
import threading
import time
import types
from multiprocessing.connection import Connection
from typing import Any

from rewardkit.execution.local import exception_score, group_scores
from rewardkit.execution.protocol import (
    AREA_BYTES,
    HEADER_BYTES,
    LOADING_MAIN_ENV,
    MAIN_PATH_ENV,
    PLAIN,
    decode_items,
    slot_offsets,
    wire_score,
)
from rewardkit.types import MAX_ABS_VALUE, Sample, Score, Status, coerce_value

#: answers that are not plain values are sent once this many have piled up
FLUSH_EVERY = 256
#: the OOM killer takes a worker (and what its reward starts) before the trainer (0);
#: sandbox tasks, at 1000, go before workers
OOM_SCORE_ADJ = 800
_OK = Status.OK


def _group_answer(reward: Any, payload: list[Sample]) -> Any:
    try:
        out = reward.score_group(payload)
    except BaseException as exc:
        return wire_score(exception_score(exc))
    try:
        return [wire_score(score) for score in group_scores(out, len(payload))]
    except Exception as exc:
        return wire_score(exception_score(exc))


def _load(blob: bytes) -> Any:
    """Unpickle a reward; one defined in the parent's script (``__main__``) is found by
    running that script once as ``__mp_main__``, as multiprocessing does."""
    try:
        return pickle.loads(blob)
    except AttributeError as exc:
        if "__main__" not in str(exc) or not _load_parent_main():
            raise
    return pickle.loads(blob)


_parent_main_loaded = False


def _load_parent_main() -> bool:
    global _parent_main_loaded
    path = os.environ.get(MAIN_PATH_ENV)
    if not path or _parent_main_loaded:
        return False
    _parent_main_loaded = True
    import runpy

    module = types.ModuleType("__mp_main__")
    os.environ[LOADING_MAIN_ENV] = "1"
    try:
        module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    finally:
        os.environ.pop(LOADING_MAIN_ENV, None)
    main_module = sys.modules["__main__"]
    for name, value in module.__dict__.items():
        if not name.startswith("__"):
            setattr(main_module, name, value)
    return True


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


class _Area:
    """This worker's view of the shared memory."""

    def __init__(self, fd: int) -> None:
        self.map = mmap.mmap(fd, AREA_BYTES)
        self.bytes = memoryview(self.map)
        # float64 view (typeshed types memoryview items as int)
        self.words: Any = self.bytes[: AREA_BYTES - AREA_BYTES % 8].cast("d")


def _score_chunk(conn: Connection, area: _Area, slot: int, call: int, seq: int, reward: Any,
                 group: bool, items: list[Any]) -> None:
    words, raw = area.words, area.bytes
    ints: Any = raw[:HEADER_BYTES].cast("q")
    at_values, at_seconds, at_codes = slot_offsets(slot)
    v0, s0 = at_values // 8, at_seconds // 8
    # the parent's deadlines are on this clock (CLOCK_MONOTONIC, shared by processes)
    monotonic = time.monotonic
    score = reward.score
    pending: dict[int, Any] = {}
    bound = MAX_ABS_VALUE
    # the header: when item 0 starts, 0 done, then whose chunk this is
    words[3] = monotonic()
    ints[2] = 0
    ints[1] = seq
    ints[0] = call
    try:
        for j, item in enumerate(items):
            words[3] = start = monotonic()
            if group:
                answer: Any = _group_answer(reward, item)
            else:
                try:
                    got = score(item)
                except BaseException as exc:
                    got = exception_score(exc)
                if type(got) is float and -bound <= got <= bound:
                    answer = got  # a plain value, the common case: no _answer call
                else:
                    try:
                        answer = _answer(got)
                    except Exception as exc:  # details that are not a mapping, say
                        answer = wire_score(exception_score(exc))
                if type(answer) is float:
                    words[v0 + j] = answer
                    words[s0 + j] = monotonic() - start
                    raw[at_codes + j] = PLAIN
                    ints[2] = j + 1
                    continue
            words[s0 + j] = monotonic() - start
            pending[j] = answer
            ints[2] = j + 1
            if len(pending) >= FLUSH_EVERY:
                _send(conn, ("s", call, seq, pending))
                pending = {}
        _send(conn, ("d", call, seq, pending))
    finally:
        ints.release()


def _answer(got: Any) -> Any:
    """What a reward returned as the parent needs it: a plain ``ok`` float, or the wire
    form of its Score."""
    if type(got) is Score and got.status is _OK:  # the common verdict, checked quickly
        value = got.value
        if type(value) is float and -MAX_ABS_VALUE <= value <= MAX_ABS_VALUE:
            if not got.reason and not got.details:
                return value
            return wire_score(coerce_value(got))  # reason and details cut to their bounds
    verdict = coerce_value(got)
    if (verdict.status is _OK and type(verdict.value) is float
            and not verdict.reason and not verdict.details):
        return verdict.value
    return wire_score(verdict)


def _send(conn: Connection, message: tuple[Any, ...]) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _offer_to_the_oom_killer() -> None:
    """Raise this worker's ``oom_score_adj`` (no privilege needed to raise it): a reward
    that floods memory in a memory-limited container ends its worker, not the trainer."""
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(str(OOM_SCORE_ADJ))
    except OSError:  # no /proc: nothing to do
        pass


def main(fd: int, parent: int, area_fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _offer_to_the_oom_killer()
    if os.getppid() != parent:  # the parent died before this worker started
        return
    conn = Connection(fd)
    area = _Area(area_fd)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    rewards: dict[str, Any] = {}
    #: rewards that could not be loaded: the reason, given again for their later chunks
    failed: dict[str, str] = {}
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        _, call, seq, key, blob, group, slot, encoded = message
        if blob is not None:
            try:
                rewards[key] = loaded = _load(blob)
                warm = getattr(loaded, "warm", None)
                if callable(warm):  # Reward.warm: set-up a first batch would pay
                    warm()
                failed.pop(key, None)
            except BaseException as exc:
                rewards.pop(key, None)
                failed[key] = f"{type(exc).__name__}: {exc}"[:500]
                conn.send(("load_error", call, failed[key]))
                continue
            conn.send(("loaded", call))
        reward = rewards.get(key)
        if reward is None:
            conn.send(("load_error", call, failed.get(key, "reward not loaded in this worker")))
            continue
        try:
            _score_chunk(conn, area, slot, call, seq, reward, group, decode_items(encoded))
        except (OSError, ValueError):
            return


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
