"""A time bound on math_answer's symbolic steps that holds in any thread, inline or in a worker.

sympy can run for minutes on an ordinary-looking pair (``\\binom{n+m-1}{m}^{2}`` against
``\\binom{n+m-1}{m}^{7}`` spends seconds expanding gamma functions; other pairs sit in
``sympy.logcombine``). math-verify's own timeout is ``signal.alarm``, which works only in
the main thread and replaces the process's SIGALRM handler, so math_answer calls it with
timeouts off, and before this module the worker's hard timeout was the only guard: the
worker was killed, the sample masked (status timeout), and an inline component hung.

:func:`bounded` runs one step (a parse, a comparison) with a deadline. A deadline is in
CPU time of the step's own thread (its ``pthread_getcpuclockid`` clock), not wall time:
a pair's verdict must not depend on the machine's load (on a busy machine a 0.2 s
comparison took over 1 s of wall time, and an ordinary pair came back ``wrong``), and a
step that waits for the GIL or the CPU is not working. Where that clock is missing
(not Linux/BSD) the deadline is in wall time. One daemon thread
watches the deadlines of every thread that is inside a bounded step; when one passes it
raises :class:`SymbolicTimeout` in that thread (CPython's ``PyThreadState_SetAsyncExc``),
which unwinds sympy at its next bytecode, and again every :data:`_REFIRE` CPU seconds while
the step has not ended (in case sympy swallowed it in a bare ``except:``).
:class:`SymbolicTimeout` derives from BaseException, so sympy's and math-verify's
``except Exception`` clauses do not catch it. What it cannot interrupt is one long call
into C (a single huge integer product): the cost guards refuse the inputs known to cause
those, and the worker's hard timeout stays the last guard in process mode. Where the
interpreter has no such call (not CPython), steps run unbounded, as before.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: CPU seconds between repeated interruptions of a step that outlived its deadline
_REFIRE = 0.25
#: the deadline of the step each thread is inside (on that thread's CPU clock), for nesting
_OUTER: dict[int, float] = {}


class SymbolicTimeout(BaseException):
    """A symbolic step ran past its deadline (raised inside the step's thread)."""


def _set_async_exc() -> Callable[[int, Any], int] | None:
    try:
        fn = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (AttributeError, ValueError):
        return None
    fn.argtypes = (ctypes.c_ulong, ctypes.c_void_p)  # the exception's address; NULL clears
    fn.restype = ctypes.c_int
    return fn


_SET_ASYNC_EXC = _set_async_exc()


def _cpu_clock(tid: int) -> int | None:
    """The clock id of thread ``tid``'s CPU time, or None (no such clock here: wall time)."""
    try:
        return time.pthread_getcpuclockid(tid)
    except (AttributeError, OSError):
        return None


def _now(clock: int | None) -> float:
    """The time on ``clock`` (a thread's CPU clock; None: monotonic wall time)."""
    return time.monotonic() if clock is None else time.clock_gettime(clock)


class _Watchdog:
    """The deadlines of the threads inside a bounded step, and the thread that enforces them."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        #: thread id -> [deadline, clock] of its innermost step (the deadline on that
        #: clock, the thread's CPU clock), [deadline, clock, 1] once interrupted
        self._armed: dict[int, list[Any]] = {}
        self._thread: threading.Thread | None = None
        #: when the watchdog wakes next (monotonic): an arm whose deadline cannot pass
        #: before then need not wake it (the common case: one short step after another
        #: costs no thread switch); a CPU clock never runs faster than the wall clock
        self._wake = float("inf")

    def arm(self, tid: int, deadline: float, clock: int | None) -> None:
        with self._cond:
            self._armed[tid] = [deadline, clock]
            soonest = time.monotonic() + (deadline - _now(clock))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name="rewardkit-sympy-deadline",
                                                daemon=True)
                self._wake = float("inf")
                self._thread.start()
            if soonest < self._wake:
                self._cond.notify()

    def disarm(self, tid: int) -> None:
        """End the step of thread ``tid`` (the caller) and drop an interruption it has not
        received yet: after this returns, none is raised in it."""
        with self._cond:
            entry = self._armed.pop(tid, None)
            if entry is not None and len(entry) > 2 and _SET_ASYNC_EXC is not None:
                _SET_ASYNC_EXC(tid, None)  # NULL: drops a pending, undelivered interruption

    def _watch(self) -> None:
        with self._cond:
            while True:
                wait = None
                for tid, entry in list(self._armed.items()):
                    try:
                        now = _now(entry[1])
                    except OSError:  # the thread has ended without disarming
                        del self._armed[tid]
                        continue
                    if entry[0] <= now:
                        if _SET_ASYNC_EXC is not None:
                            _SET_ASYNC_EXC(tid, id(SymbolicTimeout))
                        entry[0] = now + _REFIRE
                        if len(entry) == 2:
                            entry.append(1)  # fired: disarm clears what is pending
                    # the CPU seconds left take at least as many wall seconds
                    left = entry[0] - now
                    wait = left if wait is None else min(wait, left)
                self._wake = float("inf") if wait is None else time.monotonic() + wait
                self._cond.wait(wait)


_WATCHDOG = _Watchdog()


def _after_fork_in_child() -> None:
    """A forked worker starts with no watchdog thread and a lock the parent's may have
    held at the fork: it gets a fresh watchdog and no steps."""
    global _WATCHDOG
    _WATCHDOG = _Watchdog()
    _OUTER.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def bounded(seconds: float | None, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, interrupted with :class:`SymbolicTimeout` once the calling thread
    has spent ``seconds`` of CPU time in it (None or where the interpreter cannot
    interrupt a thread: unbounded). Steps nest: an inner step keeps the outer deadline
    when that is sooner."""
    if seconds is None or _SET_ASYNC_EXC is None:
        return fn(*args)
    tid = threading.get_ident()
    clock = _cpu_clock(tid)
    outer = _OUTER.get(tid)
    deadline = _now(clock) + max(seconds, 0.0)
    if outer is not None:
        deadline = min(deadline, outer)
    _OUTER[tid] = deadline
    try:
        _WATCHDOG.arm(tid, deadline, clock)
        return fn(*args)
    finally:
        while True:  # an interruption arriving here is dropped, never left pending
            try:
                _WATCHDOG.disarm(tid)
                if outer is None:
                    _OUTER.pop(tid, None)
                else:
                    _OUTER[tid] = outer
                    _WATCHDOG.arm(tid, outer, clock)
                break
            except SymbolicTimeout:
                continue


def deadline_left(default: float | None = None) -> float | None:
    """CPU seconds left to the calling thread's current bounded step (``default`` outside
    one)."""
    tid = threading.get_ident()
    outer = _OUTER.get(tid)
    return default if outer is None else max(outer - _now(_cpu_clock(tid)), 0.0)
