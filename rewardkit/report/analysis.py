"""What a report says about scored samples: distributions, statuses, latency, the GRPO
signal (groups with no reward variance) and the correlation between components.

Input rows are those ``rewardkit score`` writes (and ``rewardkit train`` records):
``prompt``, ``completion``, ``reference``, other keys = metadata, ``reward`` (the total or
null) and ``components`` = ``{name: {value, status, reason, latency_ms?}}``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit.config.models import TURN_METRICS
from rewardkit.reward_set import turn_stats, turn_sums
from rewardkit.trajectory import TURN_VALUES
from rewardkit.types import Sample, group_key

STATUSES = ("ok", "skipped", "error", "timeout")
#: a group's totals count as "no signal" when their spread is below this
ZERO_VARIANCE_EPS = 1e-9


class ReportInputError(Exception):
    """A scored file the report cannot read (not JSONL of scored samples)."""


@dataclass
class ComponentSummary:
    """One component over all samples."""

    name: str
    values: list[float]
    counts: dict[str, int]
    latencies_ms: list[float]
    histogram: list[tuple[float, float, int]]
    mean: float
    std: float
    zero_variance_groups: int = 0
    groups_scored: int = 0
    #: a per-turn reward's mean and count per turn bucket
    #: (:func:`rewardkit.reward_set.turn_stats`), None for any other
    turns: dict[str, dict[str, float]] | None = None

    @property
    def zero_variance_share(self) -> float:
        return self.zero_variance_groups / self.groups_scored if self.groups_scored else math.nan


@dataclass
class RunSummary:
    """All the figures of one report."""

    samples: int
    components: dict[str, ComponentSummary]
    totals: list[float]
    null_totals: int
    total_histogram: list[tuple[float, float, int]]
    groups: int
    group_sizes: dict[int, int]
    zero_variance_groups: int
    correlation: dict[str, dict[str, float | None]]
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    @property
    def zero_variance_share(self) -> float:
        multi = sum(c for size, c in self.group_sizes.items() if size > 1)
        return self.zero_variance_groups / multi if multi else math.nan


def read_scored(path: str | Path) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Rows of a scored JSONL file and the (line, reason) of each line that is not one."""
    rows: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    with Path(path).open("r", encoding="utf-8", errors="replace") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                bad.append((line_no, f"invalid JSON ({exc.msg})"))
                continue
            if not isinstance(row, dict) or not isinstance(row.get("components"), dict):
                bad.append((line_no, "not a scored sample (no 'components' object)"))
                continue
            rows.append(row)
    if not rows:
        reason = f"; first problem: line {bad[0][0]}: {bad[0][1]}" if bad else ""
        raise ReportInputError(f"{path}: no scored samples (expected the JSONL that "
                               f"`rewardkit score` writes){reason}")
    return rows, bad


@dataclass(frozen=True)
class StepCoverage:
    """Which training steps the scored rows come from (a run's log keeps a sample of them:
    every step's rows while they fit, then every 2nd step's ...)."""

    first: int
    last: int
    count: int
    #: the gap between steps when they are evenly spaced, else None
    every: int | None
    #: the run's last step when known (its reward curves, ``--steps``)
    run_end: int | None = None

    @classmethod
    def of(cls, rows: Iterable[Mapping[str, Any]],
           run_end: int | None = None) -> StepCoverage | None:
        """None when no row has an integer ``step`` (a scoring run, not a training run)."""
        steps = sorted({r["step"] for r in rows
                        if isinstance(r.get("step"), int) and not isinstance(r["step"], bool)})
        if not steps:
            return None
        gaps = {b - a for a, b in itertools.pairwise(steps)}
        every = gaps.pop() if len(gaps) == 1 else (1 if not gaps else None)
        return cls(steps[0], steps[-1], len(steps), every, run_end)

    @property
    def partial(self) -> bool:
        """The rows stop well before the run's end: the figures describe its start only."""
        if self.run_end is None:
            return False
        return self.run_end - self.last > max(self.every or 1, 1) + 1

    def text(self) -> str:
        """``samples from steps 0-598 (every 2nd step, 300 steps) of a run to step 599``."""
        span = f"step {self.first}" if self.count == 1 else f"steps {self.first}-{self.last}"
        if self.count > 1:
            span += (" (every step)" if self.every == 1 else
                     f" (every {_ordinal(self.every)} step, {self.count} steps)" if self.every
                     else f" ({self.count} steps)")
        run = f" of a run to step {self.run_end}" if self.run_end is not None else ""
        return f"samples from {span}{run}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def group_of(row: Mapping[str, Any]) -> Hashable:
    """The GRPO group of a scored row, as scoring defines it
    (:func:`rewardkit.types.group_key`: an explicit ``group`` column, else the prompt
    within its ``step``)."""
    return group_key(Sample.from_dict(row))


def component_names(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    names: dict[str, None] = {}
    for row in rows:
        for name in row.get("components") or {}:
            names.setdefault(name, None)
    return list(names)


def value_of(row: Mapping[str, Any], name: str) -> float | None:
    comp = (row.get("components") or {}).get(name)
    if not isinstance(comp, dict):
        return None
    value = comp.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def status_of(row: Mapping[str, Any], name: str) -> str:
    comp = (row.get("components") or {}).get(name)
    if not isinstance(comp, dict):
        return "skipped"
    status = str(comp.get("status") or "ok")
    return status if status in STATUSES else "error"


def total_of(row: Mapping[str, Any]) -> float | None:
    value = row.get("reward")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def histogram(values: Sequence[float], bins: int = 20) -> list[tuple[float, float, int]]:
    """(low, high, count) bins over the values; one bin per distinct value when few."""
    if not values:
        return []
    distinct = sorted(set(values))
    if len(distinct) <= 12:
        counts: dict[float, int] = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        return [(v, v, counts[v]) for v in distinct]
    lo, hi = distinct[0], distinct[-1]
    width = (hi - lo) / bins
    found = [0] * bins
    for v in values:
        found[min(bins - 1, int((v - lo) / width))] += 1
    return [(lo + i * width, lo + (i + 1) * width, c) for i, c in enumerate(found)]


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation; None when fewer than 3 pairs or a side is constant."""
    n = len(xs)
    if n < 3:
        return None
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    syy = math.fsum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def _spread(values: Sequence[float]) -> float:
    return max(values) - min(values) if values else 0.0


def turn_values_in(rows: Iterable[Mapping[str, Any]], name: str) -> list[list[float]]:
    """Component ``name``'s per-turn values in the scored rows (``turn_values``, which
    ``rewardkit score`` writes for a per-turn reward); a row whose list is not all finite
    numbers is left out."""
    found = []
    for row in rows:
        comp = (row.get("components") or {}).get(name)
        vals = comp.get(TURN_VALUES) if isinstance(comp, dict) else None
        if isinstance(vals, list) and all(
                isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                for v in vals):
            found.append([float(v) for v in vals])
    return found


def summarise(rows: Sequence[Mapping[str, Any]],
              bad_lines: Sequence[tuple[int, str]] = (),
              turn_metrics: int = TURN_METRICS) -> RunSummary:
    """Every figure of the report from the scored rows (per-turn rewards' turns in the
    buckets of a config's ``turn_metrics``)."""
    names = component_names(rows)
    groups: dict[Hashable, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(group_of(row), []).append(i)
    multi = [members for members in groups.values() if len(members) > 1]
    components: dict[str, ComponentSummary] = {}
    for name in names:
        values = [v for v in (value_of(r, name) for r in rows) if v is not None]
        counts = dict.fromkeys(STATUSES, 0)
        latencies: list[float] = []
        for row in rows:
            counts[status_of(row, name)] += 1
            lat = (row.get("components") or {}).get(name, {})
            lat = lat.get("latency_ms") if isinstance(lat, dict) else None
            if isinstance(lat, int | float) and not isinstance(lat, bool) and lat >= 0:
                latencies.append(float(lat))
        mean = math.fsum(values) / len(values) if values else math.nan
        std = (math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
               if values else math.nan)
        summary = ComponentSummary(name, values, counts, latencies, histogram(values),
                                   mean, std)
        if turn_values := turn_values_in(rows, name):
            summary.turns = turn_stats(turn_sums(turn_values, turn_metrics))
        for members in multi:
            got = [v for v in (value_of(rows[i], name) for i in members) if v is not None]
            if len(got) > 1:
                summary.groups_scored += 1
                if _spread(got) <= ZERO_VARIANCE_EPS:
                    summary.zero_variance_groups += 1
        components[name] = summary
    totals = [t for t in (total_of(r) for r in rows) if t is not None]
    zero_groups = 0
    for members in multi:
        got = [t for t in (total_of(rows[i]) for i in members) if t is not None]
        if len(got) < 2 or _spread(got) <= ZERO_VARIANCE_EPS:
            zero_groups += 1
    sizes: dict[int, int] = {}
    for members in groups.values():
        sizes[len(members)] = sizes.get(len(members), 0) + 1
    correlation: dict[str, dict[str, float | None]] = {}
    for a in names:
        correlation[a] = {}
        for b in names:
            pairs = [(x, y) for x, y in ((value_of(r, a), value_of(r, b)) for r in rows)
                     if x is not None and y is not None]
            correlation[a][b] = pearson([p[0] for p in pairs], [p[1] for p in pairs])
    return RunSummary(len(rows), components, totals, len(rows) - len(totals),
                      histogram(totals), len(groups), dict(sorted(sizes.items())),
                      zero_groups, correlation, list(bad_lines))
