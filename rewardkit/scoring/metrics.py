"""Metrics of a stream of batches in constant memory (``rewardkit score`` on any file size).

The same figures as :attr:`ScoreResult.metrics`, accumulated batch by batch: counts,
mean and standard deviation (batch statistics merged with Chan's formula), min and max
exactly; latency percentiles from a bounded uniform sample of the latencies
(``LATENCY_SAMPLE`` of them), exact while a run has fewer; a per-turn reward's ``turns``
from the sums and counts of its turn buckets (:func:`~rewardkit.reward_set.turn_sums`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from rewardkit.execution import Outcome
from rewardkit.fallback import fallback_counts, fallback_metrics
from rewardkit.reward_set import (
    ScoreResult,
    TurnSums,
    component_metrics,
    empty_turn_sums,
    turn_stats,
    turn_sums,
    turn_values_of,
)
from rewardkit.types import Status

#: latencies kept per component for the p50 / p95 estimate
LATENCY_SAMPLE = 20_000


class _RunningStats:
    """Count, mean, sum of squared deviations, min and max of the values seen."""

    __slots__ = ("count", "high", "low", "m2", "mean")

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.low = math.inf
        self.high = -math.inf

    def add(self, vals: Sequence[float]) -> None:
        if not vals:
            return
        n = len(vals)
        mean = math.fsum(vals) / n
        m2 = math.fsum((v - mean) ** 2 for v in vals)
        total = self.count + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta * delta * self.count * n / total
        self.count = total
        self.low = min(self.low, min(vals))
        self.high = max(self.high, max(vals))

    def as_dict(self) -> dict[str, float]:
        if not self.count:
            return {"mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan}
        return {"mean": self.mean, "std": math.sqrt(max(self.m2, 0.0) / self.count),
                "min": self.low, "max": self.high}


class _Reservoir:
    """A uniform sample of at most ``size`` values of a stream (algorithm R)."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.seen = 0
        self.kept: list[float] = []
        self._random = random.Random(seed)

    def add(self, vals: Sequence[float]) -> None:
        for v in vals:
            self.seen += 1
            if len(self.kept) < self.size:
                self.kept.append(v)
            else:
                j = self._random.randrange(self.seen)
                if j < self.size:
                    self.kept[j] = v


class RunningMetrics:
    """Accumulates the metrics of consecutive :class:`ScoreResult` batches."""

    def __init__(self, step: int = 0) -> None:
        self.step = step
        self.samples = 0
        self.weights: dict[str, float] = {}
        self._values: dict[str, _RunningStats] = {}
        self._counts: dict[str, dict[str, int]] = {}
        self._latencies: dict[str, _Reservoir] = {}
        self._latency_sum: dict[str, tuple[float, int]] = {}
        self._per_sample: dict[str, bool] = {}
        self._turns: dict[str, TurnSums] = {}
        self._fallback: dict[str, dict[str, int]] = {}
        self._totals = _RunningStats()
        self._null = 0

    def add(self, result: ScoreResult) -> None:
        n = len(result)
        self.samples += n
        self.weights.update(result.weights)
        for name, out in result.outcomes.items():
            self._values.setdefault(name, _RunningStats()).add(
                [v for v in out.values if v is not None])
            counts = self._counts.setdefault(name, {str(s): 0 for s in Status})
            not_ok = 0
            for score in out.scores.values():
                if score.status is not Status.OK:
                    counts[str(score.status)] += 1
                    not_ok += 1
            counts["ok"] += n - not_ok
            self._latencies.setdefault(
                name, _Reservoir(LATENCY_SAMPLE, len(self._latencies))).add(out.latencies)
            total, count = self._latency_sum.get(name, (0.0, 0))
            self._latency_sum[name] = (total + math.fsum(out.latencies),
                                       count + len(out.latencies))
            self._per_sample[name] = self._per_sample.get(name, True) and out.latency_per_sample
            self._add_turns(name, out, result)
            asked = fallback_counts(out)
            if name in result.fallbacks or asked["asked"] or name in self._fallback:
                merged = self._fallback.setdefault(name, dict.fromkeys(asked, 0))
                for key, count in asked.items():
                    merged[key] += count
        totals = [t for t in result.totals if t is not None]
        self._totals.add(totals)
        self._null += n - len(totals)

    def _add_turns(self, name: str, out: Outcome, result: ScoreResult) -> None:
        """Merge the batch's turn buckets of a per-turn component (one that has turn
        values now, or had them in an earlier batch of the same reward set)."""
        turn_values = turn_values_of(out)
        if not turn_values and name not in result.per_turn:
            return
        merged = self._turns.setdefault(name, empty_turn_sums(result.turn_metrics))
        for key, (total, count) in turn_sums(turn_values, result.turn_metrics).items():
            merged[key][0] += total
            merged[key][1] += count

    def metrics(self) -> dict[str, Any]:
        """The shape of :attr:`ScoreResult.metrics`."""
        n = self.samples
        comps: dict[str, Any] = {}
        for name, stats in self._values.items():
            total_s, count = self._latency_sum[name]
            comps[name] = component_metrics(
                n, stats.as_dict(), stats.count, self.weights[name], self._counts[name],
                latency_total_s=total_s, latency_count=count,
                latency_per_sample=self._per_sample[name],
                latencies=self._latencies[name].kept)
            if name in self._turns:
                comps[name]["turns"] = turn_stats(self._turns[name])
            if name in self._fallback:
                comps[name]["fallback"] = fallback_metrics(self._fallback[name], n)
        return {"step": self.step, "samples": n, "components": comps,
                "total": {**self._totals.as_dict(), "null": self._null}}
