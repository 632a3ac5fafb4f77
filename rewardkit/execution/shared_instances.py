"""Process-wide instances by key: made on first use, made again once closed, all closed
at interpreter exit.

The worker pools (:func:`rewardkit.execution.pool.shared_pool`, one per size) and the
Ray executors (:func:`rewardkit.execution.ray.shared_executor`, one per settings) are
expensive to start, so every component of the process asking for the same one shares it.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SharedInstances(Generic[K, V]):
    """The process's instances of one kind, one per key.

    ``get(key, make)`` returns the instance made for ``key``, or a new one from
    ``make()`` when there is none or ``alive`` says it was closed; at exit each is
    closed with ``close``, then ``after_close`` runs (what the instances share, such as
    a reaper process).
    """

    def __init__(self, alive: Callable[[V], bool], close: Callable[[V], None], *,
                 after_close: Callable[[], None] | None = None,
                 forget_at_close: bool = False) -> None:
        self.instances: dict[K, V] = {}
        self._lock = threading.Lock()
        self._alive = alive
        self._close = close
        self._after_close = after_close
        self._forget_at_close = forget_at_close
        atexit.register(self.close_all)

    def get(self, key: K, make: Callable[[], V]) -> V:
        with self._lock:
            instance = self.instances.get(key)
            if instance is None or not self._alive(instance):
                instance = self.instances[key] = make()
            return instance

    def close_all(self) -> None:
        """Close every instance (also run at interpreter exit); with ``forget_at_close``
        the next ``get`` makes new ones."""
        for instance in list(self.instances.values()):
            self._close(instance)
        if self._forget_at_close:
            self.instances.clear()
        if self._after_close is not None:
            self._after_close()
