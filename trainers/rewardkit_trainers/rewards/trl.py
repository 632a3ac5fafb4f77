"""TRL's reward: one reward callable per component for ``trl.GRPOTrainer``.

Each callable is named after its component, so TRL logs ``rewards/<component>/mean``;
the component weights go to ``GRPOConfig(reward_weights=...)``; the aggregation maps
onto ``multi_objective_aggregation`` (``weighted_sum`` -> ``sum_then_normalize``,
``normalize_then_sum`` -> ``normalize_then_sum``). Stages (params by step) follow
``trainer_state.global_step`` inside the callables; weight schedules move
``trainer.reward_weights`` at the start of every step through a callback
(:meth:`TRLRewards.attach`). A reward function cannot reach the trainer (TRL passes it
only ``trainer_state``), so a scheduled config whose callables are called before
``attach`` raises :class:`ScheduleNotAttached` on the first call rather than train on
the step-0 weights while the logged weight moves. Failed gradings are ``None`` (TRL
turns them into NaN and leaves them out of the sums and means); status rates, latency
and the current weight of each component go through TRL's ``log_metric``.

Usage::

    from trl import GRPOConfig, GRPOTrainer
    from rewardkit_trainers.rewards.trl import trl_rewards

    rewards = trl_rewards("rewards.yaml")
    args = GRPOConfig(output_dir="out", **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=..., reward_funcs=rewards.funcs, args=args, train_dataset=ds)
    rewards.attach(trainer)   # required when a weight changes with the step
    trainer.train()

No TRL import happens at module import time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit import Sample
from rewardkit.config import RewardConfig
from rewardkit.text.lengths import COMPLETION_IDS

from rewardkit_trainers.rewards.scoring import (
    TRAINER_KWARGS,
    SharedScorer,
    component_metrics,
    config_literal,
    gather_across_ranks,
    global_step,
)

#: rewardkit aggregate -> TRL GRPOConfig.multi_objective_aggregation
AGGREGATION = {"weighted_sum": "sum_then_normalize", "normalize_then_sum": "normalize_then_sum"}


class ScheduleNotAttached(RuntimeError):
    """A scheduled weight was about to train frozen at its step-0 value: the callables
    were called by a trainer that :meth:`TRLRewards.attach` never saw."""


def build_samples(prompts: Sequence[Any], completions: Sequence[Any],
                  columns: Mapping[str, Any], reference_column: str,
                  completion_ids: Sequence[Any] | None = None) -> list[Sample]:
    """Samples from a trainer's reward-function arguments.

    ``columns`` are the dataset columns as lists (one value per completion); the
    reference column becomes ``Sample.reference``, the others ``Sample.metadata``.
    ``completion_ids`` (the policy's token ids of each completion) go to
    ``metadata["completion_ids"]``, where rewards with ``unit: tokens`` count them.
    """
    n = len(completions)
    meta_cols = {k: v for k, v in columns.items()
                 if k not in TRAINER_KWARGS and isinstance(v, list | tuple) and len(v) == n}
    refs = meta_cols.pop(reference_column, None)
    samples = []
    for i in range(n):
        samples.append(Sample(
            prompt=prompts[i] if i < len(prompts) else "",
            completion=completions[i],
            reference=refs[i] if refs is not None else None,
            metadata={k: v[i] for k, v in meta_cols.items()},
        ))
    if completion_ids is not None and len(completion_ids) == n:
        for sample, ids in zip(samples, completion_ids, strict=True):
            sample.metadata[COMPLETION_IDS] = ids.tolist() if hasattr(ids, "tolist") \
                else list(ids)
    return samples


class ComponentReward:
    """TRL reward function for one component of a composed reward (picklable).

    Called by ``GRPOTrainer`` as ``f(prompts=, completions=, completion_ids=,
    trainer_state=, log_metric=, **dataset_columns)``; returns one value per completion,
    ``None`` where the component failed to grade or does not apply.
    """

    def __init__(self, scorer: SharedScorer, name: str,
                 reference_column: str = "reference") -> None:
        self.scorer = scorer
        self.name = name
        self.__name__ = name
        self.reference_column = reference_column
        #: set by :meth:`TRLRewards.attach`; checked on every call of a scheduled config
        self.attached = False
        self.scheduled = any(scorer.reward_set.is_scheduled(n) for n in scorer.names)

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 completion_ids: Any = None, trainer_state: Any = None,
                 log_metric: Callable[[str, float], None] | None = None,
                 **columns: Any) -> list[float | None]:
        if self.scheduled and not self.attached:
            raise ScheduleNotAttached(
                f"reward {self.name!r}: this config has a weight that changes with the "
                "step, and GRPOTrainer applies trainer.reward_weights, which a reward "
                "function cannot set; without rewards.attach(trainer) it would train on "
                "the step-0 weights. Call rewards.attach(trainer) (REWARDS.attach(trainer) "
                "with an exported module) after building GRPOTrainer and before "
                "trainer.train(), or use `rewardkit train`.")
        step = global_step(trainer_state)
        local = build_samples(prompts, completions, columns, self.reference_column,
                              completion_ids)
        samples, start = gather_across_ranks(local)  # whole groups for per-group rewards
        result = self.scorer.score(samples, step)
        values = list(result.values(self.name))
        for i in self.scorer.null_rows(result):
            values[i] = None
        values = values[start:start + len(local)]
        if log_metric is not None:
            for key, value in component_metrics(result, self.name).items():
                log_metric(key, value)
        return values

    def __repr__(self) -> str:
        return f"ComponentReward({self.name!r})"


@dataclass
class TRLRewards:
    """Everything GRPOTrainer needs from a composed reward."""

    funcs: list[ComponentReward]
    scorer: SharedScorer

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.funcs]

    def weights(self, step: int = 0) -> list[float]:
        """``reward_weights`` at ``step``, in ``funcs`` order."""
        w = self.scorer.reward_set.weights(step)
        return [float(w[name]) for name in self.names]

    @property
    def aggregation(self) -> str:
        return AGGREGATION[self.scorer.config.aggregate]

    @property
    def scheduled(self) -> bool:
        """Whether any weight changes with the step (then :meth:`attach` is needed)."""
        rs = self.scorer.reward_set
        return any(rs.is_scheduled(name) for name in self.names)

    def grpo_kwargs(self) -> dict[str, Any]:
        """``GRPOConfig`` keyword arguments: ``reward_weights``, and
        ``multi_objective_aggregation`` when it is not TRL's default (so the weighted-sum
        case also works with TRLs older than that option)."""
        kwargs: dict[str, Any] = {"reward_weights": self.weights(0)}
        if self.aggregation != "sum_then_normalize":
            kwargs["multi_objective_aggregation"] = self.aggregation
        return kwargs

    def attach(self, trainer: Any) -> Any:
        """Add the callback that moves ``trainer.reward_weights`` with the schedule, and
        set the trainer's weights to those at its current step now.

        Returns the callback (None when no weight changes with the step). Until this is
        called, the callables of a scheduled config raise :class:`ScheduleNotAttached`.
        """
        if not self.scheduled:
            return None
        callback = make_weight_callback(trainer, self)
        trainer.add_callback(callback)
        callback.apply(trainer.state.global_step)
        for func in self.funcs:
            func.attached = True
        return callback


def trl_rewards(config: str | Path | Mapping[str, Any] | RewardConfig,
                reference_column: str = "reference") -> TRLRewards:
    """Reward callables (one per component) for ``trl.GRPOTrainer`` from a config."""
    scorer = SharedScorer(config)
    funcs = [ComponentReward(scorer, name, reference_column) for name in scorer.names]
    return TRLRewards(funcs, scorer)


def make_weight_callback(trainer: Any, rewards: TRLRewards) -> Any:
    """A ``transformers.TrainerCallback`` setting ``trainer.reward_weights`` each step."""
    import torch
    from transformers import TrainerCallback

    class RewardWeightSchedule(TrainerCallback):
        """Sets GRPOTrainer.reward_weights to the composed reward's weights at the step."""

        def apply(self, step: int) -> None:
            """Set the trainer's weights to those at ``step``."""
            weights = torch.tensor(rewards.weights(step), dtype=torch.float32)
            current = trainer.reward_weights
            trainer.reward_weights = weights.to(current.device)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.apply(state.global_step)

    return RewardWeightSchedule()


_MODULE_TEMPLATE = '''\
"""TRL reward functions generated by `rewardkit export trl` from {source}.

    from trl import GRPOConfig, GRPOTrainer
    from {stem} import REWARDS, grpo_kwargs, reward_funcs

    args = GRPOConfig(output_dir="out", **grpo_kwargs)
    trainer = GRPOTrainer(model=..., reward_funcs=reward_funcs, args=args, train_dataset=...)
    REWARDS.attach(trainer)   # required when a weight has a schedule
    trainer.train()
"""

from rewardkit_trainers.rewards.trl import trl_rewards

CONFIG = {config}

#: the dataset column that becomes Sample.reference (train.dataset.reference_column)
REFERENCE_COLUMN = {reference_column!r}

REWARDS = trl_rewards(CONFIG, reference_column=REFERENCE_COLUMN)
reward_funcs = REWARDS.funcs
grpo_kwargs = REWARDS.grpo_kwargs()
'''


def export_module(config_path: str | Path, out: Path) -> Path:
    """Write a Python module exposing ``reward_funcs`` and ``grpo_kwargs`` for ``config``.

    The reference column is the config's ``train.dataset.reference_column`` (``reference``
    when the config has no ``train:`` section), as ``rewardkit train`` uses it.
    """
    from rewardkit.config import load_config

    config = load_config(config_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_MODULE_TEMPLATE.format(
        source=Path(config_path).resolve(), stem=out.stem, config=config_literal(config),
        reference_column=reference_column_of(config, config_path)), encoding="utf-8")
    return out


def reference_column_of(config: RewardConfig, source: str | Path = "<config>") -> str:
    """The dataset column holding the ground truth: ``train.dataset.reference_column``."""
    train = config.section("train")
    if train is None:
        return "reference"
    return str(train.dataset.reference_column)
