"""One node-wide budget for program executions: how many at once, how many requests a second.

G completions x a batch of prompts x every rank and Ray worker on a node would otherwise
open G x batch sandboxes (or remote requests) at the same time: a provider answers 429,
the machine thrashes.  An ``ExecutionBudget`` is shared by every process of one user on
the node that names it the same way, with nothing to start or clean up:

- **slots**: ``slots`` lock files ``slot-<i>.lock`` in a per-user runtime folder; an
  execution holds an ``fcntl.flock`` on one of them.  The kernel drops the lock when its
  holder exits, SIGKILL included, so a dead process never keeps a slot.
- **rate** (optional): a token bucket (``rate_per_s``, ``burst``) kept in a small
  mmap'd file, changed only under an ``flock`` of that file; ``pause(s)`` stops every
  process's requests for ``s`` seconds (a provider's ``Retry-After``).

- **settings**: one per node and name.  The first process to open a budget records its
  ``slots``, ``rate_per_s`` and ``burst`` in the folder's ``settings`` file; a later one
  asking for other settings uses the recorded ones (and warns once, ``BudgetSizeWarning``,
  naming each that differs), so a node's limits do not depend on which reward asks or
  which process refills the bucket.  Every opener holds a shared ``flock`` of
  ``members.lock`` while it lives: when none is left (all exited, SIGKILL included), the
  next opener records its own.

Waiting is back-pressure, not an error: ``acquire`` blocks until a slot (and a token)
is free, and says how long it waited (``Ticket.queued_s``), the queueing metric.

>>> import tempfile
>>> from rewardkit import ExecutionBudget
>>> budget = ExecutionBudget("doc", slots=2, directory=tempfile.mkdtemp())
>>> with budget.acquire() as ticket:
...     ticket.slot in (0, 1), ticket.queued_s < 1.0
(True, True)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import mmap
import os
import random
import re
import struct
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from rewardkit.execution.node_folders import open_private_file, private_folder, state_root

#: tokens, stamp (CLOCK_MONOTONIC, shared by every process of the node), paused until
_BUCKET = struct.Struct("<ddd")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_POLL_MIN_S = 0.001
_POLL_MAX_S = 0.02
_POLL_TURN_S = 0.005  # the turnstile's holder: the one process polling the slots
#: the deepest debt a bucket may be in (tokens taken beyond its burst; see take_token)
_MAX_DEBT = 1e12
#: the deepest debt ``charge`` leaves, in seconds of the bucket's rate
CHARGE_DEBT_S = 60.0


class BudgetWaitTimeout(TimeoutError):
    """``acquire(max_wait_s=...)`` gave up: the node stayed busy for that long."""


class BudgetSizeWarning(RuntimeWarning):
    """A budget was opened with other settings (slots, rate, burst) than the ones its node
    recorded, and uses the recorded ones (once per process, budget and pair of settings)."""


@dataclass(frozen=True)
class _Settings:
    """A budget's node-wide limits: what the ``settings`` file records.  Without a rate,
    ``burst`` means nothing and is kept at 1, so it never differs."""

    slots: int
    rate_per_s: float | None
    burst: float

    def differing(self, other: _Settings) -> list[str]:
        """This side's description of each setting that differs from ``other``'s."""
        parts = []
        if self.slots != other.slots:
            parts.append(f"{self.slots} slots")
        if self.rate_per_s != other.rate_per_s:
            rate = self.rate_per_s
            parts.append("no request rate" if rate is None else f"{rate:g} requests/s")
        if self.burst != other.burst:
            parts.append(f"burst {self.burst:g}")
        return parts


@dataclass
class Ticket:
    """One held execution slot: which one, and how long getting it took.

    ``queued_s`` is the wait for the slot plus the wait for rate tokens taken through
    this ticket (``take_token``), so a runner that sends several requests under one slot
    reports their whole queueing time.
    """

    slot: int
    queued_s: float
    budget: ExecutionBudget

    def take_token(self) -> float:
        """Wait for one request token of the budget's rate; return (and count) the wait."""
        waited = self.budget.take_token()
        self.queued_s += waited
        return waited


class ExecutionBudget:
    """At most ``slots`` executions at once on this node (for one user and ``name``), and
    at most ``rate_per_s`` requests a second (bursts of ``burst``) when a rate is given.

    Every process that should share the limit uses the same ``name``; ``slots``,
    ``rate_per_s`` and ``burst`` are the settings asked for, and ``self.slots``,
    ``self.rate_per_s``, ``self.burst`` the node's (the recorded ones, see the module's
    docstring).  Thread-safe; usable after ``fork`` (a child reopens its own lock files).
    """

    def __init__(
        self,
        name: str,
        *,
        slots: int,
        rate_per_s: float | None = None,
        burst: float = 1.0,
        directory: str | None = None,
    ) -> None:
        if not _NAME.match(name):
            raise ValueError(f"budget name {name!r}: letters, digits, '_', '.', '-' only")
        if slots < 1:
            raise ValueError(f"a budget needs at least one slot, got {slots}")
        if rate_per_s is not None and not (rate_per_s > 0 and math.isfinite(rate_per_s)):
            raise ValueError(f"rate_per_s must be a positive number, got {rate_per_s}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.name = name
        self.directory = os.path.join(directory or runtime_directory(), name)
        private_folder(self.directory)  # UnsafeFolderError: another user's, a link
        asked = _Settings(slots, rate_per_s, 1.0 if rate_per_s is None else float(burst))
        node, member = _agree_settings(self.directory, asked)
        weakref.finalize(self, os.close, member)  # leaving the members when dropped
        self.slots, self.rate_per_s, self.burst = node.slots, node.rate_per_s, node.burst
        if node != asked:
            _warn_settings(self.name, self.directory, asked, node)
        self._lock = threading.Lock()
        self._local = threading.Semaphore(slots)  # only `slots` threads poll the files
        self._pid = -1
        self._fds: list[int] = []
        self._held: list[bool] = []
        self._bucket_fd = -1
        self._bucket: mmap.mmap | None = None
        self._turnstiles: set[int] = set()  # descriptors of waits in progress
        alive = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _after_fork(alive))

    # -- slots ----------------------------------------------------------------------

    @contextlib.contextmanager
    def acquire(self, *, max_wait_s: float | None = None) -> Iterator[Ticket]:
        """Hold one slot (and, with a rate, one request token) for the ``with`` body.

        Blocks while every slot is held anywhere on the node; raises
        ``BudgetWaitTimeout`` only when ``max_wait_s`` is given and passes.
        """
        started = time.monotonic()
        deadline = None if max_wait_s is None else started + max_wait_s
        if not self._local.acquire(timeout=max_wait_s):
            raise BudgetWaitTimeout(self._busy(max_wait_s))
        try:
            slot = self._claim(deadline, max_wait_s)
        except BaseException:
            self._local.release()
            raise
        try:
            ticket = Ticket(slot, time.monotonic() - started, self)
            if self.rate_per_s is not None:
                ticket.take_token()
            yield ticket
        finally:
            self._release(slot)
            self._local.release()

    def _claim(self, deadline: float | None, max_wait_s: float | None) -> int:
        """A free slot, claimed in turn: waiters queue on the turnstile lock and only its
        holder polls the slots, so a process that just let a slot go cannot take it
        straight back ahead of one that has been waiting."""
        turnstile = open_private_file(os.path.join(self.directory, "turnstile.lock"))
        with self._lock:
            self._turnstiles.add(turnstile)
        try:
            self._enter(turnstile, deadline, max_wait_s)
            pause = _POLL_MIN_S
            while True:
                slot = self._try_slots()
                if slot is not None:
                    return slot
                if deadline is not None and time.monotonic() >= deadline:
                    raise BudgetWaitTimeout(self._busy(max_wait_s))
                time.sleep(pause)
                pause = min(pause * 2, _POLL_TURN_S)
        finally:
            with self._lock:
                self._turnstiles.discard(turnstile)
            os.close(turnstile)  # lets the next waiter in

    def _enter(self, turnstile: int, deadline: float | None, max_wait_s: float | None) -> None:
        if deadline is None:
            fcntl.flock(turnstile, fcntl.LOCK_EX)
            return
        pause = _POLL_MIN_S
        while True:
            try:
                fcntl.flock(turnstile, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BudgetWaitTimeout(self._busy(max_wait_s)) from None
            time.sleep(pause * random.uniform(0.5, 1.5))
            pause = min(pause * 2, _POLL_MAX_S)

    def _try_slots(self) -> int | None:
        """A slot locked for this process, or None when every one is held.

        A slot's file is opened when it is tried and kept open only while this process
        holds it or has held it: one that another process holds is closed again at once.
        So a process costs descriptors for the runs it has had in flight, not for every
        slot of the node (``slots: 3000`` opened 3000 files at the first run and ran out
        of a 1,024-descriptor limit)."""
        with self._lock:
            self._reopen_if_forked()
            start = random.randrange(self.slots)
            for offset in range(self.slots):
                slot = (start + offset) % self.slots
                if self._held[slot]:
                    continue
                fd = self._fds[slot]
                if fd < 0:
                    fd = open_private_file(
                        os.path.join(self.directory, f"slot-{slot}.lock")
                    )
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if self._fds[slot] < 0:
                        os.close(fd)
                    continue
                except BaseException:
                    if self._fds[slot] < 0:
                        os.close(fd)
                    raise
                self._fds[slot] = fd
                self._held[slot] = True
                return slot
        return None

    def _release(self, slot: int) -> None:
        with self._lock:
            if os.getpid() == self._pid:
                fcntl.flock(self._fds[slot], fcntl.LOCK_UN)
                self._held[slot] = False

    def _reopen_if_forked(self) -> None:
        """Open this process's own descriptors: an inherited one shares the parent's
        lock (flock belongs to the open file), so a child must not use it."""
        if self._pid == os.getpid():
            return
        self._fds = [-1] * self.slots  # opened when first tried (see _try_slots)
        self._held = [False] * self.slots
        self._bucket_fd, self._bucket = -1, None
        self._pid = os.getpid()

    def _busy(self, max_wait_s: float | None) -> str:
        return (
            f"every one of the {self.slots} slots of budget {self.name!r} stayed busy for "
            f"{max_wait_s:g} s ({self.directory})"
        )

    # -- rate -----------------------------------------------------------------------

    def take_token(self, amount: float = 1.0) -> float:
        """Wait until the node's bucket can pay ``amount`` tokens, take them; return the
        wait (s).

        One request is one token; a bucket of API tokens (a judge's TPM) takes a
        request's estimated token count. An amount above ``burst`` waits for a full
        bucket and leaves it in debt (negative), which later takers wait out, so the
        long-run rate holds. Without a rate, returns 0 at once.
        """
        if self.rate_per_s is None or not amount > 0:
            return 0.0
        started = time.monotonic()
        while (wait := self.try_take(amount)) > 0:
            time.sleep(wait)
        return time.monotonic() - started

    def try_take(self, amount: float = 1.0) -> float:
        """Take ``amount`` tokens if the node's bucket can pay them now and return 0;
        else take nothing and return the seconds to wait before trying again.

        The non-blocking half of ``take_token``, for a caller that waits its own way (an
        event loop's ``asyncio.sleep``, which a timeout or Ctrl-C can cancel, where a
        thread sleeping in ``take_token`` would hold the interpreter's exit).
        """
        if self.rate_per_s is None or not amount > 0:
            return 0.0
        needed = min(amount, self.burst)
        with self._bucket_locked() as bucket:
            now = time.monotonic()
            tokens, stamp, paused_until = _read(bucket, now, self.burst)
            tokens = min(self.burst, tokens + (now - stamp) * self.rate_per_s)
            if paused_until > now:
                wait = paused_until - now
            elif tokens >= needed:
                _write(bucket, tokens - amount, now, paused_until)
                return 0.0
            else:
                wait = (needed - tokens) / self.rate_per_s
            _write(bucket, tokens, now, paused_until)
        return max(wait, _POLL_MIN_S) * random.uniform(1.0, 1.1)

    def charge(self, amount: float) -> None:
        """Take ``amount`` more tokens without waiting (a negative amount gives some
        back, up to ``burst``): the correction once a request's real cost is known (the
        usage an API answers with, against the estimate taken).

        The debt it leaves is bounded: at most ``CHARGE_DEBT_S`` seconds of the rate (or
        one ``burst``, when that is more), so one answer reporting a cost it cannot
        have had (``total_tokens: 1e9``) holds the node's requests back for a minute at
        most, not for days.
        """
        if self.rate_per_s is None or not amount or not math.isfinite(amount):
            return
        floor = -max(self.burst, CHARGE_DEBT_S * self.rate_per_s)
        with self._bucket_locked() as bucket:
            now = time.monotonic()
            tokens, stamp, paused_until = _read(bucket, now, self.burst)
            tokens = min(self.burst, tokens + (now - stamp) * self.rate_per_s)
            charged = min(self.burst, tokens - amount)
            _write(bucket, max(min(floor, tokens), charged), now, paused_until)

    def pause(self, seconds: float) -> None:
        """Hold back every process's requests for ``seconds`` (a ``Retry-After``)."""
        if self.rate_per_s is None or not seconds > 0:
            return
        with self._bucket_locked() as bucket:
            now = time.monotonic()
            _, stamp, paused_until = _read(bucket, now, self.burst)
            _write(bucket, 0.0, max(now, stamp), max(paused_until, now + seconds))

    @contextlib.contextmanager
    def _bucket_locked(self) -> Iterator[mmap.mmap]:
        with self._lock:
            self._reopen_if_forked()
            if self._bucket is None:
                fd = open_private_file(os.path.join(self.directory, "rate"))
                if os.fstat(fd).st_size < _BUCKET.size:
                    os.ftruncate(fd, _BUCKET.size)  # zeros: an empty bucket stamped at boot
                self._bucket_fd, self._bucket = fd, mmap.mmap(fd, _BUCKET.size)
            fd, bucket = self._bucket_fd, self._bucket
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield bucket
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _after_fork(alive: weakref.ref[ExecutionBudget]) -> None:
    """In a forked child: fresh locks and permits (a parent thread may have held them at
    the fork), and the inherited descriptors closed.  A lock belongs to the open file, so
    a child keeping the parent's descriptors would keep the parent's slots locked after
    the parent died; the child opens its own on next use."""
    budget = alive()
    if budget is None:
        return
    budget._lock = threading.Lock()
    budget._local = threading.Semaphore(budget.slots)
    if budget._bucket is not None:
        budget._bucket.close()
    for fd in [*budget._fds, budget._bucket_fd, *budget._turnstiles]:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
    budget._fds, budget._held, budget._bucket_fd, budget._bucket = [], [], -1, None
    budget._turnstiles = set()
    budget._pid = -1


def _agree_settings(directory: str, asked: _Settings) -> tuple[_Settings, int]:
    """The node's settings of the budget in ``directory``, and this opener's descriptor of
    ``members.lock`` (held shared for as long as it stays open).

    Decided under an exclusive ``flock`` of ``size.lock``, so two first openers cannot
    both record: with no settings recorded, or with some recorded but no member left
    alive, ``asked`` is recorded (written beside, then renamed: a reader never sees half
    a record); otherwise the recorded settings stand.
    """
    guard = open_private_file(os.path.join(directory, "size.lock"))
    member = -1
    try:
        fcntl.flock(guard, fcntl.LOCK_EX)
        member = open_private_file(os.path.join(directory, "members.lock"))
        try:
            fcntl.flock(member, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except BlockingIOError:
            alone = False
        path = os.path.join(directory, "settings")
        recorded = _read_settings(path)
        if recorded is None or (alone and recorded != asked):
            staged = f"{path}.{os.getpid()}.{threading.get_ident()}"
            with open(staged, "w") as out:
                json.dump(asdict(asked), out)
                out.write("\n")
            os.replace(staged, path)
            recorded = asked
        # exclusive -> shared; not atomic, but every other try of an exclusive lock of
        # members.lock happens under the guard this opener holds
        fcntl.flock(member, fcntl.LOCK_SH)
        return recorded, member
    except BaseException:
        if member >= 0:
            os.close(member)
        raise
    finally:
        os.close(guard)


def _read_settings(path: str) -> _Settings | None:
    """The recorded settings, or None when there are none or they cannot be right."""
    try:
        with open(path) as recorded:
            record = json.loads(recorded.read(4096))
    except FileNotFoundError:
        return None
    except ValueError:  # torn or foreign: recorded anew
        return None
    if not isinstance(record, dict):
        return None
    slots, rate, burst = record.get("slots"), record.get("rate_per_s"), record.get("burst")
    if type(slots) is not int or not 1 <= slots <= 1_000_000:
        return None
    if rate is not None and not (
        isinstance(rate, (int, float)) and rate > 0 and math.isfinite(rate)
    ):
        return None
    if not isinstance(burst, (int, float)) or not 1 <= burst < _MAX_DEBT:
        return None
    if rate is None and burst != 1:
        return None
    return _Settings(slots, None if rate is None else float(rate), float(burst))


_warned: set[tuple[str, _Settings, _Settings]] = set()
_warned_lock = threading.Lock()  # not _shared_lock: node_budget holds that while opening


def _warn_settings(name: str, directory: str, asked: _Settings, recorded: _Settings) -> None:
    key = (directory, asked, recorded)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    has, wants = ", ".join(recorded.differing(asked)), ", ".join(asked.differing(recorded))
    warnings.warn(
        f"budget {name!r} has {has} on this node (recorded by the first process that "
        f"opened it, in {directory}/settings); this one asked for {wants} and uses {has}. "
        "To change it, give every reward on the node the same settings (`concurrency:` of "
        "code_execution and of the python reward, `requests_per_s:` of a remote runner) or "
        "stop every process using the budget: the next one to open it records its own.",
        BudgetSizeWarning,
        stacklevel=3,
    )


def _read(bucket: mmap.mmap, now: float, burst: float) -> tuple[float, float, float]:
    """The bucket's state; one that cannot be right (torn, from before a reboot) is reset."""
    tokens, stamp, paused_until = _BUCKET.unpack_from(bucket)
    sane = all(math.isfinite(v) for v in (tokens, stamp, paused_until))
    if not sane or not -_MAX_DEBT <= tokens <= burst or stamp > now or paused_until > now + 3600:
        return burst, now, 0.0
    return tokens, stamp, paused_until


def _write(bucket: mmap.mmap, tokens: float, stamp: float, paused_until: float) -> None:
    _BUCKET.pack_into(bucket, 0, tokens, stamp, paused_until)


def runtime_directory() -> str:
    """Where budgets keep their files: ``rewardkit-budget-<uid>`` in the node's
    :func:`~rewardkit.execution.node_folders.state_root` (``/run`` for root, where no
    other user can make it first, else ``/dev/shm``, node-local memory, else ``/tmp``);
    ``RK_BUDGET_DIR`` overrides. Checked before use (root's own, 0700, no links).

    A fixed path, not ``$TMPDIR`` or ``$XDG_RUNTIME_DIR``: trainer ranks, worker
    processes and Ray workers on one node often see different values of those, and a
    budget is shared only by processes that find the same folder.
    """
    chosen = os.environ.get("RK_BUDGET_DIR")
    if chosen:
        return chosen
    return os.path.join(state_root(), f"rewardkit-budget-{os.getuid()}")


_shared: dict[tuple[str, int, float | None, float], ExecutionBudget] = {}
_shared_lock = threading.Lock()


def node_budget(
    name: str, *, slots: int, rate_per_s: float | None = None, burst: float = 1.0
) -> ExecutionBudget:
    """The process's ``ExecutionBudget`` for these settings (made once, then reused), in
    the default runtime folder: what rewards and runners call."""
    key = (name, slots, rate_per_s, burst)
    with _shared_lock:
        budget = _shared.get(key)
        if budget is None:
            budget = ExecutionBudget(name, slots=slots, rate_per_s=rate_per_s, burst=burst)
            _shared[key] = budget
        return budget
