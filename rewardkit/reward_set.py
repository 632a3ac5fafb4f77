"""RewardSet: rewards composed by a config into one reward, and its result.

Where weights are applied, stages chosen, samples routed and components aggregated.

>>> from rewardkit import RewardSet
>>> rs = RewardSet.from_dict({"rewards": {"fmt": {"reward": "soft_format", "weight": 0.5}}})
>>> rs.score([{"prompt": "q", "completion": "<think>a</think><answer>1</answer>"}]).totals
[0.5]
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from rewardkit.authoring import Params, Reward
from rewardkit.config import Component, RewardConfig, load_config, parse_config
from rewardkit.execution import Outcome, mode_for, run_component
from rewardkit.registry import registry
from rewardkit.schedules import Weight, changes_with_step, weight_at
from rewardkit.score_result import ScoreResult
from rewardkit.trajectory import MASKED, settle_component
from rewardkit.types import Sample, Score, Status, group_key

NORMALIZE_EPS = 1e-4
"""Added to a group's standard deviation under ``normalize_then_sum``: a group whose
values are all equal normalises to 0, not to a division by zero."""


@dataclass(frozen=True)
class _Stage:
    until_step: int | None
    reward: Reward
    weight: Weight


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
        self.mode = mode_for(config.mode or cls.mode, config.timeout)
        self.timeout = config.timeout
        self.when = config.when

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
        batch: list[Sample]
        if set(map(type, samples)) <= {Sample}:  # the common case, at C speed
            batch = cast(list[Sample], list(samples))
        else:
            batch = [s if isinstance(s, Sample) else Sample.from_dict(s) for s in samples]
        n = len(batch)
        cap = self.config.limits.max_completion_chars
        longest = max(map(_size_of, batch), default=0)
        oversize = [i for i, s in enumerate(batch) if s.size > cap] if longest > cap else []
        groups: list[list[int]] | None = None
        outcomes: dict[str, Outcome] = {}
        chosen = list(self.components) if components is None else list(components)
        for name in chosen:
            comp = self.components[name]
            out = Outcome(n)
            stage = comp.stage_at(step)
            indices: list[int] | None = None
            if comp.when or oversize:
                skip = set(oversize)
                indices = [i for i, s in enumerate(batch) if i not in skip and comp.routes(s)]
                for i, s in enumerate(batch):
                    if i in skip:
                        out.put(i, self._oversize_score(s.size, cap))
                    elif not comp.routes(s):
                        out.put(i, Score.skip("not routed here (when)"))
            comp_groups = None
            if comp.reward_class.group:
                if groups is None:
                    groups = group_indices(batch)
                allowed = None if indices is None else set(indices)
                comp_groups = [g if allowed is None else [i for i in g if i in allowed]
                               for g in groups]
                comp_groups = [g for g in comp_groups if g]
            run_component(self.config, stage.reward, comp.mode, comp.timeout, batch, indices,
                          comp_groups, out)
            cfg = comp.config
            if out.scores or cfg.on_truncated != "keep":  # per-turn values live in details
                settle_component(out, batch, cfg.on_truncated, cfg.turns, cfg.gamma)
            outcomes[name] = out
        weights = {name: self.components[name].weight_at(step) for name in chosen}
        if self.config.aggregate == "normalize_then_sum":
            if groups is None:
                groups = group_indices(batch)
            used = {name: _normalized(outcomes[name], groups) for name in chosen}
        else:
            used = {name: outcomes[name].values for name in chosen}
        totals = _aggregate(n, used, outcomes, weights, self.config.on_error == "null")
        return ScoreResult(step, batch, totals, outcomes, weights, self.config.aggregate, used)

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


#: the completion's length, read without touching the text (a pass over 65k texts is a
#: pass over memory the rewards are about to read anyway)
_size_of = operator.attrgetter("size")


def group_indices(batch: Sequence[Sample]) -> list[list[int]]:
    """Indices of the samples of each group (:func:`rewardkit.types.group_key`), in
    first-seen order."""
    found: dict[Any, list[int]] = {}
    for i, s in enumerate(batch):
        found.setdefault(group_key(s), []).append(i)
    return list(found.values())


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
