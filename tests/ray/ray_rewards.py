"""Rewards for the Ray tests: a process-mode reward with every kind of fault, a group
reward and a sandboxed-style reward that can kill the process it runs in."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Sequence

from rewardkit import ExecutionMode, Reward, Sample


class FaultyLength(Reward):
    """Length of the completion mod 7, over 7; the completion may ask for a fault."""

    name = "ray_faulty_length"
    mode = ExecutionMode.PROCESS

    def score(self, sample: Sample) -> float:
        text = sample.text
        if text == "hang":
            time.sleep(3600)
        if text == "crash":
            os._exit(3)
        if text == "raise":
            raise ValueError("asked to raise")
        if text == "nan":
            return float("nan")
        return (len(text) % 7) / 7


class GroupRank(Reward):
    """Rank of each completion's length within its group, over the group size."""

    name = "ray_group_rank"
    mode = ExecutionMode.PROCESS
    group = True

    def score_group(self, samples: Sequence[Sample]) -> list[float]:
        lengths = [len(s.text) for s in samples]
        return [sorted(lengths).index(n) / len(samples) for n in lengths]


class KillsItsProcess(Reward):
    """Runs in the scoring process itself (as a sandboxed reward does on the actor):
    ``die`` ends that process, ``block`` stops it, ``slow`` takes 0.5 s."""

    name = "ray_kills_its_process"
    mode = ExecutionMode.ASYNC
    sandboxed = True

    async def score(self, sample: Sample) -> float:  # type: ignore[override]
        if sample.text == "die":
            os._exit(9)
        if sample.text == "block":
            # the whole process stops answering: no thread of it (no in-process timeout,
            # no event-loop watchdog) can run until it is killed
            os.kill(os.getpid(), signal.SIGSTOP)
        if sample.text == "slow":
            await asyncio.sleep(0.5)
        return float(len(sample.text))


ALL = (FaultyLength, GroupRank, KillsItsProcess)
