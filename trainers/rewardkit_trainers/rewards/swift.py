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
* Multi-turn and tool rollouts (``--multi_turn_scheduler``): ms-swift hands each row's
  whole ``messages`` (tool calls as the agent template's text in the assistant content,
  earlier assistant turns as token ids, the scheduler's ``tool`` messages), its
  ``tools`` column, the last turn's ``finish_reason`` and ``rollout_infos``.
  :func:`rollout_completion` turns the turns ms-swift generated into OpenAI-shape
  messages: ids decoded and calls parsed with the trainer's own template (its tokenizer
  and agent template, the parser ms-swift's engine fills ``tool_calls`` with), which the
  ``rewardkit_metrics`` callback hands over; results only from ``tool`` messages, never
  from assistant text. Where that cannot be done faithfully, the completion stays the
  final text, so the trajectory rewards say status error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit import Sample
from rewardkit.config import RewardConfig
from rewardkit.text.lengths import COMPLETION_IDS
from rewardkit.trajectory import ROLLOUT_PROBLEM, TRUNCATED_REASONS, rollout_end
from rewardkit.types import group_key

from rewardkit_trainers.environments import hoist_workspace
from rewardkit_trainers.rewards.scoring import (
    SharedScorer,
    component_metrics,
    config_literal,
    gather_across_ranks,
    global_step,
    imputed_group_share,
    neutralise_failed_rows,
)

#: kwargs ms-swift passes that are neither prompt nor dataset metadata (``is_truncated``
#: is ``finish_reason == "length"``, False when the finish reason is unknown: the
#: trajectory reads ``finish_reason`` itself; ``trajectory_inputs`` is keyed by request,
#: not a column)
_SWIFT_INTERNAL = frozenset({
    "trainer_state", "messages", "prompt_id", "request_id", "response_token_ids",
    "trajectory_inputs", "log_metric", "log_extra", "completions", "chat_template_kwargs",
    "is_truncated",
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


def register_orms(config: Mapping[str, Any] | RewardConfig | str | Path,
                  agent_template: str | None = None) -> dict[str, type]:
    """Register one ORM class per component in ms-swift's table; returns them by name.

    ``agent_template`` (a name of ms-swift's ``agent_template_map``) parses tool calls out
    of assistant text where the trainer's template is not handed over (no
    ``--callbacks rewardkit_metrics``); by default the trainer's own is used.
    """
    base, table = orm_table()
    scorer = SharedScorer(config)
    made: dict[str, type] = {}
    for name in scorer.names:
        adapter = SwiftComponent(scorer, name, agent_template=agent_template)

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

    def __init__(self, scorer: SharedScorer, name: str, reference_column: str = "solution",
                 agent_template: str | None = None) -> None:
        self.scorer = scorer
        self.name = name
        self.reference_column = reference_column
        self.agent_template = agent_template
        self._scheduled: bool | None = None

    @property
    def scheduled(self) -> bool:
        if self._scheduled is None:
            self._scheduled = self.scorer.reward_set.is_scheduled(self.name)
        return self._scheduled

    def __call__(self, completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        step = global_step(kwargs.get("trainer_state"))
        local = swift_samples(completions, kwargs, self.reference_column,
                              rollout_reader(self.agent_template))
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
        """Logs rewardkit's per-component error/timeout/skip rates, latency and weight,
        and hands the ORMs the trainer's template (:func:`use_trainer_template`)."""

        def __init__(self, args: Any, trainer: Any) -> None:
            super().__init__(args, trainer)
            use_trainer_template(trainer)

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
                  reference_column: str = "solution",
                  reader: RolloutReader | None = None) -> list[Sample]:
    """Samples from ms-swift's reward-function arguments; with a ``reader``, each
    completion is the conversation ms-swift generated (:func:`rollout_completion`)."""
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
    infos = kwargs.get("rollout_infos")
    samples = []
    for i in range(n):
        prompt: Any = ""
        completion: Any = completions[i]
        problem = None
        if isinstance(messages, list | tuple) and i < len(messages) and messages[i]:
            turns = list(messages[i])
            prompt = turns[:-1] if turns[-1].get("role") == "assistant" else turns
            if reader is not None:
                got = rollout_completion(turns, _row(token_ids, i, n), _row(infos, i, n),
                                         reader, _row(kwargs.get("tools"), i, n))
                if got is not None:
                    prompt, completion = got
                else:
                    problem = ("ms-swift's messages do not fit its response_token_ids / "
                               "rollout_infos (a continuation-style scheduler, or turns "
                               "as token ids without a tokenizer)")
            else:
                problem = ("no agent template reached the ORMs (the rewardkit_metrics "
                           "callback hands over the trainer's; register_orms(..., "
                           "agent_template=...) without it): no tool call can be parsed")
        sample = Sample(prompt=prompt, completion=completion,
                        reference=refs[i] if isinstance(refs, list | tuple) else None,
                        metadata={k: v[i] for k, v in meta_cols.items()})
        if problem is not None and isinstance(completion, str):
            sample.metadata[ROLLOUT_PROBLEM] = problem
        hoist_workspace(sample.metadata, "rollout_infos")  # the scheduler's environment
        reasons = kwargs.get("finish_reason")
        if isinstance(reasons, list | tuple):
            # the rollout's own finish reason decides; a dataset column of that name
            # describes some earlier rollout
            sample.metadata.pop("truncated", None)
            reason = reasons[i] if len(reasons) == n else None
            if isinstance(completion, list) and isinstance(reason, str):
                # the one rule of every backend: ms-swift's finish reason is the last
                # turn's ("stop" when max_turns ended the rollout on a call it never ran)
                sample.metadata.update(rollout_end(
                    completion, reason.strip().lower() in TRUNCATED_REASONS))
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


# -- multi-turn and tool rollouts --------------------------------------------------------

@dataclass
class RolloutReader:
    """How ms-swift's messages are read back: the agent template whose ``get_toolcall``
    parses tool calls out of assistant text (what ms-swift's engine fills
    ``response_choice.message.tool_calls`` with, so the calls are the ones a scheduler
    acting on them executed) and the tokenizer that decodes the assistant turns ms-swift
    keeps as token ids (None: such a rollout cannot be read)."""

    agent_template: Any
    tokenizer: Any = None


#: the trainer whose template the ORMs read rollouts with (set by the callback)
_TRAINER: list[Any] = []


def use_trainer_template(trainer: Any) -> None:
    """Read rollouts with ``trainer.template`` (its agent template and tokenizer), the
    template ms-swift itself encodes and generates with; the ``rewardkit_metrics``
    callback calls this with the trainer ms-swift builds it for."""
    _TRAINER[:] = [trainer]


def rollout_reader(agent_template: str | None = None) -> RolloutReader | None:
    """The reader of this process: the trainer's template (its agent template unless
    ``agent_template`` names another); None when there is no agent template to parse
    calls with (the completions then stay text)."""
    template = getattr(_TRAINER[0], "template", None) if _TRAINER else None
    tokenizer = getattr(template, "tokenizer", None)
    if agent_template is not None:
        from swift.agent_template import agent_template_map

        return RolloutReader(agent_template_map[agent_template](), tokenizer)
    if template is None:
        return None
    try:
        parser = template.agent_template
    except (ValueError, KeyError):  # ms-swift matched no agent template to this template
        return None
    parser.template_meta = template.template_meta  # as ms-swift does before using it
    return RolloutReader(parser, tokenizer)


def rollout_completion(messages: list[Any], ids: Any, info: Any, reader: RolloutReader,
                       tools: Any = None) -> tuple[list[Any], list[dict[str, Any]]] | None:
    """(prompt, completion) of one ms-swift row: the completion is the turns ms-swift
    generated as OpenAI-shape messages, or None where they cannot be read faithfully.

    The generated turns are the last ``n`` assistant messages and what follows the first
    of them, ``n`` as ms-swift counts them (:func:`_generated_turns`); the assistant turns
    before (a prompt's history) stay prompt. ``tool_call`` messages (ms-swift's dataset
    role for a call, folded by its template into the assistant turn before them) are that
    turn's calls. None when a scheduler continued inside one assistant message
    (``num_turns`` above the turns with ids: the environment's text is spliced into the
    policy's, so no result or call can be told apart), the messages hold fewer assistant
    turns than ms-swift generated, a turn is token ids without a tokenizer to decode
    them, or a ``tool_call`` message holds no call.
    """
    positions = [j for j, m in enumerate(messages)
                 if isinstance(m, Mapping) and m.get("role") == "assistant"]
    num_turns = info.get("num_turns") if isinstance(info, Mapping) else None
    generated = _generated_turns(ids, num_turns)
    if generated is None or not 0 < generated <= len(positions):
        return None
    first = positions[-generated]
    completion: list[Any] = []
    previous_role = None
    for message in messages[first:]:
        role = message.get("role") if isinstance(message, Mapping) else None
        made = [c.get("id") for t in completion if isinstance(t, dict)
                and t.get("role") == "assistant" for c in t.get("tool_calls", ())]
        if role == "assistant":
            turn = _assistant_message(message, reader, tools, len(made))
        elif role == "tool_call":
            turn = _recorded_call(completion, message, previous_role == "assistant")
        elif role in ("tool", "tool_response"):
            turn = {**message, "role": "tool"}
            if turn.get("tool_call_id") not in made:
                # the engine's ids (random per parse) are not the ones made here: the
                # result answers its call by name, else in order
                turn.pop("tool_call_id", None)
        else:  # another role, or no message: the trajectory reports it as a problem
            turn = dict(message) if isinstance(message, Mapping) else message
        if turn is None:
            return None
        if not (completion and turn is completion[-1]):
            completion.append(turn)
        previous_role = role
    return list(messages[:first]), completion


def _generated_turns(ids: Any, num_turns: Any = None) -> int | None:
    """How many assistant messages ms-swift generated: one per ``response_token_ids``
    list (the count its trainer re-encodes from the end as the policy's); without ids,
    its ``rollout_infos["num_turns"]`` (one generation per turn; a scheduler continuing
    inside a message cannot be seen there), and one when no scheduler ran (ms-swift
    appends the single response). None for a continuation seen in the ids."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, list | tuple) and ids:
        nested = isinstance(ids[-1], list | tuple)
        turns = len(ids) if nested else 1
        if nested and isinstance(num_turns, int) and num_turns > turns:
            return None  # continuation: environment text inside the assistant turn
        return turns
    return num_turns if isinstance(num_turns, int) else 1


def _recorded_call(completion: list[Any], message: Mapping[str, Any],
                   after_assistant: bool) -> dict[str, Any] | None:
    """A ``tool_call`` message read as ms-swift's template reads it: its call (parsed by
    the agent template's ``_parse_tool_call``) belongs to the assistant turn it follows
    (directly, or after other ``tool_call`` messages), in place of the calls parsed from
    that turn's text (a scheduler records the calls it ran, which that parse found), else
    it makes an assistant turn of its own. Returns the turn (the last of ``completion``,
    extended, or a new one), or None when the message holds no call."""
    from swift.agent_template.base import BaseAgentTemplate

    try:
        call = BaseAgentTemplate._parse_tool_call(message.get("content"))
    except Exception:  # ms-swift's own parse fails: no call can be read
        return None
    previous = completion[-1] if completion else None
    if isinstance(previous, dict) and previous.get("role") == "assistant":
        turn = previous
        if after_assistant:  # the first of the run: it replaces the text's parse
            turn.pop("tool_calls", None)
    else:
        turn = {"role": "assistant", "content": ""}
    calls = turn.setdefault("tool_calls", [])
    made = sum(len(t.get("tool_calls", ())) for t in completion
               if isinstance(t, dict) and t is not turn)
    arguments = call["arguments"]
    calls.append({"id": f"call_{made + len(calls)}", "type": "function", "function": {
        "name": call["name"], "arguments": arguments if isinstance(arguments, str)
        else json.dumps(arguments, ensure_ascii=False)}})
    return turn


def _assistant_message(message: Mapping[str, Any], reader: RolloutReader,
                       tools: Any, first_id: int) -> dict[str, Any] | None:
    """One generated assistant turn in the OpenAI shape: its text (decoded when ms-swift
    kept it as token ids) and the calls ms-swift's agent template finds in it."""
    from swift.template.utils import get_token_backed_response_ids

    content = message.get("content")
    ids = get_token_backed_response_ids(content)
    if ids is not None:
        if reader.tokenizer is None:
            return None
        content = reader.tokenizer.decode(ids, skip_special_tokens=False)
    if content is None:
        content = ""
    if not isinstance(content, str):
        return None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if message.get("tool_calls"):  # a scheduler that wrote them in the OpenAI shape
        out["tool_calls"] = message["tool_calls"]
        return out
    calls = _calls_in(reader.agent_template, content, tools, first_id)
    if calls:
        out["tool_calls"] = calls
    return out


def _calls_in(parser: Any, text: str, tools: Any, first_id: int = 0) -> list[dict[str, Any]]:
    """The calls in ``text`` as ms-swift's engine parses them
    (``InferEngine._get_toolcall``: the agent template's ``get_toolcall``, the offered
    tools passed where the template takes them, nothing when it raises); ids
    ``call_<n>`` from ``first_id`` on."""
    import inspect

    kwargs: dict[str, Any] = {}
    if getattr(parser, "supports_tool_schema", False):
        try:
            inspect.signature(parser.get_toolcall).bind(text, tools=None)
            kwargs["tools"] = _wrapped_tools(parser, tools)
        except (TypeError, ValueError):
            pass
    try:
        functions = parser.get_toolcall(text, **kwargs) or []
    except Exception:  # ms-swift's engine treats a parser failure as no call
        return []
    return [{"id": f"call_{first_id + k}", "type": "function",
             "function": {"name": f.name, "arguments": f.arguments}}
            for k, f in enumerate(functions)]


def _wrapped_tools(parser: Any, tools: Any) -> Any:
    """The tools as ms-swift's template hands them to the parser (JSON text parsed, each
    one through the agent template's ``wrap_tool``)."""
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except ValueError:
            return None
    if not isinstance(tools, list | tuple):
        return None
    return [parser.wrap_tool(t) if isinstance(t, Mapping) else t for t in tools]


def _row(column: Any, i: int, n: int) -> Any:
    """Row ``i`` of a reward-kwargs column of ``n`` rows; None when it is no such column."""
    return column[i] if isinstance(column, list | tuple) and len(column) == n else None
