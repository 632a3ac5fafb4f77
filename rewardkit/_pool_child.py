"""Entry point of a process-mode worker: ``python -m rewardkit._pool_child FD``.

Receives ``("run", key, reward_blob | None, group, items)`` over the pipe, answers
``("r", index, wire_score(s), seconds)`` per item, in order. Exits when the pipe closes,
on ``("stop",)``, or when its parent goes away.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from rewardkit.execution import exception_score, group_scores
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
        except Exception as exc:
            return _wire(exception_score(exc))
        try:
            return [_wire(score) for score in group_scores(out, len(payload))]
        except Exception as exc:
            return _wire(exception_score(exc))
    try:
        return _wire(coerce_value(reward.score(payload)))
    except Exception as exc:
        return _wire(exception_score(exc))



def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def main(fd: int) -> None:
    conn = Connection(fd)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    rewards: dict[str, Any] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        _, key, blob, group, items = message
        if blob is not None:
            try:
                rewards[key] = pickle.loads(blob)
            except Exception as exc:
                rewards.pop(key, None)
                conn.send(("load_error", f"{type(exc).__name__}: {exc}"[:500]))
                continue
            conn.send(("loaded",))
        reward = rewards.get(key)
        if reward is None:
            conn.send(("load_error", "reward not loaded in this worker"))
            continue
        for idx, payload in items:
            start = time.perf_counter()
            answer = _call(reward, group, payload)
            conn.send(("r", idx, answer, time.perf_counter() - start))


if __name__ == "__main__":
    main(int(sys.argv[1]))
