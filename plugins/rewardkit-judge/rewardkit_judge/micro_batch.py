"""Micro-batching: concurrent per-sample requests gathered into batches for one model.

rewardkit scores an async reward's samples concurrently on one event loop; a
:class:`MicroBatcher` holds each request until ``batch_size`` requests are waiting or
``max_wait`` seconds have passed since the first, then runs the whole batch through
``run_batch`` in a single worker thread (one forward pass, the event loop stays free).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")


class MicroBatcher(Generic[Item]):
    """Collects items from concurrent coroutines and scores them in batches.

    ``run_batch(items)`` returns one result per item, or raises: then every request of
    that batch raises the same exception.
    """

    def __init__(self, run_batch: Callable[[Sequence[Item]], Sequence[Any]],
                 batch_size: int, max_wait: float) -> None:
        self._run_batch = run_batch
        self._batch_size = batch_size
        self._max_wait = max_wait
        self._pending: list[tuple[Item, asyncio.Future[Any]]] = []
        self._timer: asyncio.TimerHandle | None = None
        # one thread: the model sees one batch at a time
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rewardkit-batch")
        self.batches: list[int] = []  # sizes of the batches run, for metrics and tests

    async def submit(self, item: Item) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending.append((item, future))
        if len(self._pending) >= self._batch_size:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self._max_wait, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending[: self._batch_size], self._pending[self._batch_size:]
        if self._pending:
            self._timer = asyncio.get_running_loop().call_later(self._max_wait, self._flush)
        if not batch:
            return
        self.batches.append(len(batch))
        items = [item for item, _ in batch]
        done = asyncio.get_running_loop().run_in_executor(self._executor, self._run_batch, items)
        done.add_done_callback(lambda fut: _deliver(fut, batch))


def _deliver(done: asyncio.Future[Sequence[Any]],
             batch: list[tuple[Any, asyncio.Future[Any]]]) -> None:
    exc = done.exception()
    results: Sequence[Any] = [] if exc is not None else done.result()
    if exc is None and len(results) != len(batch):
        exc = RuntimeError(f"batch returned {len(results)} results for {len(batch)} items")
    for i, (_, future) in enumerate(batch):
        if future.done():  # the caller gave up (timeout)
            continue
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(results[i])
