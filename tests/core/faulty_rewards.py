"""Rewards that misbehave in every way the fault model covers (used by test_faults)."""

from __future__ import annotations

import asyncio
import os
import time

from rewardkit import Params, Reward, Sample, reward


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
