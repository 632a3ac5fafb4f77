"""One scoring pass per batch, shared by the per-component callables of an adapter.

Trainers call one reward function per component (TRL, ms-swift), but a
:class:`~rewardkit.RewardSet` scores best in one pass (process pools, group rewards,
``on_error`` across components). :class:`SharedScorer` scores the whole batch the first
time any component asks and hands the other components the same result.

It pickles as its config (not its reward instances, locks or worker pools), so the
callables holding it survive ``pickle``/``deepcopy`` as trainers require.
"""

from __future__ import annotations

import hashlib
import json
import math
import pprint
import threading
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardkit import RewardSet, Sample, ScoreResult, Status
from rewardkit.config import RewardConfig, load_config, parse_config
from rewardkit.reward_set import flat_turn_metrics
from rewardkit.types import group_members

#: keyword arguments trainers pass that are not dataset columns
TRAINER_KWARGS = frozenset({
    "prompts", "completions", "completion_ids", "trainer_state", "log_metric", "log_extra",
    "environments",
})


def load_reward_config(config: str | Path | Mapping[str, Any] | RewardConfig) -> RewardConfig:
    """A validated reward config from a path, a dict or a config."""
    if isinstance(config, RewardConfig):
        return config
    if isinstance(config, Mapping):
        return parse_config(config)
    return load_config(config)


class SharedScorer:
    """Scores a batch once for all components; picklable.

    >>> scorer = SharedScorer({"rewards": {"fmt": {"reward": "soft_format"}}})
    >>> scorer.score([Sample("q", "<think>a</think><answer>1</answer>")], step=0).values("fmt")
    [1.0]
    """

    def __init__(self, config: str | Path | Mapping[str, Any] | RewardConfig) -> None:
        self.config = load_reward_config(config)
        self._reward_set: RewardSet | None = None
        self._last: tuple[str, ScoreResult] | None = None
        self._lock = threading.Lock()

    @property
    def reward_set(self) -> RewardSet:
        if self._reward_set is None:
            self._reward_set = RewardSet(self.config)
        return self._reward_set

    @property
    def names(self) -> list[str]:
        return list(self.config.rewards)

    def score(self, samples: Sequence[Sample], step: int) -> ScoreResult:
        """Score ``samples`` at ``step``, reusing the result of an identical last call."""
        key = _fingerprint(samples, step)
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
            result = self.reward_set.score(samples, step=step)
            self._last = (key, result)
            return result

    def null_rows(self, result: ScoreResult) -> set[int]:
        """Rows whose total is null because a weighted component failed (``on_error: null``).

        Adapters return None for *every* component of these rows, so that a trainer
        that masks a row only when all its rewards are missing (TRL) masks them.
        """
        if self.config.on_error != "null":
            return set()
        rows = set()
        for i, total in enumerate(result.totals):
            if total is not None:
                continue
            if any(result.outcomes[name].score(i).status in (Status.ERROR, Status.TIMEOUT)
                   for name in result.outcomes if result.weights[name] != 0.0):
                rows.add(i)
        return rows

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config.model_dump(mode="json")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(RewardConfig.model_validate(state["config"]))  # type: ignore[misc]


def _fingerprint(samples: Sequence[Sample], step: int) -> str:
    """What makes two calls the same batch: everything a reward reads. The completion
    itself, not its scored text (two rollouts with the same final answer and different
    tool calls are different samples), and the group (per-group rewards read it)."""
    digest = hashlib.sha1(str(step).encode())
    for s in samples:
        digest.update(json.dumps([s.prompt, s.completion, s.reference, s.metadata,
                                  s.group], default=str, sort_keys=True).encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def component_metrics(result: ScoreResult, name: str, prefix: str = "rewards") -> dict[str, float]:
    """Status rates, latency and weight of one component, as flat logger keys; for a
    per-turn reward also each turn bucket's ``turn_<t>/count`` (every batch) and
    ``turn_<t>/mean`` (:func:`rewardkit.reward_set.flat_turn_metrics`).

    A bucket no sample reached has no mean key in that batch rather than a NaN: the
    trainers average a key's values over the logging window (ms-swift 4.x with a plain
    ``sum / len``, TRL's ``log_metric`` summing across ranks first), where one NaN would
    blank the window's value; its count of 0 is logged.
    """
    m = result.metrics["components"][name]
    metrics = {
        f"{prefix}/{name}/weight": float(m["weight"]),
        f"{prefix}/{name}/error_rate": float(m["error_rate"]),
        f"{prefix}/{name}/timeout_rate": float(m["timeout_rate"]),
        f"{prefix}/{name}/skip_rate": float(m["skip_rate"]),
        f"{prefix}/{name}/latency_ms_p50": float(m["latency_ms_p50"]),
        f"{prefix}/{name}/latency_ms_p95": float(m["latency_ms_p95"]),
    }
    if "turns" in m:
        metrics.update((key, value) for key, value in
                       flat_turn_metrics(m["turns"], f"{prefix}/{name}").items()
                       if not math.isnan(value))
    return metrics


def global_step(trainer_state: Any) -> int:
    """The step a trainer state reports (0 without one): ``trainer_state.global_step``
    (TRL, ms-swift) or ``trainer_state["global_step"]``."""
    if trainer_state is None:
        return 0
    if isinstance(trainer_state, Mapping):
        return int(trainer_state.get("global_step", 0) or 0)
    return int(getattr(trainer_state, "global_step", 0) or 0)


def config_literal(config: RewardConfig) -> str:
    """The reward part of ``config`` as a Python literal, for generated plugin files."""
    data = config.model_dump(mode="json")  # plugin sections are not fields of it
    return pprint.pformat(data, indent=1, width=88, sort_dicts=False)


def neutralise_failed_rows(values: Sequence[float | None], groups: Sequence[Hashable],
                           failed: set[int]) -> list[float | None]:
    """One component's values with every failed row set to its group's mean, ``groups``
    being each row's :func:`rewardkit.types.group_key` (grouped as the scoring groups
    them: :func:`rewardkit.types.group_members`).

    For trainers whose advantage is ``total - mean(group total)`` over *every* row and whose
    reward function can mask no row (ms-swift ``--scale_rewards group``, EasyR1 GRPO), a
    missing value would train as 0 with a real advantage. A failed row given, for every
    component, the mean of the group's other rows (a value that does not apply counts as
    0, as the trainers' ``nansum`` does) has the group's mean total, so its advantage is 0
    (up to the trainer's float32 rounding) and the group mean the other rows are compared
    with is unchanged. It is not a mask: it stays in the group's standard deviation. With
    ``k`` graded rows of ``n``, the sum of squared deviations is the graded rows' alone
    but is divided by ``n - 1`` instead of ``k - 1`` (both trainers use the sample std), so
    every graded row's advantage is ``sqrt((n - 1) / (k - 1))`` times what a mask would
    give (1.22 for one failed row in a group of 4; :func:`imputed_group_share` says how
    many rows that touches). A group with no graded row gets 0 everywhere.
    """
    out = list(values)
    if not failed:
        return out
    for idx in group_members(groups):
        graded = [float(values[i] or 0.0) for i in idx if i not in failed]
        # a tie keeps its value exactly (fsum(3 * [0.7]) / 3 is not 0.7): with the group's
        # std at 0, one float32 step off the mean would be an advantage of about 0.05
        # under EasyR1's 1e-6 epsilon
        tie = graded and all(v == graded[0] for v in graded)
        mean = graded[0] if tie else math.fsum(graded) / len(graded) if graded else 0.0
        for i in idx:
            if i in failed:
                out[i] = mean
    return out


def imputed_group_share(groups: Sequence[Hashable], failed: set[int]) -> float:
    """The share of graded rows whose group holds a row imputed by
    :func:`neutralise_failed_rows`: the rows whose advantage that imputation scales up.

    0.0 when nothing failed or nothing graded.

    >>> imputed_group_share(["a", "a", "a", "b"], {2})
    0.6666666666666666
    """
    graded = touched = 0
    for idx in group_members(groups):
        rows = len(idx) - sum(i in failed for i in idx)
        graded += rows
        if rows < len(idx):
            touched += rows
    return touched / graded if graded else 0.0


def gather_across_ranks(local: list[Sample]) -> tuple[list[Sample], int]:
    """The samples of every rank (rank order) and where this rank's rows start.

    Trainers score each rank's share of a batch, and one prompt's completions may be split
    across ranks; per-group rewards and normalisation need the whole group. Every rank
    calls the reward functions in the same order, so a collective here lines up.
    Without an initialised ``torch.distributed`` group of more than one rank, ``local``
    itself and 0.
    """
    try:
        import torch.distributed as dist
    except ImportError:
        return local, 0
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return local, 0
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, local)
    rank = dist.get_rank()
    start = sum(len(p) for p in parts[:rank])
    return [s for part in parts for s in part], start
