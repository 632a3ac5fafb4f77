"""ScoreResult: what RewardSet.score returns (totals, per-component scores) and its metrics."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from rewardkit.execution import Outcome
from rewardkit.trajectory import TURN_VALUES
from rewardkit.types import Sample, Score, Status


@dataclass
class SampleScores:
    """The scores of one sample: the total that trains and each component's Score."""

    total: float | None
    scores: dict[str, Score]

    def to_dict(self) -> dict[str, Any]:
        return {"reward": self.total,
                "components": {k: v.to_dict() for k, v in self.scores.items()}}


class ScoreResult:
    """What :meth:`RewardSet.score` returns: totals, per-component scores and metrics.

    For each component: :meth:`values` (what the reward returned), :meth:`normalized`
    (what the aggregate used: the value standardised within its group under
    ``normalize_then_sum``, the value itself under ``weighted_sum``) and
    :meth:`contributions` (weight x normalised value: the component's share of the
    total). Trainer adapters read these; none recomputes them.
    """

    def __init__(self, step: int, samples: list[Sample], totals: list[float | None],
                 outcomes: dict[str, Outcome], weights: dict[str, float],
                 aggregate: str,
                 normalized: dict[str, list[float | None]] | None = None) -> None:
        self.step = step
        self.samples = samples
        self.totals = totals
        self.outcomes = outcomes
        self.weights = weights
        self.aggregate = aggregate
        self._normalized = normalized if normalized is not None else {
            name: out.values for name, out in outcomes.items()}

    def __len__(self) -> int:
        return len(self.totals)

    @classmethod
    def concat(cls, results: Sequence[ScoreResult], step: int = 0) -> ScoreResult:
        """One result from consecutive batches (samples are not kept)."""
        totals: list[float | None] = []
        outcomes: dict[str, Outcome] = {}
        weights: dict[str, float] = {}
        normalized: dict[str, list[float | None]] = {}
        for res in results:
            offset = len(totals)
            totals += res.totals
            weights = res.weights
            for name, part in res.outcomes.items():
                merged = outcomes.setdefault(name, Outcome(0))
                merged.values += part.values
                merged.scores.update({offset + i: s for i, s in part.scores.items()})
                merged.latencies += part.latencies
                normalized.setdefault(name, []).extend(res.normalized(name))
                merged.latency_per_sample = merged.latency_per_sample and part.latency_per_sample
                merged.sample_seconds.update(
                    {offset + i: v for i, v in part.sample_seconds.items()})
        aggregate = results[0].aggregate if results else "weighted_sum"
        return cls(step, [], totals, outcomes, weights, aggregate, normalized)

    def __getitem__(self, i: int) -> SampleScores:
        return SampleScores(self.totals[i],
                            {name: out.score(i) for name, out in self.outcomes.items()})

    def __iter__(self) -> Iterator[SampleScores]:
        return (self[i] for i in range(len(self)))

    def values(self, component: str) -> list[float | None]:
        """One component's raw values (None where it did not score)."""
        return self.outcomes[component].values

    def normalized(self, component: str) -> list[float | None]:
        """One component's values as the aggregate used them: standardised within each
        group (same prompt) under ``normalize_then_sum``, as returned otherwise."""
        return self._normalized[component]

    def contributions(self, component: str) -> list[float | None]:
        """One component's share of each total: its weight at this step times its
        :meth:`normalized` value (None where it did not score)."""
        weight = self.weights[component]
        return [None if v is None else weight * v for v in self._normalized[component]]

    def scores(self, component: str) -> list[Score]:
        out = self.outcomes[component]
        return [out.score(i) for i in range(len(self))]

    @cached_property
    def metrics(self) -> dict[str, Any]:
        """Per component: mean/std/min/max of the values scored, the mean weighted
        contribution, status counts and rates, latency p50/p95 (ms); and the total."""
        n = len(self)
        comps: dict[str, Any] = {}
        for name, out in self.outcomes.items():
            vals = [v for v in out.values if v is not None]
            counts = {str(s): 0 for s in Status}
            for score in out.scores.values():
                counts[str(score.status)] += 1
            counts["ok"] = n - sum(counts[s] for s in ("skipped", "error", "timeout"))
            weight = self.weights[name]
            stats = _stats(vals)
            comps[name] = {
                **stats,
                "weight": weight,
                "contribution": weight * stats["mean"] if vals else 0.0,
                "count": counts,
                "error_rate": (counts["error"] / n) if n else 0.0,
                "timeout_rate": (counts["timeout"] / n) if n else 0.0,
                "skip_rate": (counts["skipped"] / n) if n else 0.0,
                "latency_ms_mean": (math.fsum(out.latencies) / len(out.latencies) * 1000
                                    if out.latencies else 0.0),
                # inline rewards are timed per chunk of samples: their p50/p95 are chunk
                # means, which say nothing of single samples (tables leave them out)
                "latency_per_sample": out.latency_per_sample,
                "latency_ms_p50": percentile(out.latencies, 50) * 1000,
                "latency_ms_p95": percentile(out.latencies, 95) * 1000,
            }
            per_turn = _per_turn(out)
            if per_turn:
                comps[name]["turns"] = per_turn
        totals = [t for t in self.totals if t is not None]
        return {"step": self.step, "samples": n, "components": comps,
                "total": {**_stats(totals), "null": n - len(totals)}}

    def flat_metrics(self, prefix: str = "rewards") -> dict[str, float]:
        """Metrics as flat ``prefix/component/name`` keys for a logger."""
        flat: dict[str, float] = {}
        for name, m in self.metrics["components"].items():
            for key in ("mean", "std", "min", "max", "contribution", "error_rate",
                        "timeout_rate", "skip_rate", "latency_ms_p50", "latency_ms_p95"):
                flat[f"{prefix}/{name}/{key}"] = float(m[key])
            for turn, stats in m.get("turns", {}).items():
                flat[f"{prefix}/{name}/turn_{turn}/mean"] = float(stats["mean"])
        total = self.metrics["total"]
        for key in ("mean", "std", "min", "max"):
            flat[f"{prefix}/total/{key}"] = float(total[key])
        return flat

    def to_rows(self) -> list[dict[str, Any]]:
        return [self[i].to_dict() for i in range(len(self))]


def _per_turn(out: Outcome) -> dict[str, dict[str, float]]:
    """Per assistant-turn index, the mean and count of a per-turn reward's values
    (:data:`rewardkit.trajectory.TURN_VALUES`); empty for a reward that gives none."""
    by_turn: dict[int, list[float]] = {}
    for score in out.scores.values():
        vals = score.details.get(TURN_VALUES) if score.details else None
        if isinstance(vals, list):
            for t, v in enumerate(vals):
                by_turn.setdefault(t, []).append(float(v))
    return {str(t): {"mean": math.fsum(v) / len(v), "count": float(len(v))}
            for t, v in sorted(by_turn.items())}


def _stats(vals: Sequence[float]) -> dict[str, float]:
    if not vals:
        return {"mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan}
    mean = math.fsum(vals) / len(vals)
    var = math.fsum((v - mean) ** 2 for v in vals) / len(vals)
    return {"mean": mean, "std": math.sqrt(var), "min": min(vals), "max": max(vals)}


def percentile(vals: Sequence[float], q: float) -> float:
    if not vals:
        return 0.0
    ordered = sorted(vals)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
