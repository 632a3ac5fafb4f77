"""TRL's reward: one reward callable per component for ``trl.GRPOTrainer``.

Each callable is named after its component, so TRL logs ``rewards/<component>/mean``;
the component weights go to ``GRPOConfig(reward_weights=...)``; the aggregation maps
onto ``multi_objective_aggregation`` (``weighted_sum`` -> ``sum_then_normalize``,
``normalize_then_sum`` -> ``normalize_then_sum``). Stages (params by step) follow
``trainer_state.global_step`` inside the callables; weight schedules move
``trainer.reward_weights`` at the start of every step through a callback
(:meth:`TRLRewards.attach`). A reward function cannot reach the trainer (TRL passes it
only ``trainer_state``, the calling trainer's ``TrainerState``), so the attach callback
records the live ``TrainerState`` of each trainer it was added to (at attach, at
``on_train_begin``, which comes after ``train()`` makes a new state or loads a
checkpoint's, and at every ``on_step_begin``), and a callable of a scheduled config
called with any other ``TrainerState`` (a trainer ``attach`` never saw, such as a second
GRPOTrainer built with the same callables) raises :class:`ScheduleNotAttached` on that
first call rather than train on the step-0 weights while the logged weight moves. A
call without a ``TrainerState`` (a direct call) needs ``attach`` on some trainer. Failed
gradings are ``None`` (TRL turns them into NaN and leaves them out of the sums and
means); status rates, latency and the current weight of each component go through TRL's
``log_metric``.

Tool and environment rollouts (``GRPOTrainer(tools=...)`` / ``environment_factory=``)
reach the rewards as trajectories: TRL's completion messages (assistant ``tool_calls``,
the ``role: tool`` results its loop appended, a failed call's result marked ``status:
error``), the ``tools`` schemas TRL rendered into the prompt, and ``finish_reason`` /
``truncated`` derived from ``completion_ids`` (see :class:`TRLRollout`). A reward
function sees neither the trainer nor its tools, so :meth:`TRLRewards.attach` reads them
off the trainer; before it, the rollout fields are unknown and the rewards that need them
say status error.

Usage::

    from trl import GRPOConfig, GRPOTrainer
    from rewardkit_trainers.rewards.trl import trl_rewards

    rewards = trl_rewards("rewards.yaml")
    args = GRPOConfig(output_dir="out", **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=..., reward_funcs=rewards.funcs, args=args, train_dataset=ds)
    rewards.attach(trainer)   # always: weight schedules, tools and EOS ids of the rollout
    trainer.train()

No TRL import happens at module import time.
"""

from __future__ import annotations

import ast
import sys
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from rewardkit import Sample
from rewardkit.config import RewardConfig
from rewardkit.text.lengths import COMPLETION_IDS
from rewardkit.trajectory import rollout_end

from rewardkit_trainers.environments import apply_environments
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


def _is_trainer_state(value: Any) -> bool:
    """Whether ``value`` is a ``transformers.TrainerState`` (what a Trainer passes; no
    transformers import when none was made)."""
    module = sys.modules.get("transformers.trainer_callback")
    cls = getattr(module, "TrainerState", None)
    return cls is not None and isinstance(value, cls)


#: metadata a TRL generation sets (:class:`TRLRollout`); a dataset column of that name
#: describes the dataset's own rollout, not this generation, and never reaches a reward
ROLLOUT_KEYS = ("finish_reason", "truncated")


@dataclass(frozen=True)
class TRLRollout:
    """What GRPOTrainer generated with, read off the trainer by :meth:`of` (picklable:
    schemas and ids, no trainer).

    ``tools`` are the JSON schemas TRL rendered into every prompt (transformers'
    ``get_json_schema`` of each callable, as ``apply_chat_template`` computes them);
    ``env_tools`` those of each ``environment_factory`` class (its methods and the
    standalone tools), looked up by the ``environments`` TRL passes. ``finish_reason`` is
    derived from TRL's own completion ids, which end at the first EOS (transformers) or
    at the length budget: ``stop`` when the last id is an EOS id and the last message
    asks for no tool; ``length`` when the last id is not an EOS id, or when TRL's tool
    loop dropped a tool result that would overrun ``max_completion_length`` (the last
    assistant message's calls stay unanswered) or truncated the generation after a tool
    result to nothing (the completion ends on the result); ``tool_calls`` when the loop
    stopped at ``max_tool_calling_iterations`` with calls unanswered (the rule of
    :func:`rewardkit.trajectory.rollout_end`, every backend's). ``truncated`` is true for
    ``length``, and for ``tool_calls`` when the trainer has tools (the rollout was cut
    before its answer). With a ``rollout_func``, its own ``finish_reason`` / ``truncated``
    fields win."""

    tools: tuple[dict[str, Any], ...] = ()
    env_tools: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    eos_token_ids: frozenset[int] = frozenset()
    max_tool_calling_iterations: int | None = None
    rollout_func: bool = False

    @classmethod
    def of(cls, trainer: Any) -> TRLRollout:
        """The rollout settings of a ``trl.GRPOTrainer``."""
        import sys

        env_tools: dict[str, tuple[dict[str, Any], ...]] = {}
        for name, instances in (getattr(trainer, "_environment_pool", None) or {}).items():
            per_name = (getattr(trainer, "_env_tools", None) or {}).get(name)
            if instances and per_name is not None:
                env_tools[_class_key(type(instances[0]))] = tool_schemas(per_name)
        limit = getattr(trainer, "max_tool_calling_iterations", None)
        # what TRL itself counts as stopped (its clipped ratio, mask_truncated_completions):
        # an end-of-sequence id or the pad id
        stops = {int(i) for i in getattr(trainer, "eos_token_ids", ())}
        tokenizer = getattr(trainer, "_tokenizer", None) or getattr(trainer, "processing_class",
                                                                    None)
        pad = getattr(tokenizer, "pad_token_id", None)
        if stops and isinstance(pad, int):
            stops.add(pad)
        return cls(
            tools=tool_schemas(getattr(trainer, "tools", None) or []),
            env_tools=env_tools,
            eos_token_ids=frozenset(stops),
            max_tool_calling_iterations=None if limit in (None, sys.maxsize) else int(limit),
            rollout_func=getattr(trainer, "rollout_func", None) is not None)

    def tools_for(self, environment: Any = None) -> tuple[dict[str, Any], ...] | None:
        """The schemas one rollout was offered (None: no tools, or unknown)."""
        if environment is not None and self.env_tools:
            return self.env_tools.get(_class_key(type(environment)))
        return self.tools or None

    def finish(self, completion: Any, ids: Sequence[int] | None) -> dict[str, Any]:
        """``finish_reason`` and ``truncated`` of one completion ({} when unknown)."""
        if ids is None or not self.eos_token_ids:
            return {}
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        if not ids:
            return {}
        messages = completion if isinstance(completion, list) else []
        last = messages[-1] if messages and isinstance(messages[-1], Mapping) else {}
        # TRL's own signals of a budget cut: the last id is no EOS id; the tool loop
        # dropped a result that would overrun max_completion_length (the last calls stay
        # unanswered below the iteration limit); or it truncated the generation after a
        # result to nothing (the completion ends on the result)
        cut = ids[-1] not in self.eos_token_ids or last.get("role") == "tool"
        if not cut and last.get("role") == "assistant" and last.get("tool_calls") \
                and self.has_tools:
            rounds = sum(1 for m, n in pairwise(messages)
                         if isinstance(m, Mapping) and m.get("tool_calls")
                         and isinstance(n, Mapping) and n.get("role") == "tool")
            limit = self.max_tool_calling_iterations
            cut = limit is None or rounds < limit
        # the one rule of every backend (rewardkit.trajectory.rollout_end); no tools in
        # the trainer: a call nothing answers, not a cut
        return rollout_end(messages, cut, tools_run=self.has_tools)

    @property
    def has_tools(self) -> bool:
        return bool(self.tools or self.env_tools)


def tool_schemas(tools: Sequence[Any]) -> tuple[dict[str, Any], ...]:
    """The JSON schemas of TRL's tools as the chat template renders them: a dict as
    given, a function or method through transformers' ``get_json_schema``."""
    if not tools:
        return ()
    from transformers.utils import get_json_schema

    return tuple(dict(t) if isinstance(t, Mapping) else get_json_schema(t) for t in tools)


def _class_key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def trl_messages(completion: Any) -> Any:
    """TRL's completion messages in the shape the trajectory reads: a copy, with each
    tool result TRL's loop wrote for a failed call (``str({"error": ...})``, Python's
    repr, not JSON) marked ``status: error``."""
    if not isinstance(completion, list):
        return completion
    out = []
    for message in completion:
        if isinstance(message, Mapping) and message.get("role") == "tool" \
                and _is_error_repr(message.get("content")):
            message = {**message, "status": "error"}
        out.append(message)
    return out


def _is_error_repr(content: Any) -> bool:
    if not isinstance(content, str) or not content.startswith("{'error'"):
        return False
    try:
        parsed = ast.literal_eval(content)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return isinstance(parsed, dict) and list(parsed) == ["error"]


def apply_rollout(samples: Sequence[Sample], rollout: TRLRollout | None,
                  completion_ids: Sequence[Any] | None,
                  environments: Sequence[Any] | None = None) -> None:
    """Set each sample's trajectory fields from TRL's rollout, in place: the completion
    messages (:func:`trl_messages`), the ``tools`` offered (the trainer's; a dataset's
    ``tools`` column only when the trainer has none) and ``finish_reason`` /
    ``truncated`` (:meth:`TRLRollout.finish`). Without a ``rollout`` (no
    :meth:`TRLRewards.attach`) finish and truncation are unknown: a dataset's columns of
    those names are dropped, never read as this generation's."""
    ids = completion_ids if completion_ids is not None and \
        len(completion_ids) == len(samples) else None
    for i, sample in enumerate(samples):
        sample.completion = trl_messages(sample.completion)
        supplied = {k: sample.metadata.pop(k) for k in ROLLOUT_KEYS if k in sample.metadata}
        if rollout is None:
            continue
        environment = environments[i] if environments is not None and \
            i < len(environments) else None
        tools = rollout.tools_for(environment)
        if tools is not None:
            sample.metadata["tools"] = list(tools)
        if rollout.rollout_func and supplied:
            sample.metadata.update(supplied)  # the rollout function's own fields
        else:
            sample.metadata.update(rollout.finish(sample.completion,
                                                  ids[i] if ids is not None else None))


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
    trainer_state=, log_metric=, environments=, **dataset_columns)``; returns one value
    per completion, ``None`` where the component failed to grade or does not apply.
    """

    def __init__(self, scorer: SharedScorer, name: str,
                 reference_column: str = "reference") -> None:
        self.scorer = scorer
        self.name = name
        self.__name__ = name
        self.reference_column = reference_column
        #: set by :meth:`TRLRewards.attach`; checked on every call of a scheduled config
        #: that comes without a TrainerState
        self.attached = False
        #: the live TrainerState of each trainer attach added its callback to (weak: a
        #: finished trainer is not kept alive); checked on every call of a scheduled config
        self._states: list[weakref.ref[Any]] = []
        self.scheduled = any(scorer.reward_set.is_scheduled(n) for n in scorer.names)
        #: what the trainer generated with, set by :meth:`TRLRewards.attach`
        self.rollout: TRLRollout | None = None

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 completion_ids: Any = None, trainer_state: Any = None,
                 log_metric: Callable[[str, float], None] | None = None,
                 environments: Sequence[Any] | None = None,
                 **columns: Any) -> list[float | None]:
        if self.scheduled and not self.attached_to(trainer_state):
            which = ("a GRPOTrainer that rewards.attach never saw (attach moves the "
                     "weights of the trainers it was given, not of every trainer using "
                     "these callables)" if self.attached else "no attached trainer")
            raise ScheduleNotAttached(
                f"reward {self.name!r}: called by {which}. This config has a weight that "
                "changes with the step, and GRPOTrainer applies trainer.reward_weights, "
                "which a reward function cannot set; without rewards.attach(trainer) it "
                "would train on the step-0 weights. Call rewards.attach(trainer) "
                "(REWARDS.attach(trainer) with an exported module) for every GRPOTrainer "
                "built with these rewards, after building it and before trainer.train(), "
                "or use `rewardkit train`.")
        step = global_step(trainer_state)
        local = build_samples(prompts, completions, columns, self.reference_column,
                              completion_ids)
        apply_rollout(local, self.rollout, completion_ids, environments)
        apply_environments(local, environments)  # each rollout's workspace, in-process
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

    def attached_to(self, trainer_state: Any) -> bool:
        """Whether the trainer whose ``trainer_state`` this is was attached: a
        ``TrainerState`` must be one recorded by :meth:`bind_state`; anything else (a
        direct call) needs :meth:`TRLRewards.attach` on some trainer."""
        if _is_trainer_state(trainer_state):
            return any(ref() is trainer_state for ref in self._states)
        return self.attached

    def bind_state(self, state: Any) -> None:
        """Record ``state`` as the live ``TrainerState`` of an attached trainer."""
        self._states = [ref for ref in self._states if ref() is not None]
        if not any(ref() is state for ref in self._states):
            self._states.append(weakref.ref(state))

    def __getstate__(self) -> dict[str, Any]:
        # weak references do not pickle; a copy in another process is checked anew
        return {**self.__dict__, "_states": []}

    def __repr__(self) -> str:
        return f"ComponentReward({self.name!r})"


@dataclass
class TRLRewards:
    """Everything GRPOTrainer needs from a composed reward."""

    funcs: list[ComponentReward]
    scorer: SharedScorer

    @property
    def components(self) -> list[ComponentReward]:
        """The component callables of ``funcs``: a trainer may append its own to the list
        it was given (TRL adds an environment's ``get_reward`` to ``reward_funcs``)."""
        return [f for f in self.funcs if isinstance(f, ComponentReward)]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.components]

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
        """Read what ``trainer`` generates with (:class:`TRLRollout`: its tools' schemas,
        EOS ids, tool-loop limit) for the trajectory fields, add the callback that moves
        ``trainer.reward_weights`` with the schedule, and set the trainer's weights to
        those at its current step now.

        Returns the callback (None when no weight changes with the step). Until this is
        called, the callables of a scheduled config raise :class:`ScheduleNotAttached`,
        and ``finish_reason`` / ``truncated`` / the trainer's ``tools`` are unknown.
        """
        rollout = TRLRollout.of(trainer)
        for func in self.components:
            func.rollout = rollout
        if not self.scheduled:
            return None
        callback = make_weight_callback(trainer, self)
        trainer.add_callback(callback)
        callback.apply(trainer.state.global_step)
        for func in self.components:
            func.attached = True
        self.bind_state(trainer.state)
        return callback

    def bind_state(self, state: Any) -> None:
        """Record ``state`` as an attached trainer's live ``TrainerState`` in every
        callable (the callback calls this whenever its trainer's state may be new)."""
        for func in self.components:
            func.bind_state(state)


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
            current = trainer.reward_weights
            # an environment's get_reward is TRL's own column after ours: its weight stays
            weights = torch.cat([torch.tensor(rewards.weights(step), dtype=torch.float32),
                                 current[len(rewards.names):].detach().cpu().float()])
            trainer.reward_weights = weights.to(current.device)

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            # train() made a new TrainerState (or loaded a checkpoint's) before this
            rewards.bind_state(state)

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            rewards.bind_state(state)
            self.apply(state.global_step)

    return RewardWeightSchedule()


_MODULE_TEMPLATE = '''\
"""TRL reward functions generated by `rewardkit export trl` from {source}.

    from trl import GRPOConfig, GRPOTrainer
    from {stem} import REWARDS, grpo_kwargs, reward_funcs

    args = GRPOConfig(output_dir="out", **grpo_kwargs)
    trainer = GRPOTrainer(model=..., reward_funcs=reward_funcs, args=args, train_dataset=...)
    REWARDS.attach(trainer)   # always: weight schedules, tools and EOS ids of the rollout
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
