"""Entry point of a process-mode worker: ``python -m rewardkit._pool_child FD PARENT``.

Receives ``("run", call, key, reward_blob | None, group, items)`` over the pipe, answers
``("r", call, index, wire_score(s), seconds)`` per item, in order. Exits when the pipe
closes, on ``("stop",)``, or when its parent goes away (the parent's reaper process
kills it even while it runs code that holds the GIL). Ctrl-C is the parent's to handle:
the worker ignores SIGINT. Whatever a reward raises, ``SystemExit`` included, is that
item's error.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
import types
from multiprocessing.connection import Connection
from typing import Any

from rewardkit.execution import exception_score, group_scores
from rewardkit.process_pool import LOADING_MAIN_ENV, MAIN_PATH_ENV
from rewardkit.types import Score, coerce_value


def _wire(score: Score) -> tuple[Any, str, str, Any]:
    details = score.details
    if details is not None:
        try:
            pickle.dumps(details)
            details = dict(details)
        except Exception:
            details = {k: repr(v) for k, v in dict(details).items()}
    return (score.value, str(score.status), score.reason, details)


def _call(reward: Any, group: bool, payload: Any) -> Any:
    if group:
        try:
            out = reward.score_group(payload)
        except BaseException as exc:
            return _wire(exception_score(exc))
        try:
            return [_wire(score) for score in group_scores(out, len(payload))]
        except Exception as exc:
            return _wire(exception_score(exc))
    try:
        return _wire(coerce_value(reward.score(payload)))
    except BaseException as exc:
        return _wire(exception_score(exc))



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


def main(fd: int, parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() != parent:  # the parent died before this worker started
        return
    conn = Connection(fd)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    rewards: dict[str, Any] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        _, call, key, blob, group, items = message
        if blob is not None:
            try:
                rewards[key] = _load(blob)
            except BaseException as exc:
                rewards.pop(key, None)
                conn.send(("load_error", call, f"{type(exc).__name__}: {exc}"[:500]))
                continue
            conn.send(("loaded", call))
        reward = rewards.get(key)
        if reward is None:
            conn.send(("load_error", call, "reward not loaded in this worker"))
            continue
        for idx, payload in items:
            start = time.perf_counter()
            answer = _call(reward, group, payload)
            try:
                conn.send(("r", call, idx, answer, time.perf_counter() - start))
            except (OSError, ValueError):
                return
            except Exception as exc:  # details that pickle but do not unpickle, say
                conn.send(("r", call, idx, _wire(exception_score(exc)),
                           time.perf_counter() - start))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
