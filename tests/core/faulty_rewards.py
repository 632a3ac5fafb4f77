"""Rewards that misbehave in every way the fault model covers (used by test_faults)."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from rewardkit import Params, Reward, Sample, Score, reward


@reward
def good(sample: Sample) -> float:
    """Length of the completion, capped at 10."""
    return float(min(len(sample.text), 10))


@reward
def raises(sample: Sample) -> float:
    if "boom" in sample.text:
        raise ValueError("boom in the completion")
    return 1.0


@reward(mode="process")
def hangs(sample: Sample) -> float:
    if "hang" in sample.text:
        while True:
            time.sleep(0.05)
    return 1.0


@reward(mode="process")
def dies(sample: Sample) -> float:
    if "die" in sample.text:
        os._exit(3)
    return 1.0


@reward
def returns_nan(sample: Sample) -> float:
    return float("nan") if "nan" in sample.text else 1.0


@reward
def returns_text(sample: Sample) -> object:
    return "one point" if "text" in sample.text else 1.0


@reward(group=True)
def wrong_count(samples: list[Sample]) -> list[float]:
    return [1.0] * (len(samples) + 1)


@reward(mode="process")
def worker_pid(sample: Sample) -> float:
    return float(os.getpid())


class SlowAsyncParams(Params):
    delay: float = 0.0


@reward(params=SlowAsyncParams)
async def slow_async(sample: Sample, params: SlowAsyncParams) -> float:
    await asyncio.sleep(params.delay if "slow" in sample.text else 0.0)
    return 1.0


class Counter(Reward):
    """Stateful: counts calls per instance (set-up runs once per instance)."""

    name = "counter"

    def setup(self) -> None:
        self.calls = 0

    def score(self, sample: Sample) -> float:
        self.calls += 1
        return float(self.calls)


ALL = [good, raises, hangs, dies, returns_nan, returns_text, wrong_count, worker_pid,
       slow_async, Counter]


@reward(mode="process")
def segfaults(sample: Sample) -> float:
    if "crash" in sample.text:
        import ctypes

        ctypes.string_at(0)
    return 1.0


ALL.append(segfaults)


class SlowSetup(Reward):
    """Process-mode reward whose set-up (imports, model load) takes a while."""

    name = "slow_setup"
    mode = "process"

    def setup(self) -> None:
        time.sleep(1.0)

    def score(self, sample: Sample) -> float:
        return 1.0


ALL.append(SlowSetup)


@reward(mode="process")
def always_dies(sample: Sample) -> float:
    os._exit(9)


ALL.append(always_dies)


@reward
def huge(sample: Sample) -> float:
    """1e308 where the completion says "huge": what a number-parsing grader may return."""
    return 1e308 if "huge" in sample.text else 1.0


@reward
def exits(sample: Sample) -> float:
    if "exit" in sample.text:
        import sys

        sys.exit(2)
    return 1.0


@reward
async def async_exits(sample: Sample) -> float:
    if "exit" in sample.text:
        import sys

        sys.exit(2)
    if "cancel" in sample.text:
        raise asyncio.CancelledError()
    await asyncio.sleep(0)
    return 1.0


@reward
async def async_blocks(sample: Sample) -> float:
    """Blocking code inside ``async def``: the event loop stops while it runs."""
    if "block" in sample.text:
        time.sleep(20)
    await asyncio.sleep(0.01)
    return 1.0


@reward(mode="process")
def process_exits(sample: Sample) -> float:
    if "exit" in sample.text:
        import sys

        sys.exit(2)
    return 1.0


@reward(mode="process")
def echo_after(sample: Sample) -> float:
    """Sleeps ``metadata.sleep`` seconds, waits (at most 120 s) until the file
    ``metadata.gate`` exists when given, then returns ``metadata.v``."""
    time.sleep(float(sample.metadata.get("sleep", 0)))
    gate = sample.metadata.get("gate")
    deadline = time.monotonic() + 120
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.05)
    return float(sample.metadata["v"])


@reward(mode="process")
def catastrophic_regex(sample: Sample) -> float:
    """Writes its pid to ``metadata.pidfile``, then runs a regex that holds the GIL for
    hours."""
    import re

    with open(sample.metadata["pidfile"], "w") as fh:
        fh.write(str(os.getpid()))
    re.match(r"(a+)+$", "a" * 60 + "b")
    return 1.0


ALL += [huge, exits, async_exits, async_blocks, process_exits, echo_after,
        catastrophic_regex]


@reward(mode="process")
def logs_and_dies(sample: Sample) -> float:
    """Appends the sample's prompt to the file named in its metadata, then ends its
    process on a completion saying "die" (a plain float otherwise)."""
    with open(sample.metadata["log"], "a", encoding="utf-8") as log:
        log.write(f"{sample.prompt}\n")
    if "die" in sample.text:
        os._exit(3)
    return float(len(sample.text))


_VERDICTS: dict[str, object] = {
    "float": 0.5, "int": 3, "details": Score.ok(1.0, via="tag", extracted="42"),
    "reason": Score.ok(0.0, "no answer found"), "none": None, "nan": float("nan"),
    "huge": 1e308, "skip": Score.skip("not a maths question"), "text": "one point",
    "unpicklable": Score.ok(1.0, handle=threading.Lock()),
}


@reward(mode="process")
def mixed_verdicts(sample: Sample) -> object:
    """Every kind of verdict a reward may give, chosen by the completion's first word."""
    kind = sample.text.split()[0]
    if kind == "raise":
        raise ValueError(f"bad row {sample.prompt}")
    return _VERDICTS[kind]


ALL += [logs_and_dies, mixed_verdicts]


@reward
def metadata_value(sample: Sample) -> object:
    """Returns ``metadata["value"]`` as given (a float, an int, a bool, a huge number)."""
    return sample.metadata["value"]


ALL.append(metadata_value)


#: the argument of the ``sleep`` that ``outlives_its_timeout`` starts: tests find its
#: processes by it
ORPHAN_SLEEP = "987.654321"


@reward(mode="process")
def outlives_its_timeout(sample: Sample) -> float:
    """An external checker slower than its timeout: on a completion saying "slow" it waits
    for a child process (``sleep``, which inherits the worker's stdout) that outlives the
    worker."""
    import subprocess

    if "slow" in sample.text:
        subprocess.run(["sleep", ORPHAN_SLEEP], check=False)
    return 1.0


ALL.append(outlives_its_timeout)


@reward
def raises_interrupt(sample: Sample) -> float:
    """Raises KeyboardInterrupt on a completion holding "interrupt" (a reward's own raise,
    not a Ctrl-C: in a service's request thread no signal reaches it)."""
    if "interrupt" in sample.text:
        raise KeyboardInterrupt
    return 1.0


ALL.append(raises_interrupt)


def _details_asked(sample: Sample) -> dict[str, object]:
    """A completion saying "dump" gets 5 MB of text in its details (an input echoed), one
    saying "pairs" 200,000 ``[id, followed]`` pairs (~3 MB as JSON), any other two pairs."""
    if "dump" in sample.text:
        return {"kind": "dump", "dump": "x" * 5_000_000}
    if "pairs" in sample.text:
        return {"kind": "pairs", "followed": [[f"id{i}", i % 2 == 0] for i in range(200_000)]}
    return {"kind": "small", "followed": [["a", True], ["b", False]]}


def _reason_asked(sample: Sample) -> str:
    """A completion saying "dump" gets 5 MB of reason too."""
    return "r" * 5_000_000 if "dump" in sample.text else "scored"


@reward
def big_details(sample: Sample) -> Score:
    return Score.ok(1.0, _reason_asked(sample), **_details_asked(sample))


@reward(mode="process")
def process_big_details(sample: Sample) -> Score:
    return Score.ok(1.0, _reason_asked(sample), **_details_asked(sample))


ALL += [big_details, process_big_details]
