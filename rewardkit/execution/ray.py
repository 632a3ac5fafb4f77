"""Process-mode and sandboxed rewards on a Ray cluster (``executor: ray``).

The samples of one reward are cut into chunks and sent to a set of scoring actors,
spread over the cluster's nodes. Each actor scores its chunk exactly as a local
:class:`~rewardkit.RewardSet` would: a process-mode reward runs in the actor's own worker
pool (hard per-sample timeouts, a crashed or hung worker costs only its sample), a
sandboxed reward in the actor node's sandbox. So values and statuses are the same as
locally. On top of that the driver:

* keeps at most ``ray.max_in_flight`` chunks queued per actor (backpressure: a large
  batch never floods the object store or an actor's mailbox);
* gives every chunk a deadline derived from the per-sample timeout
  (:func:`~rewardkit.execution.timeouts.chunk_budget`); an actor past it is
  killed and replaced, and that chunk's rows get status ``timeout``. As in the local
  pool, a worker's clock starts when it is ready: at the deadline the driver asks the
  actor (in a concurrency group of its own, so it answers while it scores) how many
  workers its pool replaced during the chunk, and gives each the pool's load allowance
  (:data:`~rewardkit.execution.timeouts.LOAD_TIMEOUT`) before killing anything. A replacement
  worker importing a slow reward module costs no good row; an actor that cannot answer
  (stopped, lost) is killed as before. A chunk whose answer came in while the driver was
  busy (asking another actor, or slow on a loaded machine) is taken, never judged late;
* treats a dead actor (its process or node lost) like a dead worker process: the chunk it
  was running gets status ``error``, chunks queued behind it go to another actor, and
  the call stops trying a reward whose actors die on nearly every chunk by the local
  pool's rule (:class:`~rewardkit.execution.executor.Breaker`, counted in chunks).

Ray is imported only when this executor is used (``pip install 'rewardkit[ray]'``); it
joins or starts a cluster through :mod:`rewardkit.execution.ray_cluster` (the
authentication mode decided there, not by Ray).
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.authoring import Reward
from rewardkit.config import RaySettings
from rewardkit.execution.executor import Breaker, Outcome, pickled_reward
from rewardkit.execution.local import execute_reward
from rewardkit.execution.pool import shared_pool
from rewardkit.execution.ray_cluster import RayUnavailableError, import_ray, init_ray
from rewardkit.execution.shared_instances import SharedInstances
from rewardkit.execution.timeouts import LOAD_TIMEOUT, chunk_budget
from rewardkit.types import ExecutionMode, Sample, Score

#: a chunk holds at most this many samples (or groups)
MAX_CHUNK = 64
#: seconds an actor past a chunk deadline has to say how far it got before it is killed
PROBE_TIMEOUT = 5.0
#: the actors' concurrency group for that question (the default group scores, one at a time)
PROBE_GROUP = "probe"

#: what a chunk answers per sample: the value, and the Score when it is not a plain ok
Answer = tuple[float | None, Score | None]


class ScoringActor:
    """Scores chunks of samples with a reward it unpickles once per key."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.rewards: dict[str, Reward] = {}
        #: the chunk being scored (its number from the driver), and the pool's worker
        #: replacements counted when it started
        self.running: int | None = None
        self.restarts_before = 0

    def where(self) -> tuple[int, str]:
        """(process id, Ray node id) of this actor."""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def progress(self) -> tuple[int | None, int]:
        """(the chunk being scored, how many workers the pool replaced since it started:
        each of them had to load the reward again before its next item's clock ran)."""
        running = self.running
        return running, shared_pool(self.workers).restarts - self.restarts_before

    def score(self, key: str, blob: bytes, mode: str, group: bool, payloads: list[Any],
              timeout: float, seq: int) -> tuple[list[Answer], list[float]]:
        self.restarts_before = shared_pool(self.workers).restarts
        self.running = seq
        try:
            return self._score(key, blob, mode, group, payloads, timeout)
        finally:
            self.running = None

    def _score(self, key: str, blob: bytes, mode: str, group: bool, payloads: list[Any],
               timeout: float) -> tuple[list[Answer], list[float]]:
        reward = self.rewards.get(key)
        if reward is None:
            try:
                reward = pickle.loads(blob)
            except Exception as exc:
                failure = Score.error(
                    f"could not load the reward in a Ray actor: {type(exc).__name__}: {exc}"[:500])
                count = sum(len(p) for p in payloads) if group else len(payloads)
                return [(None, failure)] * count, []
            self.rewards[key] = reward
        if group:
            samples: list[Sample] = [s for members in payloads for s in members]
            groups: list[list[int]] | None = []
            start = 0
            for members in payloads:
                groups.append(list(range(start, start + len(members))))  # type: ignore[union-attr]
                start += len(members)
        else:
            samples, groups = payloads, None
        out = Outcome(len(samples))
        execute_reward(reward, ExecutionMode(mode), samples, None, groups, timeout, out,
                       self.workers)
        answers = [(out.values[i], out.scores.get(i)) for i in range(len(samples))]
        return answers, out.latencies


@dataclass
class _Chunk:
    #: the batch indices this chunk's answers go to, in order
    indices: list[int]
    payloads: list[Any]


@dataclass
class _Sent:
    """A chunk sent to an actor: its answer's ref, its number, its deadline."""

    ref: Any
    chunk: _Chunk
    seq: int
    deadline: float
    #: worker replacements the deadline already allows for
    reloads: int = 0


@dataclass
class _Slot:
    actor: Any
    loaded: set[str] = field(default_factory=set)
    #: the chunks sent, in submission order: the first one is running
    inflight: deque[_Sent] = field(default_factory=deque)


class RayExecutor:
    """A set of scoring actors on a Ray cluster, reused across calls: an
    :class:`~rewardkit.execution.executor.Executor`."""

    def __init__(self, settings: RaySettings) -> None:
        self.settings = settings
        self._ray = import_ray()
        self._lock = threading.Lock()
        if not self._ray.is_initialized():
            try:
                init_ray(settings.address)
            except Exception as exc:  # connection refused, no cluster at that address
                raise RayUnavailableError(
                    f"could not connect to Ray (address {settings.address or 'auto'}): {exc}"
                ) from exc
        self.workers = max(1, int(settings.cpus_per_actor))
        if settings.actors is not None:
            size = settings.actors
        else:
            cpus = float(self._ray.cluster_resources().get("CPU", 1.0))
            size = max(1, int(cpus // settings.cpus_per_actor))
        self._actor_class = self._ray.remote(
            concurrency_groups={PROBE_GROUP: 1})(ScoringActor)
        self._slots = [_Slot(self._new_actor()) for _ in range(size)]
        self.restarts = 0
        self._seq = 0

    @property
    def size(self) -> int:
        return len(self._slots)

    def _new_actor(self) -> Any:
        return self._actor_class.options(
            num_cpus=self.settings.cpus_per_actor, scheduling_strategy="SPREAD",
            max_concurrency=1,
        ).remote(self.workers)

    def actors(self) -> list[Any]:
        return [slot.actor for slot in self._slots]

    def close(self) -> None:
        with self._lock:
            for slot in self._slots:
                self._kill(slot.actor)
            self._slots = []

    def _kill(self, actor: Any) -> None:
        # after ray.shutdown (Ray's own exit hook runs before ours) the actors went with the
        # driver, and ray.kill would connect again (Ray auto-initialises on it): a late
        # connection whose teardown at exit can abort the process
        if not self._ray.is_initialized():
            return
        with contextlib.suppress(Exception):  # already dead
            self._ray.kill(actor, no_restart=True)

    def score(self, reward: Reward, mode: ExecutionMode, samples: Sequence[Sample],
              indices: Sequence[int] | None, groups: Sequence[Sequence[int]] | None,
              timeout: float, out: Outcome) -> None:
        """Score like :func:`rewardkit.execution.local.execute_reward`, on the cluster."""
        sent = pickled_reward(reward, samples, indices, groups, out, "a Ray actor")
        if sent is None:
            return
        key, blob = sent
        chunks = _chunks(samples, indices, groups, self.size)
        with self._lock:
            _RayCall(self, key, self._ray.put(blob), str(mode), groups is not None, chunks,
                     timeout, out).serve()

    def _allow_reloads(self, slot: _Slot) -> bool:
        """At its running chunk's deadline: did the actor's pool replace workers during
        the chunk that the deadline does not allow for yet? Each gets the pool's load
        allowance (the local pool starts an item's clock once its worker has loaded the
        reward), and the chunk and those queued behind it move by as much. False when
        the actor does not answer within :data:`PROBE_TIMEOUT` or is on another chunk."""
        head = slot.inflight[0]
        probe = slot.actor.progress.options(concurrency_group=PROBE_GROUP).remote()
        try:
            running, reloads = self._ray.get(probe, timeout=PROBE_TIMEOUT)
        except Exception:  # stopped, lost, or too slow to answer: it is killed
            return False
        if running != head.seq or reloads <= head.reloads:
            return False
        extra = (reloads - head.reloads) * LOAD_TIMEOUT
        head.reloads = reloads
        for sent in slot.inflight:
            sent.deadline += extra
        return True


class _RayCall:
    """The state of one :meth:`RayExecutor.score`: the chunks still to send, what each
    actor holds, and the breaker (:class:`~rewardkit.execution.executor.Breaker`, one
    unit a chunk: a dead or killed actor fails the chunk it was running)."""

    def __init__(self, executor: RayExecutor, key: str, blob_ref: Any, mode: str,
                 group: bool, chunks: deque[_Chunk], timeout: float, out: Outcome) -> None:
        self.executor = executor
        self.ray = executor._ray
        self.key = key
        self.blob_ref = blob_ref
        self.mode = mode
        self.group = group
        self.chunks = chunks
        self.timeout = timeout
        self.out = out
        #: the slot that holds each chunk sent, by its answer's ref
        self.owner: dict[Any, _Slot] = {}
        self.breaker = Breaker("chunks")

    def serve(self) -> None:
        slots = self.executor._slots
        while self.chunks or self.owner:
            for slot in slots:
                while self.chunks and len(slot.inflight) < self.executor.settings.max_in_flight:
                    self._submit(slot)
            if not self.owner:
                continue
            nearest = min(s.inflight[0].deadline for s in slots if s.inflight)
            ready, _ = self.ray.wait(list(self.owner), num_returns=1,
                                     timeout=max(0.0, nearest - time.monotonic()))
            for ref in ready:
                answered = self.owner.get(ref)
                if answered is not None:  # else its actor was already given up
                    self._receive(answered, ref)
            for slot in slots:
                if slot.inflight and time.monotonic() >= slot.inflight[0].deadline:
                    self._past_deadline(slot)

    def _past_deadline(self, slot: _Slot) -> None:
        """The running chunk of ``slot`` is past its deadline: take its answer if it is in
        (this loop may have spent :data:`PROBE_TIMEOUT` asking another actor meanwhile,
        or been slow to run on a busy machine), give the chunk more time if the actor's
        pool replaced workers (:meth:`RayExecutor._allow_reloads`), else kill the actor:
        the chunk's rows get ``timeout``."""
        head = slot.inflight[0]
        if (self._take_if_in(slot, head) or self.executor._allow_reloads(slot)
                or self._take_if_in(slot, head)):
            return
        self._lose(slot, Score.timeout(
            f"Ray actor gave no answer within the chunk deadline "
            f"({self.timeout:g}s per sample); actor killed"))

    def _take_if_in(self, slot: _Slot, sent: _Sent) -> bool:
        """Receive ``sent``'s answer if it is ready (without waiting); True if it was."""
        ready, _ = self.ray.wait([sent.ref], num_returns=1, timeout=0)
        if not ready:
            return False
        self._receive(slot, sent.ref)
        return True

    def _submit(self, slot: _Slot) -> None:
        chunk = self.chunks.popleft()
        budget = chunk_budget(self.timeout, len(chunk.payloads), self.executor.workers,
                              loading=self.key not in slot.loaded)
        # queued behind the chunks already sent to this actor
        start = slot.inflight[-1].deadline if slot.inflight else time.monotonic()
        self.executor._seq += 1
        seq = self.executor._seq
        ref = slot.actor.score.remote(self.key, self.blob_ref, self.mode, self.group,
                                      chunk.payloads, self.timeout, seq)
        slot.inflight.append(_Sent(ref, chunk, seq, max(start, time.monotonic()) + budget))
        slot.loaded.add(self.key)
        self.owner[ref] = slot

    def _receive(self, slot: _Slot, ref: Any) -> None:
        """The answer of a chunk: its rows' Scores, or, if its actor died, the chunk lost."""
        ray = self.ray
        chunk = _chunk_of(slot, ref)
        try:
            answers, latencies = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                ray.exceptions.ObjectLostError) as exc:
            self._lose(slot, Score.error(f"Ray actor died while scoring: "
                                         f"{type(exc).__name__}"))
            return
        except ray.exceptions.RayTaskError as exc:  # a bug here, not in the reward
            text = str(exc).strip().splitlines()[-1][:400]
            answers = [(None, Score.error(f"Ray task failed: {text}"))] * len(chunk.indices)
            latencies = []
        self.breaker.answered()
        slot.inflight = deque(e for e in slot.inflight if e.ref != ref)
        self.owner.pop(ref, None)
        out = self.out
        for idx, (value, score) in zip(chunk.indices, answers, strict=True):
            if score is None:
                out.values[idx] = value
            else:
                out.put(idx, score)
        out.latencies.extend(latencies)

    def _lose(self, slot: _Slot, failure: Score) -> None:
        """The actor of ``slot`` is gone (or killed): the running chunk gets ``failure``,
        the ones queued behind it go back to the queue, the actor is replaced; once the
        breaker trips, the chunks not sent get ``not run: ...``."""
        executor = self.executor
        executor._kill(slot.actor)
        running = slot.inflight.popleft()
        self.owner.pop(running.ref, None)
        for idx in running.chunk.indices:
            self.out.put(idx, failure)
        for sent in reversed(slot.inflight):
            self.owner.pop(sent.ref, None)
            self.chunks.appendleft(sent.chunk)
        slot.inflight.clear()
        slot.actor = executor._new_actor()
        slot.loaded = set()
        executor.restarts += 1
        self.breaker.failed()
        self.breaker.give_up_waiting(failure, self.chunks, lambda chunk: chunk.indices,
                                     self.out.put)


def _chunk_of(slot: _Slot, ref: Any) -> _Chunk:
    for sent in slot.inflight:
        if sent.ref == ref:
            return sent.chunk
    raise LookupError("answer from a chunk this executor did not send")


def _chunks(samples: Sequence[Sample], indices: Sequence[int] | None,
            groups: Sequence[Sequence[int]] | None, actors: int) -> deque[_Chunk]:
    if groups is not None:
        units: list[tuple[list[int], Any]] = [
            (list(members), [samples[i] for i in members]) for members in groups]
    else:
        chosen = range(len(samples)) if indices is None else indices
        units = [([i], samples[i]) for i in chosen]
    size = max(1, min(MAX_CHUNK, math.ceil(len(units) / (actors * 4))))
    found: deque[_Chunk] = deque()
    for start in range(0, len(units), size):
        part = units[start : start + size]
        found.append(_Chunk([i for idx, _ in part for i in idx], [p for _, p in part]))
    return found


_executors: SharedInstances[str, RayExecutor] = SharedInstances(
    lambda executor: bool(executor._slots), lambda executor: executor.close(),
    forget_at_close=True)
_close_executors = _executors.close_all


def shared_executor(settings: RaySettings) -> RayExecutor:
    """The process-wide executor for these settings (actors are started once)."""
    return _executors.get(settings.model_dump_json(), lambda: RayExecutor(settings))
