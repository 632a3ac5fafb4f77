"""A process-mode reward whose module takes :data:`IMPORT_SECONDS` to import (as a reward
pulling in a large library does): every fresh worker process pays that before it can
score, every replacement of a killed worker too."""

from __future__ import annotations

import time

from rewardkit import ExecutionMode, Reward, Sample

IMPORT_SECONDS = 4.0
time.sleep(IMPORT_SECONDS)


class SlowImportLength(Reward):
    """Length of the completion over 100; ``hang`` never returns."""

    name = "ray_slow_import_length"
    mode = ExecutionMode.PROCESS

    def score(self, sample: Sample) -> float:
        if sample.text == "hang":
            time.sleep(3600)
        return len(sample.text) / 100
