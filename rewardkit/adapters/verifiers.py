"""A rewardkit config as a verifiers ``Rubric``: one reward function per component,
with the component's weight.

verifiers calls each function with the arguments it names (``prompt``, ``completion``,
``answer``, ``info``, ``task``, ``state``), sums them with the rubric's weights into the
rollout's reward and keeps each under the function's name in its metrics. Here each
component becomes a function named after it that scores the rollout with that component
alone (:meth:`RewardSet.score` with ``components=[name]``): a group reward becomes a
verifiers group function (``prompts``, ``completions``, ...), which sees the whole group.
The rollout becomes a rewardkit Sample: ``prompt`` and ``completion`` as they are (chat
messages or text), ``answer`` the reference, ``info`` (a mapping) and ``task`` metadata.

What a Rubric cannot do is refused when it is built (a ConfigError naming the component):
weights that change with the step (stages, schedules), ``normalize_then_sum`` (verifiers
sums the raw values). A sample a component does not apply to (``when``, ``skipped``)
gets 0; a failed grading (``error``, ``timeout``) gets ``fallback`` (default 0, as
verifiers itself answers for a reward function that raises) and is counted in the
rollout's ``state["rewardkit_failed"]`` (the components that failed).

Written against verifiers 0.3.1 (``verifiers.Rubric``, the classic rubric; verifiers 0.4
moved to ``verifiers.v1`` without it). verifiers is imported when a rubric is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardkit.adapters._common import reward_set_of
from rewardkit.config import ConfigError
from rewardkit.reward_set import RewardSet
from rewardkit.types import Sample

FAILED_KEY = "rewardkit_failed"


def _plain(messages: Any) -> Any:
    """verifiers messages (dicts, or pydantic messages) as plain chat dicts."""
    if isinstance(messages, str) or messages is None:
        return messages or ""
    return [m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else dict(m)
            for m in messages]


def _sample(prompt: Any, completion: Any, answer: Any, info: Any, task: Any) -> Sample:
    metadata: dict[str, Any] = {}
    if isinstance(info, Mapping):
        metadata.update(info)
    if isinstance(task, str) and task:
        metadata.setdefault("task", task)
    return Sample(prompt=_plain(prompt), completion=_plain(completion),
                  reference=answer if answer != "" else None, metadata=metadata)


def _refuse_what_a_rubric_cannot_do(reward_set: RewardSet) -> None:
    problems: list[tuple[str, str]] = []
    if reward_set.config.aggregate == "normalize_then_sum":
        problems.append(("aggregate", "a verifiers Rubric sums the raw values with fixed "
                         "weights; normalize_then_sum has no place there (use weighted_sum)"))
    for name in reward_set.names:
        if reward_set.is_scheduled(name):
            problems.append((f"rewards.{name}", "its weight or stage changes with the step; "
                             "a verifiers Rubric has one fixed weight per function"))
    if problems:
        raise ConfigError("verifiers rubric", problems)


def _value(score: Any, fallback: float, state: Any, name: str) -> float:
    if score.status == "skipped":
        return 0.0
    if score.value is None:
        if isinstance(state, dict):
            state.setdefault(FAILED_KEY, []).append(name)
        return fallback
    return float(score.value)


def reward_functions(config: RewardSet | str | Path | Mapping[str, Any],
                     fallback: float = 0.0) -> tuple[list[Callable[..., Any]], list[float]]:
    """The rubric's functions and weights for ``config`` (a RewardSet, a config file or a
    mapping), in the config's order; a ConfigError for what a rubric cannot do."""
    reward_set = reward_set_of(config)
    _refuse_what_a_rubric_cannot_do(reward_set)
    funcs: list[Callable[..., Any]] = []
    for name in reward_set.names:
        if reward_set.components[name].reward_class.group:
            funcs.append(_group_function(reward_set, name, fallback))
        else:
            funcs.append(_sample_function(reward_set, name, fallback))
    weights = [reward_set.weights(0)[name] for name in reward_set.names]
    return funcs, weights


def _sample_function(reward_set: RewardSet, name: str,
                     fallback: float) -> Callable[..., float]:
    def score(prompt: Any, completion: Any, answer: Any = "", info: Any = None,
              task: Any = None, state: Any = None) -> float:
        result = reward_set.score([_sample(prompt, completion, answer, info, task)],
                                  components=[name])
        return _value(result[0].scores[name], fallback, state, name)

    score.__name__ = score.__qualname__ = name
    return score


def _group_function(reward_set: RewardSet, name: str,
                    fallback: float) -> Callable[..., list[float]]:
    def score(prompts: Sequence[Any], completions: Sequence[Any],
              answers: Sequence[Any], infos: Sequence[Any] | None = None,
              tasks: Sequence[Any] | None = None,
              states: Sequence[Any] | None = None) -> list[float]:
        n = len(completions)
        samples = [_sample(prompts[i], completions[i], answers[i],
                           infos[i] if infos else None, tasks[i] if tasks else None)
                   for i in range(n)]
        for sample in samples:
            sample.group = "verifiers-group"  # verifiers hands one prompt's group
        result = reward_set.score(samples, components=[name])
        return [_value(result[i].scores[name], fallback, states[i] if states else None,
                       name) for i in range(n)]

    score.__name__ = score.__qualname__ = name
    return score


def rubric_from_config(config: RewardSet | str | Path | Mapping[str, Any],
                       fallback: float = 0.0, **rubric_kwargs: Any) -> Any:
    """A ``verifiers.Rubric`` scoring with ``config``'s components and weights."""
    try:
        import verifiers
    except ImportError as exc:
        raise RuntimeError("the verifiers adapter needs verifiers (0.3.x, which has "
                           "verifiers.Rubric): pip install 'verifiers>=0.3,<0.4'") from exc
    rubric_class = getattr(verifiers, "Rubric", None)
    if rubric_class is None:
        raise RuntimeError(f"verifiers {getattr(verifiers, '__version__', '?')} has no "
                           "verifiers.Rubric (0.4 moved to verifiers.v1): "
                           "pip install 'verifiers>=0.3,<0.4'")
    funcs, weights = reward_functions(config, fallback)
    return rubric_class(funcs=funcs, weights=weights, **rubric_kwargs)
