"""Weights as a function of the global training step.

A weight in a config is a number or one of these models, chosen by its ``schedule`` key::

    weight: {schedule: linear, start: 0.5, end: 0.9, steps: 100}
    weight: {schedule: cosine, start: 1.0, end: 0.1, steps: 500, start_step: 100}
    weight: {schedule: piecewise, boundaries: [20, 50], values: [0.5, 0.3, 0.1]}
    weight: {schedule: warmup, value: 1.0, warmup_steps: 50}
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: largest weight magnitude a config may give (with the reward value bound, no weighted
#: sum, square or mean can overflow a float)
MAX_ABS_WEIGHT = 1e6
#: a weight or schedule value: finite and within +-MAX_ABS_WEIGHT
WeightNumber = Annotated[float, Field(ge=-MAX_ABS_WEIGHT, le=MAX_ABS_WEIGHT,
                                      allow_inf_nan=False)]


class _Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def __call__(self, step: int) -> float:
        raise NotImplementedError


class ConstantSchedule(_Schedule):
    """The same weight at every step."""

    schedule: Literal["constant"]
    value: WeightNumber

    def __call__(self, step: int) -> float:
        return self.value


class _Ramp(_Schedule):
    start: WeightNumber
    end: WeightNumber
    steps: int = Field(gt=0)
    start_step: int = Field(0, ge=0)

    def progress(self, step: int) -> float:
        """0 at ``start_step``, 1 from ``start_step + steps`` on."""
        return min(max(step - self.start_step, 0) / self.steps, 1.0)


class LinearSchedule(_Ramp):
    """From ``start`` at ``start_step`` to ``end`` at ``start_step + steps``, then ``end``."""

    schedule: Literal["linear"]

    def __call__(self, step: int) -> float:
        return self.start + (self.end - self.start) * self.progress(step)


class CosineSchedule(_Ramp):
    """Half-cosine from ``start`` to ``end`` over ``steps`` steps after ``start_step``."""

    schedule: Literal["cosine"]

    def __call__(self, step: int) -> float:
        t = self.progress(step)
        return self.end + (self.start - self.end) * 0.5 * (1.0 + math.cos(math.pi * t))


class PiecewiseSchedule(_Schedule):
    """``values[i]`` while ``step < boundaries[i]``; the last value after the last boundary."""

    schedule: Literal["piecewise"]
    boundaries: list[int]
    values: list[WeightNumber]

    @model_validator(mode="after")
    def _check(self) -> PiecewiseSchedule:
        if len(self.values) != len(self.boundaries) + 1:
            raise ValueError(
                f"piecewise needs one more value than boundaries "
                f"(got {len(self.values)} values, {len(self.boundaries)} boundaries)"
            )
        if any(b >= a for a, b in zip(self.boundaries[1:], self.boundaries, strict=False)):
            raise ValueError("piecewise boundaries must be strictly increasing")
        return self

    def __call__(self, step: int) -> float:
        for boundary, value in zip(self.boundaries, self.values, strict=False):
            if step < boundary:
                return value
        return self.values[-1]


class WarmupSchedule(_Schedule):
    """Rises linearly from ``from_value`` to ``value`` over ``warmup_steps``, then holds."""

    schedule: Literal["warmup"]
    value: WeightNumber
    warmup_steps: int = Field(gt=0)
    from_value: WeightNumber = 0.0

    def __call__(self, step: int) -> float:
        t = min(max(step, 0) / self.warmup_steps, 1.0)
        return self.from_value + (self.value - self.from_value) * t


Schedule = Annotated[
    ConstantSchedule | LinearSchedule | CosineSchedule | PiecewiseSchedule | WarmupSchedule,
    Field(discriminator="schedule"),
]
Weight = WeightNumber | Schedule


def weight_at(weight: Weight, step: int) -> float:
    """The value of a weight (a number or a schedule) at ``step``."""
    if isinstance(weight, int | float):
        return float(weight)
    return weight(step)


def is_constant(weight: Weight) -> bool:
    """Whether a weight is the same at every step: a number or ``{schedule: constant}``.

    The one definition of "scheduled" (a weight that is not constant): trainers with fixed
    weights, the per-step weight callback and the staircase warnings all ask this.
    """
    return isinstance(weight, int | float | ConstantSchedule)


def changes_with_step(weights: Sequence[Weight]) -> bool:
    """Whether a weight given per stage (one entry per stage) changes with the step: an
    entry that is not constant (:func:`is_constant`), or constant entries that differ."""
    if not all(is_constant(w) for w in weights):
        return True
    return len({weight_at(w, 0) for w in weights}) > 1
