"""RewardSet: rewards composed by a config into one reward, and its result (ScoreResult).

Where weights are applied (:meth:`ScheduledComponent.weight_at`), stages chosen
(:meth:`ScheduledComponent.stage_at`), samples routed (``when``:
:meth:`ScheduledComponent.routes`) and components aggregated (:func:`_aggregate`,
``normalize_then_sum`` by :func:`_normalized`); and what comes back: totals, each
component's scores and the metrics trainers log (:class:`ScoreResult`).

>>> from rewardkit import RewardSet
>>> rs = RewardSet.from_dict({"rewards": {"fmt": {"reward": "soft_format", "weight": 0.5}}})
>>> rs.score([{"prompt": "q", "completion": "<think>a</think><answer>1</answer>"}]).totals
[0.5]
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, cast

from rewardkit.authoring import Params, Reward
from rewardkit.config import Component, RewardConfig, load_config, parse_config
from rewardkit.config.models import TURN_METRICS
from rewardkit.execution import Outcome, dispatch_component, mode_for
from rewardkit.fallback import ScheduledFallback, ask_fallback, fallback_counts, fallback_metrics
from rewardkit.registry import registry
from rewardkit.schedules import Weight, changes_with_step, weight_at
from rewardkit.trajectory import MASKED, TURN_VALUES, settle_component
from rewardkit.types import ExecutionMode, Sample, Score, Status, group_key, group_members

NORMALIZE_EPS = 1e-4
"""Added to a group's standard deviation under ``normalize_then_sum``: a group whose
values are all equal normalises to 0, not to a division by zero."""


@dataclass(frozen=True)
class _Stage:
    until_step: int | None
    reward: Reward
    weight: Weight


def _default_mode(cls: type[Reward], stages: list[_Stage]) -> ExecutionMode:
    """The mode of a component whose config sets none: its stages' default mode when
    they agree, else the reward's declared mode."""
    modes = {stage.reward.default_mode() for stage in stages}
    return modes.pop() if len(modes) == 1 else cls.mode


class ScheduledComponent:
    """One configured component: its reward instance per stage, routing and mode."""

    def __init__(self, name: str, config: Component) -> None:
        self.name = name
        self.config = config
        cls = registry.get(config.reward)
        self.reward_class = cls
        stages: list[_Stage] = []
        if config.stages:
            for stage in config.stages:
                params = {**config.params, **stage.params}
                weight = stage.weight if stage.weight is not None else config.weight
                stages.append(_Stage(stage.until_step, cls(params), weight))
        else:
            stages.append(_Stage(None, cls(config.params), config.weight))
        self.stages = stages
        # a stage's parameters may make the reward cheap (default_mode): the component
        # runs inline only when every stage would
        self.mode = mode_for(config.mode or _default_mode(cls, self.stages), config.timeout)
        self.timeout = config.timeout
        self.when = config.when
        self.fallback = ScheduledFallback.build(config.fallback) if config.fallback else None

    def stage_at(self, step: int) -> _Stage:
        for stage in self.stages:
            if stage.until_step is None or step < stage.until_step:
                return stage
        return self.stages[-1]

    def weight_at(self, step: int) -> float:
        return weight_at(self.stage_at(step).weight, step)

    @property
    def is_scheduled(self) -> bool:
        """Whether the weight depends on the step: a schedule that is not constant, or
        stages whose weights differ (:func:`rewardkit.schedules.changes_with_step`)."""
        return changes_with_step([s.weight for s in self.stages])

    def weight_spec(self) -> Any:
        """The weight as configured: a number, a schedule (as a dict), or per stage a list
        of ``{until_step, weight}`` (the last without ``until_step``)."""
        def plain(weight: Weight) -> Any:
            return weight if isinstance(weight, int | float) else weight.model_dump()

        if len(self.stages) == 1:
            return plain(self.stages[0].weight)
        return [{"until_step": st.until_step, "weight": plain(st.weight)} if st.until_step
                else {"weight": plain(st.weight)} for st in self.stages]

    def routes(self, sample: Sample) -> bool:
        if not self.when:
            return True
        meta = sample.metadata
        for key, expected in self.when.items():
            if key not in meta:
                return False
            actual = meta[key]
            if isinstance(expected, list):
                if actual not in expected:
                    return False
            elif actual != expected:
                return False
        return True


class RewardSet:
    """A composed reward: score a batch at a training step into totals and components.

    Build it from a config file (:meth:`from_file`), a dict (:meth:`from_dict`) or a
    validated :class:`RewardConfig`. Scoring from several threads at once is safe for the
    engine (process-mode work is served one call at a time); an inline stateful reward
    sees the calls of every thread.
    """

    def __init__(self, config: RewardConfig) -> None:
        self.config = config
        self.components = {name: ScheduledComponent(name, c) for name, c in config.rewards.items()}
        #: components that have given per-turn values: from then on their results carry
        #: every turn bucket, with count 0 on a batch where none did (fixed logger keys)
        self.per_turn: set[str] = set()

    @classmethod
    def from_file(cls, path: str | Path) -> RewardSet:
        return cls(load_config(path))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<config>") -> RewardSet:
        return cls(parse_config(data, source))

    @property
    def names(self) -> list[str]:
        return list(self.components)

    def weights(self, step: int = 0) -> dict[str, float]:
        """Each component's weight at ``step`` (stages and schedules applied)."""
        return {name: c.weight_at(step) for name, c in self.components.items()}

    def params_at(self, name: str, step: int = 0) -> Params:
        """Component ``name``'s validated parameters at ``step`` (its stage applied)."""
        return self.components[name].stage_at(step).reward.params

    def is_scheduled(self, name: str) -> bool:
        """Whether component ``name``'s weight changes with the step (a schedule, or
        stages with different weights): trainers with fixed weights need to know."""
        return self.components[name].is_scheduled

    def score(self, samples: Sequence[Sample | Mapping[str, Any]], step: int = 0,
              components: Sequence[str] | None = None) -> ScoreResult:
        """Score ``samples`` at training step ``step``.

        Samples may be :class:`Sample` objects or dataset rows (``prompt``,
        ``completion``, ``reference``, other keys = metadata). ``components`` limits
        scoring to some components (trainer adapters score one at a time).
        """
        batch = _as_samples(samples)
        chosen = list(self.components) if components is None else list(components)
        cap = self.config.limits.max_completion_chars
        longest = max(map(_size_of, batch), default=0)
        oversize = [i for i, s in enumerate(batch) if s.size > cap] if longest > cap else []
        normalize = self.config.aggregate == "normalize_then_sum"
        needs_groups = normalize or any(self.components[name].reward_class.group
                                        for name in chosen)
        groups = group_indices(batch) if needs_groups else None
        outcomes = {name: self._score_component(self.components[name], batch, step, oversize,
                                                groups) for name in chosen}
        weights = {name: self.components[name].weight_at(step) for name in chosen}
        if normalize:
            used = {name: _normalized(outcomes[name], groups or []) for name in chosen}
        else:
            used = {name: outcomes[name].values for name in chosen}
        totals = _aggregate(len(batch), used, outcomes, weights, self.config.on_error == "null")
        self.per_turn.update(name for name in chosen if name not in self.per_turn
                             and turn_values_of(outcomes[name]))
        return ScoreResult(step, batch, totals, outcomes, weights, self.config.aggregate, used,
                           turn_metrics=self.config.turn_metrics,
                           per_turn=self.per_turn.intersection(chosen),
                           fallbacks=[n for n in chosen if self.components[n].fallback])

    def _score_component(self, comp: ScheduledComponent, batch: list[Sample], step: int,
                         oversize: list[int], groups: list[list[int]] | None) -> Outcome:
        """One component's scores of ``batch`` at ``step``: oversize and unrouted samples
        settled here, the rest (in its groups, for a group reward) run by its executor,
        then truncation and per-turn values applied."""
        out = Outcome(len(batch))
        stage = comp.stage_at(step)
        indices: list[int] | None = None
        if comp.when or oversize:
            indices = self._route(comp, batch, oversize, out)
        comp_groups = None
        if comp.reward_class.group and groups is not None:
            allowed = None if indices is None else set(indices)
            comp_groups = [g if allowed is None else [i for i in g if i in allowed]
                           for g in groups]
            comp_groups = [g for g in comp_groups if g]
        dispatch_component(self.config, stage.reward, comp.mode, comp.timeout, batch, indices,
                           comp_groups, out)
        if comp.fallback is not None:
            ask_fallback(self.config, comp.fallback, batch, indices, out)
        cfg = comp.config
        if out.scores or cfg.on_truncated != "keep":  # per-turn values live in details
            settle_component(out, batch, cfg.on_truncated, cfg.turns, cfg.gamma)
        return out

    def _route(self, comp: ScheduledComponent, batch: list[Sample], oversize: list[int],
               out: Outcome) -> list[int]:
        """The indices ``comp`` scores: oversize samples get their oversize score and
        samples its ``when`` does not match are skipped, both written into ``out``."""
        cap = self.config.limits.max_completion_chars
        skip = set(oversize)
        indices = [i for i, s in enumerate(batch) if i not in skip and comp.routes(s)]
        for i, s in enumerate(batch):
            if i in skip:
                out.put(i, self._oversize_score(s.size, cap))
            elif not comp.routes(s):
                out.put(i, Score.skip("not routed here (when)"))
        return indices

    def _oversize_score(self, length: int, cap: int) -> Score:
        reason = f"completion too large ({length} chars > {cap}); not parsed"
        value = self.config.limits.oversize_value
        if value is None:
            return Score.error(reason)
        return Score(float(value), Status.OK, reason)

    def describe(self, step: int = 0) -> list[dict[str, Any]]:
        """One row per component: reward, mode, weight at ``step``, routing, stage."""
        rows = []
        for name, comp in self.components.items():
            stage = comp.stage_at(step)
            rows.append({
                "component": name,
                "reward": comp.config.reward,
                "mode": str(comp.mode),
                "weight": comp.weight_at(step),
                "weight_spec": comp.weight_spec(),
                "when": comp.when,
                "params": stage.reward.params.model_dump(),
            })
        return rows


def _as_samples(samples: Sequence[Sample | Mapping[str, Any]]) -> list[Sample]:
    """``samples`` as :class:`Sample` objects (dataset rows converted)."""
    if set(map(type, samples)) <= {Sample}:  # the common case, at C speed
        return cast(list[Sample], list(samples))
    return [s if isinstance(s, Sample) else Sample.from_dict(s) for s in samples]


#: the completion's length, read without touching the text (a pass over 65k texts is a
#: pass over memory the rewards are about to read anyway)
_size_of = operator.attrgetter("size")


def group_indices(batch: Sequence[Sample]) -> list[list[int]]:
    """Indices of the samples of each group (:func:`rewardkit.types.group_key`), in
    first-seen order (:func:`rewardkit.types.group_members`)."""
    return group_members(group_key(s) for s in batch)


def _normalized(outcome: Outcome, groups: Sequence[Sequence[int]]) -> list[float | None]:
    values = list(outcome.values)
    for members in groups:
        present = [i for i in members if values[i] is not None]
        if not present:
            continue
        vals = [values[i] for i in present]
        mean = math.fsum(vals) / len(vals)  # type: ignore[arg-type]
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / len(vals))  # type: ignore[operator]
        for i in present:
            values[i] = (values[i] - mean) / (std + NORMALIZE_EPS)  # type: ignore[operator]
    return values


def _aggregate(n: int, used: Mapping[str, list[float | None]], outcomes: Mapping[str, Outcome],
               weights: Mapping[str, float], null_on_error: bool) -> list[float | None]:
    weighted = [name for name in used if weights[name] != 0.0]
    if not weighted:
        return [0.0] * n
    try:
        # the common case: every weighted component has a value for every sample (Scores
        # kept for their details, e.g. math_answer's extracted answer, change nothing);
        # a missing value (None) stops the C-level sum with a TypeError
        return _weighted_sum([used[name] for name in weighted],
                             [weights[name] for name in weighted])
    except TypeError:
        pass
    totals = []
    for i in range(n):
        total = 0.0
        scored = False
        failed = False
        masked = False
        for name in weighted:
            v = used[name][i]
            if v is not None:
                total += weights[name] * v
                scored = True
                continue
            s = outcomes[name].scores.get(i)
            if s is not None and s.status in (Status.ERROR, Status.TIMEOUT):
                failed = True
            elif s is not None and s.details and s.details.get(MASKED):
                masked = True  # on_truncated: mask drops the sample, whatever on_error says
        totals.append(None if (failed and null_on_error) or masked or not scored else total)
    return totals


def _weighted_sum(columns: Sequence[Sequence[float | None]],
                  weights: Sequence[float]) -> list[float | None]:
    """``0.0 + w0 * v0 + w1 * v1 + ...`` per sample, as one chain of C-level ``map``s (no
    generated code, so any number of components works; a weight of 1 multiplies nothing).
    The ``0.0`` start makes a sum of negative zeros 0.0, as the per-sample loop does.
    Raises TypeError where a value is None."""
    acc: Iterable[float] = itertools.repeat(0.0)
    for column, weight in zip(columns, weights, strict=True):
        term: Iterable[Any] = column if weight == 1.0 else map(operator.mul, column,
                                                               itertools.repeat(weight))
        acc = map(operator.add, acc, term)
    return list(acc)


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
    total). Trainer adapters read these; none recomputes them. ``turn_metrics`` is the
    config's: how many turn indices get their own per-turn metrics (:func:`turn_buckets`);
    ``per_turn`` names the components that get them even where no score of this batch has
    turn values (:attr:`RewardSet.per_turn`); ``fallbacks`` the components with a
    ``fallback:``, whose metrics hold ``fallback`` (:mod:`rewardkit.fallback`).
    """

    def __init__(self, step: int, samples: list[Sample], totals: list[float | None],
                 outcomes: dict[str, Outcome], weights: dict[str, float],
                 aggregate: str,
                 normalized: dict[str, list[float | None]] | None = None,
                 turn_metrics: int = TURN_METRICS,
                 per_turn: Iterable[str] = (), fallbacks: Iterable[str] = ()) -> None:
        self.step = step
        self.fallbacks = frozenset(fallbacks)
        self.turn_metrics = turn_metrics
        self.per_turn = frozenset(per_turn)
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
        turns = results[0].turn_metrics if results else TURN_METRICS
        per_turn = frozenset().union(*(res.per_turn for res in results))
        fallbacks = frozenset().union(*(res.fallbacks for res in results))
        return cls(step, [], totals, outcomes, weights, aggregate, normalized, turns, per_turn,
                   fallbacks)

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
        contribution, status counts and rates, latency p50/p95 (ms); for a per-turn
        reward, ``turns`` (:func:`turn_stats`); and the total."""
        n = len(self)
        comps: dict[str, Any] = {}
        for name, out in self.outcomes.items():
            vals = [v for v in out.values if v is not None]
            counts = {str(s): 0 for s in Status}
            for score in out.scores.values():
                counts[str(score.status)] += 1
            counts["ok"] = n - sum(counts[s] for s in ("skipped", "error", "timeout"))
            comps[name] = component_metrics(
                n, _stats(vals), len(vals), self.weights[name], counts,
                latency_total_s=math.fsum(out.latencies), latency_count=len(out.latencies),
                latency_per_sample=out.latency_per_sample, latencies=out.latencies)
            turn_values = turn_values_of(out)
            if turn_values or name in self.per_turn:
                comps[name]["turns"] = turn_stats(turn_sums(turn_values, self.turn_metrics))
            asked = fallback_counts(out)
            if name in self.fallbacks or asked["asked"]:
                comps[name]["fallback"] = fallback_metrics(asked, n)
        totals = [t for t in self.totals if t is not None]
        return {"step": self.step, "samples": n, "components": comps,
                "total": {**_stats(totals), "null": n - len(totals)}}

    def flat_metrics(self, prefix: str = "rewards") -> dict[str, float]:
        """Metrics as flat ``prefix/component/name`` keys for a logger (a per-turn
        reward's: :func:`flat_turn_metrics`)."""
        flat: dict[str, float] = {}
        for name, m in self.metrics["components"].items():
            for key in ("mean", "std", "min", "max", "contribution", "error_rate",
                        "timeout_rate", "skip_rate", "latency_ms_p50", "latency_ms_p95"):
                flat[f"{prefix}/{name}/{key}"] = float(m[key])
            if "turns" in m:
                flat.update(flat_turn_metrics(m["turns"], f"{prefix}/{name}"))
            for key in ("asked_rate", "flip_rate", "error_rate") if "fallback" in m else ():
                flat[f"{prefix}/{name}/fallback_{key}"] = float(m["fallback"][key])
        total = self.metrics["total"]
        for key in ("mean", "std", "min", "max"):
            flat[f"{prefix}/total/{key}"] = float(total[key])
        return flat

    def to_rows(self) -> list[dict[str, Any]]:
        return [self[i].to_dict() for i in range(len(self))]


def component_metrics(samples: int, values: Mapping[str, float], scored: int,
                      weight: float, counts: Mapping[str, int], *, latency_total_s: float,
                      latency_count: int, latency_per_sample: bool,
                      latencies: Sequence[float]) -> dict[str, Any]:
    """One component's entry of :attr:`ScoreResult.metrics` (and of
    :meth:`rewardkit.scoring.metrics.RunningMetrics.metrics`, which accumulates the same
    figures over batches): ``values`` its mean/std/min/max over the ``scored`` values,
    ``counts`` its samples by status out of ``samples``, ``latencies`` the (sampled)
    latencies in seconds for p50 / p95, their mean from ``latency_total_s`` and
    ``latency_count``."""
    def rate(status: str) -> float:
        return (counts[status] / samples) if samples else 0.0

    return {
        **values,
        "weight": weight,
        "contribution": weight * values["mean"] if scored else 0.0,
        "count": dict(counts),
        "error_rate": rate("error"),
        "timeout_rate": rate("timeout"),
        "skip_rate": rate("skipped"),
        "latency_ms_mean": (latency_total_s / latency_count * 1000 if latency_count
                            else 0.0),
        # inline rewards are timed per chunk of samples: their p50/p95 are chunk means,
        # which say nothing of single samples (tables leave them out)
        "latency_per_sample": latency_per_sample,
        "latency_ms_p50": percentile(latencies, 50) * 1000,
        "latency_ms_p95": percentile(latencies, 95) * 1000,
    }


def turn_buckets(turn_metrics: int) -> list[str]:
    """The per-turn metric buckets of a run: each turn index below ``turn_metrics``, then
    ``"<turn_metrics>plus"`` for every later turn. The same on every batch of a run, so a
    logger's keys do not depend on how long the batch's trajectories were."""
    return [*map(str, range(turn_metrics)), f"{turn_metrics}plus"]


#: per bucket of :func:`turn_buckets`, the sum of its values and how many samples gave one
TurnSums = dict[str, list[float]]


def turn_values_of(out: Outcome) -> list[list[float]]:
    """The per-turn values (:data:`rewardkit.trajectory.TURN_VALUES`) of each ok score of
    ``out`` that has them (those are checked against their sample: one finite number per
    assistant turn; a failed score's are not)."""
    found = []
    for score in out.scores.values():
        vals = score.details.get(TURN_VALUES) if score.details else None
        if isinstance(vals, list) and score.status is Status.OK:
            found.append(vals)
    return found


def turn_sums(turn_values: Iterable[Sequence[float]], turn_metrics: int) -> TurnSums:
    """Per bucket of :func:`turn_buckets`, the sum and count of the samples' per-turn
    values. A sample counts once per bucket: in a turn's bucket with its value, in the
    last bucket with the mean of its values from turn ``turn_metrics`` on (so a sample
    with many later turns weighs as much as one with a single one)."""
    buckets = turn_buckets(turn_metrics)
    sums = empty_turn_sums(turn_metrics)
    for vals in turn_values:
        for key, v in zip(buckets, vals[:turn_metrics], strict=False):
            sums[key][0] += float(v)
            sums[key][1] += 1
        later = vals[turn_metrics:]
        if later:
            sums[buckets[-1]][0] += math.fsum(map(float, later)) / len(later)
            sums[buckets[-1]][1] += 1
    return sums


def empty_turn_sums(turn_metrics: int) -> TurnSums:
    """Every bucket of :func:`turn_buckets` with no value in it."""
    return {key: [0.0, 0.0] for key in turn_buckets(turn_metrics)}


def turn_stats(sums: TurnSums) -> dict[str, dict[str, float]]:
    """``{bucket: {"mean", "count"}}`` of :func:`turn_sums` (a bucket no sample reached:
    count 0, mean NaN, as a component's mean without values)."""
    return {key: {"mean": total / count if count else math.nan, "count": int(count)}
            for key, (total, count) in sums.items()}


def flat_turn_metrics(turns: Mapping[str, Mapping[str, float]], prefix: str
                      ) -> dict[str, float]:
    """``prefix/turn_<bucket>/mean`` and ``/count`` for each bucket of :func:`turn_stats`:
    the one spelling of per-turn logger keys (``rewards/valid/turn_2/mean``,
    ``.../turn_8plus/count``)."""
    flat: dict[str, float] = {}
    for key, stats in turns.items():
        flat[f"{prefix}/turn_{key}/mean"] = float(stats["mean"])
        flat[f"{prefix}/turn_{key}/count"] = float(stats["count"])
    return flat


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
