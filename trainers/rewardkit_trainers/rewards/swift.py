"""ms-swift's reward: one ORM per component, registered through ``--external_plugins``.

``rewardkit export swift CONFIG -o plugin.py`` writes a small plugin file that embeds the
validated config and calls :func:`register_orms`, which registers one ``ORM`` subclass
per component in ms-swift's ORM table (4.x ``swift.rewards.orms``, 3.x
``swift.plugin.orm.orms``) under ``rewardkit_<component>``. The class is named after the
component, so ms-swift logs ``rewards/<component>/mean``.

How ms-swift calls it (4.x ``swift.rl_core.grpo_algorithm.compute_rewards_per_func``):
``orm(completions, trainer_state=..., messages=..., prompt_id=..., solution=...,
<other dataset columns>...)`` where ``completions`` is the list of completion texts.

* Stages follow ``trainer_state.global_step``.
* Lengths in tokens: ``response_token_ids`` (the rollout's ids of the completion; the
  last turn's in a multi-turn rollout) become ``metadata["completion_ids"]``, which
  ``unit: tokens`` counts.
* Weights: ms-swift's ``--reward_weights`` are fixed for the run, so a component whose
  weight changes with the step gets ``--reward_weights 1`` and its ORM returns
  ``weight(step) x value`` (its logged mean is then its weighted contribution).
* Whole groups: ms-swift scores each rank's share of the batch, and a prompt's
  completions may be split across ranks. Under ``torch.distributed`` every ORM gathers
  the samples of all ranks (``all_gather_object``; every rank calls the ORMs in the same
  order), scores the whole batch once, and returns its own rank's rows, so group
  rewards and normalisation see whole groups (same ``prompt_id``).
* ``normalize_then_sum``: ms-swift has no per-function normalisation under its default
  ``--scale_rewards group``, so each ORM returns its values standardised within the
  group, exactly as :meth:`rewardkit.RewardSet.score` does.
* Failed grading (``on_error: null``): ms-swift sums with ``nansum`` and subtracts a
  plain group mean, so a missing value would train as 0 with a real advantage, and its
  GRPO advantage has no path that leaves a row out (no NaN handling, no per-row weight
  or loss mask a reward function can set). Every component of a failed row returns the
  group's mean instead (:func:`~rewardkit_trainers.rewards.scoring.neutralise_failed_rows`):
  the row's total is the group mean, its advantage 0 up to float32 rounding, and the
  group's other rows get ``sqrt((n - 1) / (k - 1))`` times the advantage a mask would
  give (``k`` graded rows of ``n``; ms-swift divides by the sample std). The share of
  graded rows so scaled is logged as ``rewards/imputed_group_share``.
* Status rates: ms-swift 4.x has no ``log_metric`` for reward functions; the ORMs
  record each component's error/timeout/skip rates and latency, and the
  :class:`RewardMetricsCallback` (registered in ms-swift's callback table by the plugin,
  passed as ``--callbacks rewardkit_metrics``) adds them to every log line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit import Sample
from rewardkit.config import RewardConfig
from rewardkit.text.lengths import COMPLETION_IDS
from rewardkit.types import group_key

from rewardkit_trainers.rewards.scoring import (
    SharedScorer,
    component_metrics,
    config_literal,
    gather_across_ranks,
    global_step,
    imputed_group_share,
    neutralise_failed_rows,
)

#: kwargs ms-swift passes that are neither prompt nor dataset metadata
_SWIFT_INTERNAL = frozenset({
    "trainer_state", "messages", "prompt_id", "request_id", "response_token_ids",
    "rollout_infos", "trajectory_inputs", "log_metric", "log_extra", "completions",
    "chat_template_kwargs",
})


def func_name(component: str) -> str:
    """The ``--reward_funcs`` name of a component."""
    return "rewardkit_" + re.sub(r"\W", "_", component)


@dataclass
class SwiftRewards:
    """What ms-swift needs: the ORM names, their weights, and the plugin file."""

    plugin: Path
    names: list[str]
    weights: list[float]

    def arguments(self) -> list[str]:
        """``--external_plugins ... --reward_funcs ... --reward_weights ... --callbacks``."""
        return ["--external_plugins", str(self.plugin),
                "--reward_funcs", *[func_name(n) for n in self.names],
                "--reward_weights", *[_num(w) for w in self.weights],
                "--callbacks", METRICS_CALLBACK]


def _num(w: float) -> str:
    return str(int(w)) if float(w).is_integer() else repr(float(w))


def swift_weights(scorer: SharedScorer) -> list[float]:
    """``--reward_weights``: the constant weights; 1 where the ORM applies the schedule."""
    rs = scorer.reward_set
    w0 = rs.weights(0)
    return [1.0 if rs.is_scheduled(name) else float(w0[name]) for name in scorer.names]


def export_plugin(config: RewardConfig, config_path: Path | None, out: Path) -> SwiftRewards:
    """Write the ``--external_plugins`` file for ``config`` to ``out``.

    The file embeds the validated config (the training machine need not have the
    config file); it needs rewardkit, rewardkit-trainers and the config's reward plugins.
    """
    source = str(config_path.resolve()) if config_path else "<config>"
    text = _PLUGIN_TEMPLATE.format(source=source, config=config_literal(config))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    scorer = SharedScorer(config)
    return SwiftRewards(out.resolve(), scorer.names, swift_weights(scorer))


_PLUGIN_TEMPLATE = '''\
"""ms-swift reward plugin generated by `rewardkit export swift` from {source}.

Use with:  swift rlhf --rlhf_type grpo --external_plugins THIS_FILE --reward_funcs ...
Needs rewardkit and rewardkit-trainers (and the config's reward plugins) installed.
"""

from rewardkit_trainers.rewards.swift import register_metrics_callback, register_orms

CONFIG = {config}

ORMS = register_orms(CONFIG)
register_metrics_callback()  # --callbacks rewardkit_metrics: error/timeout rates in the logs
'''


def orm_table() -> tuple[type, dict[str, Any]]:
    """ms-swift's ORM base class and ORM registry, for 4.x or 3.x."""
    try:
        from swift.rewards import ORM, orms  # ms-swift 4.x
    except ImportError:
        try:
            from swift.plugin.orm import ORM, orms  # ms-swift 3.x
        except ImportError as exc:
            raise ImportError("ms-swift is not installed (pip install ms-swift)") from exc
    return ORM, orms


def register_orms(config: Mapping[str, Any] | RewardConfig | str | Path) -> dict[str, type]:
    """Register one ORM class per component in ms-swift's table; returns them by name."""
    base, table = orm_table()
    scorer = SharedScorer(config)
    made: dict[str, type] = {}
    for name in scorer.names:
        adapter = SwiftComponent(scorer, name)

        def __init__(self: Any, args: Any = None, _adapter: SwiftComponent = adapter,
                     **kwargs: Any) -> None:
            base.__init__(self, args, **kwargs)  # type: ignore[misc]
            self.adapter = _adapter

        def __call__(self: Any, completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
            return self.adapter(completions, **kwargs)

        cls = type(name if name.isidentifier() else func_name(name), (base,), {
            "__init__": __init__, "__call__": __call__, "component": name,
            "__doc__": f"rewardkit component {name!r}", "__module__": __name__,
        })
        table[func_name(name)] = cls
        made[func_name(name)] = cls
    return made


class SwiftComponent:
    """The scoring behind one component's ORM (picklable, holds no ms-swift object)."""

    def __init__(self, scorer: SharedScorer, name: str, reference_column: str = "solution") -> None:
        self.scorer = scorer
        self.name = name
        self.reference_column = reference_column
        self._scheduled: bool | None = None

    @property
    def scheduled(self) -> bool:
        if self._scheduled is None:
            self._scheduled = self.scorer.reward_set.is_scheduled(self.name)
        return self._scheduled

    def __call__(self, completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        step = global_step(kwargs.get("trainer_state"))
        local = swift_samples(completions, kwargs, self.reference_column)
        samples, start = gather_across_ranks(local)
        result = self.scorer.score(samples, step)
        # normalised as the aggregate did (normalize_then_sum); weighted here only when
        # the weight moves with the step (ms-swift's --reward_weights are fixed)
        values = list(result.contributions(self.name) if self.scheduled
                      else result.normalized(self.name))
        groups = [group_key(s) for s in samples]
        failed = self.scorer.null_rows(result)
        values = neutralise_failed_rows(values, groups, failed)
        metrics = component_metrics(result, self.name)
        if self.scorer.config.on_error == "null" and self.name == self.scorer.names[0]:
            metrics[IMPUTED_SHARE] = imputed_group_share(groups, failed)  # once per batch
        for key, value in metrics.items():
            PENDING_METRICS.setdefault(key, []).append(value)
        return values[start:start + len(local)]


#: the logged share of graded rows whose group held an imputed (failed) row: the rows
#: whose advantage the imputation scales up by sqrt((n - 1) / (k - 1))
IMPUTED_SHARE = "rewards/imputed_group_share"


#: status rates, latency and weight of every component, one value per scored batch since
#: the last log step (drained by the ``rewardkit_metrics`` callback)
PENDING_METRICS: dict[str, list[float]] = {}


def metrics_callback_class() -> type:
    """The ms-swift callback that hands :data:`PENDING_METRICS` to the trainer's metrics.

    ms-swift (4.x) builds the callbacks named by ``--callbacks`` from its
    ``swift.callbacks.callbacks_map`` with ``(args, trainer)``. At the end of each step the
    callback appends the pending values to the GRPO trainer's ``_metrics["train"]``, which
    ms-swift averages into the next log line (console, ``logging.jsonl``, TensorBoard),
    as it does for its own ``rewards/<func>/mean``. A trainer without that store gets
    the values added to the log line itself (``on_log``).
    """
    from swift.callbacks import TrainerCallback

    class RewardMetricsCallback(TrainerCallback):
        """Logs rewardkit's per-component error/timeout/skip rates, latency and weight."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            store = getattr(self.trainer, "_metrics", None)
            if not isinstance(store, dict) or "train" not in store:
                return
            for key, values in drain_metrics().items():
                store["train"][key].extend(values)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                   **kwargs: Any) -> None:
            if isinstance(logs, dict):
                for key, values in drain_metrics().items():
                    logs[key] = sum(values) / len(values)

    return RewardMetricsCallback


def drain_metrics() -> dict[str, list[float]]:
    """The pending per-batch metric values, emptied."""
    out = {k: list(v) for k, v in PENDING_METRICS.items() if v}
    PENDING_METRICS.clear()
    return out


def register_metrics_callback() -> bool:
    """Register :func:`metrics_callback_class` as ``rewardkit_metrics`` in ms-swift's
    callback table; False where this ms-swift has none (3.x)."""
    try:
        from swift.callbacks import callbacks_map
    except ImportError:
        return False
    callbacks_map[METRICS_CALLBACK] = metrics_callback_class()
    return True


METRICS_CALLBACK = "rewardkit_metrics"


def swift_samples(completions: Sequence[Any], kwargs: Mapping[str, Any],
                  reference_column: str = "solution") -> list[Sample]:
    """Samples from ms-swift's reward-function arguments."""
    n = len(completions)
    messages = kwargs.get("messages")
    prompt_ids = kwargs.get("prompt_id")
    token_ids = kwargs.get("response_token_ids")
    refs = kwargs.get(reference_column)
    if refs is None and reference_column != "reference":
        refs = kwargs.get("reference")
    meta_cols = {k: v for k, v in kwargs.items()
                 if k not in _SWIFT_INTERNAL and k not in (reference_column, "reference")
                 and isinstance(v, list | tuple) and len(v) == n}
    samples = []
    for i in range(n):
        prompt: Any = ""
        if isinstance(messages, list | tuple) and i < len(messages) and messages[i]:
            turns = list(messages[i])
            prompt = turns[:-1] if turns[-1].get("role") == "assistant" else turns
        sample = Sample(prompt=prompt, completion=completions[i],
                        reference=refs[i] if isinstance(refs, list | tuple) else None,
                        metadata={k: v[i] for k, v in meta_cols.items()})
        if isinstance(prompt_ids, list | tuple) and i < len(prompt_ids):
            sample.group = prompt_ids[i]
        if isinstance(token_ids, list | tuple) and len(token_ids) == n:
            ids = _last_turn_ids(token_ids[i])
            if ids is not None:  # the policy's own tokens, counted by unit tokens
                sample.metadata[COMPLETION_IDS] = ids
        samples.append(sample)
    return samples


def _last_turn_ids(ids: Any) -> list[int] | None:
    """The token ids of the completion ms-swift scores (its last assistant turn).

    ms-swift 4.x hands each row's ``response_token_ids``: ``[]`` when the rollout kept
    none, the completion's ids, or one list per turn in a multi-turn rollout (the
    completion text is the last turn's).
    """
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if not isinstance(ids, list | tuple) or not ids:
        return None
    if isinstance(ids[-1], list | tuple):
        return list(ids[-1]) or None
    return list(ids)
