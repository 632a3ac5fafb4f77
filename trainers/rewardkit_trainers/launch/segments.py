"""A run cut into *segments*: successive resumed jobs, for backends that pass no step.

EasyR1 and verl call the reward without the training step, so a config with reward
stages runs as one job per segment: each segment's reward is pinned to its first step,
ends at the next boundary, and resumes from the checkpoint the previous segment saved
there. Segments are the jobs of one run; reward *stages* (``rewards.<name>.stages``) are
what the reward does by step, and by default each stage boundary starts a segment
(``train.stages: auto``). Both ``rewardkit train``
(:meth:`rewardkit_trainers.launch.plan.RunPlan.segment_ranges`) and the SageMaker
entrypoint (:mod:`rewardkit_trainers.sagemaker.entrypoint`) cut runs here.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardkit.config import RewardConfig

SegmentRange = tuple[int, int | None]
"""``(first step, end step)`` of one segment; end None = run to the end of training."""


def reward_boundaries(config: RewardConfig) -> list[int]:
    """Every ``until_step`` of the config's reward stages, sorted."""
    found = {stage.until_step for comp in config.rewards.values() for stage in comp.stages or []
             if stage.until_step is not None}
    return sorted(found)


def segment_boundaries(train_stages: Sequence[int] | str, config: RewardConfig) -> list[int]:
    """Steps where a new segment starts (besides 0): ``train.stages`` (``train_stages``)
    when set, else every ``until_step`` of the reward stages (``auto``)."""
    if isinstance(train_stages, str):  # "auto"
        return reward_boundaries(config)
    return sorted(set(train_stages))


def segment_ranges(boundaries: Sequence[int], total: int | None) -> list[SegmentRange]:
    """The successive segments for ``boundaries`` (steps where a new one starts) in a run
    of ``total`` steps (None: the last segment runs to the end, wherever that is);
    boundaries at or past ``total`` are dropped."""
    ends: list[int | None] = [b for b in sorted(set(boundaries))
                              if b > 0 and (total is None or b < total)]
    ends.append(total)
    starts = [0, *[e for e in ends[:-1] if e is not None]]
    return list(zip(starts, ends, strict=True))


def segment_to_resume(ranges: Sequence[SegmentRange], step: int | None) -> int:
    """Index of the segment a run resumed at ``step`` (None: from scratch) continues in:
    the first whose end lies past it (a step on a boundary starts the next segment)."""
    if step is None:
        return 0
    for k, (_start, end) in enumerate(ranges):
        if end is None or end > step:
            return k
    return len(ranges) - 1
