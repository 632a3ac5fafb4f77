"""verl's reward: ``pkg://rewardkit_trainers.rewards.verl`` with ``compute_score`` (sync) or
``compute_score_async`` (``pkg://rewardkit_trainers.rewards.verl`` is the same module).

verl (0.9.x) loads it with ``load_extern_object`` from::

    reward.custom_reward_function.path=pkg://rewardkit_trainers.rewards.verl
    reward.custom_reward_function.name=compute_score          # or compute_score_async

and its reward manager calls ``compute_score(data_source=, solution_str=, ground_truth=,
extra_info=, **reward_kwargs)`` once per response. The result is
``{"score": total, <component>: value, ..., <component>_failed: 0/1}`` with the same keys
on every call (verl stacks them into per-key metrics).

Which config: the ``config`` keyword (``+reward.custom_reward_function.reward_kwargs.config=
/path/rewards.yaml``), else ``extra_info["rewardkit_config"]``, else the
``REWARDKIT_CONFIG`` environment variable. Which step: verl passes none, so ``step``
(reward_kwargs), ``extra_info["global_step"]`` or ``REWARDKIT_STEP`` pins stages and
schedules (default 0); run one job (segment) per stage for staged configs, as for EasyR1.

Lengths in tokens: the overrides select :class:`rewardkit_trainers.rewards.verl_manager.
RewardkitRewardManager` (verl's naive manager plus the response's valid token ids in
``extra_info["response_ids"]``), and ``compute_score`` hands those ids to the rewards as
``metadata["completion_ids"]`` for ``unit: tokens``. Under verl's own ``naive`` manager
there are no ids: ``unit: tokens`` then needs the reward's ``tokenizer`` parameter.

Multi-turn: under ``RewardkitToolAgentLoop`` the manager also puts the rebuilt trajectory
in ``extra_info["rewardkit_trajectory"]`` (:mod:`rewardkit_trainers.rewards.verl_manager`):
the completion becomes its messages and ``tools`` / ``finish_reason`` / ``truncated``
come from it. Those two never come from the dataset row (:data:`ROLLOUT_COLUMNS`).

A failed grading shows ``fallback`` (reward_kwargs ``fallback``, ``REWARDKIT_FALLBACK``,
default 0) in its component's key and sets ``<component>_failed`` to 1; those keys are
metrics. The ``score`` that trains is the total of the components that graded
(``on_error: ignore``, as on the other backends), and the fallback only when none did.
verl scores responses one by one, so what needs a whole group (per-group rewards,
``normalize_then_sum``, ``on_error: null``, which gives a failed row its group's
mean) is refused with a config error
(:func:`rewardkit_trainers.fidelity.check`) at export, at ``rewardkit train`` and when
the reward is first loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardkit import Sample, Status
from rewardkit.text.lengths import COMPLETION_IDS
from rewardkit.trajectory import ROLLOUT_PROBLEM

from rewardkit_trainers.rewards.scoring import SharedScorer

#: the ``extra_info`` key where :mod:`rewardkit_trainers.rewards.verl_manager` puts the
#: response's token ids
RESPONSE_IDS = "response_ids"
#: the agent loop output field where ``RewardkitToolAgentLoop`` records its rollout
ROLLOUT = "rewardkit_rollout"
#: the ``extra_info`` key where the manager puts the rebuilt trajectory (messages, tools,
#: finish_reason, truncated; or problem)
TRAJECTORY = "rewardkit_trajectory"
#: columns that describe how one generation went: from the rollout only, never from the
#: dataset row (a recorded ``finish_reason: stop`` would excuse every truncated rollout)
ROLLOUT_COLUMNS = ("finish_reason", "truncated")
#: ``reward.custom_reward_function.path`` of this module
REWARD_PATH = "pkg://rewardkit_trainers.rewards.verl"
#: the overrides that make verl use that manager
MANAGER_OVERRIDES = {
    "reward.reward_manager.source": "importlib",
    "reward.reward_manager.module.path": "pkg://rewardkit_trainers.rewards.verl_manager",
    "reward.reward_manager.name": "RewardkitRewardManager",
}

_SCORERS: dict[str, SharedScorer] = {}
_LOCK = threading.Lock()


def _scorer(path: str) -> SharedScorer:
    key = str(Path(path).expanduser().resolve())
    with _LOCK:
        scorer = _SCORERS.get(key)
        if scorer is None:
            scorer = SharedScorer(key)
            from rewardkit_trainers.fidelity import check

            check(scorer.config, "verl", key)  # refuses what one response at a time cannot do
            _SCORERS[key] = scorer
        return scorer


def _config_path(config: str | None, extra_info: Mapping[str, Any]) -> str:
    path = config or extra_info.get("rewardkit_config") or os.environ.get("REWARDKIT_CONFIG")
    if not path:
        raise ValueError(
            "rewardkit verl reward: no config; set REWARDKIT_CONFIG=/path/rewards.yaml or "
            "+reward.custom_reward_function.reward_kwargs.config=/path/rewards.yaml"
        )
    return str(path)


def _step(step: int | None, extra_info: Mapping[str, Any]) -> int:
    if step is not None:
        return int(step)
    if extra_info.get("global_step") is not None:
        return int(extra_info["global_step"])
    return int(os.environ.get("REWARDKIT_STEP", "0"))


def _fallback(fallback: float | None) -> float:
    if fallback is not None:
        return float(fallback)
    return float(os.environ.get("REWARDKIT_FALLBACK", "0"))


def compute_score(data_source: Any = None, solution_str: str = "", ground_truth: Any = None,
                  extra_info: Mapping[str, Any] | None = None, *, config: str | None = None,
                  step: int | None = None, fallback: float | None = None,
                  **kwargs: Any) -> dict[str, float]:
    """Score one response with the composed reward; verl's ``custom_reward_function``.

    >>> import os, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.yaml"
    >>> _ = p.write_text("on_error: ignore\\nrewards: {fmt: {reward: soft_format}}")
    >>> compute_score("demo", "<think>a</think><answer>1</answer>", "1", config=str(p))
    {'score': 1.0, 'fmt': 1.0, 'fmt_failed': 0.0}
    """
    info = dict(extra_info or {})
    scorer = _scorer(_config_path(config, info))
    value_on_failure = _fallback(fallback)
    metadata = {k: v for k, v in info.items()
                if k not in ("rewardkit_config", "global_step", "rollout_reward_scores",
                             "metadata", RESPONSE_IDS, ROLLOUT, TRAJECTORY)}
    if info.get(RESPONSE_IDS) is not None:  # the policy's tokens, counted by unit tokens
        metadata[COMPLETION_IDS] = list(info[RESPONSE_IDS])
    if isinstance(info.get("metadata"), str):  # columns packed by `rewardkit train`
        with contextlib.suppress(ValueError):
            metadata.update(json.loads(info["metadata"]))
    for column in ROLLOUT_COLUMNS:
        metadata.pop(column, None)
    metadata["data_source"] = data_source
    completion: Any = solution_str
    trajectory = info.get(TRAJECTORY)
    if isinstance(trajectory, Mapping) and trajectory.get("problem"):
        metadata[ROLLOUT_PROBLEM] = trajectory["problem"]  # trajectory rewards: error
    elif isinstance(trajectory, Mapping):
        completion = list(trajectory["messages"])
        metadata.update({k: trajectory[k] for k in ("tools", *ROLLOUT_COLUMNS)})
    prompt = info.get("prompt", info.get("question", ""))
    sample = Sample(prompt=prompt, completion=completion, reference=ground_truth,
                    metadata=metadata)
    result = scorer.reward_set.score([sample], step=_step(step, info))
    total = result.totals[0]
    out: dict[str, float] = {"score": value_on_failure if total is None else float(total)}
    for name in scorer.names:
        s = result.scores(name)[0]
        failed = s.status in (Status.ERROR, Status.TIMEOUT)
        out[name] = float(s.value) if s.value is not None else (
            value_on_failure if failed else 0.0)
        out[f"{name}_failed"] = 1.0 if failed else 0.0
    return out


async def compute_score_async(data_source: Any = None, solution_str: str = "",
                              ground_truth: Any = None,
                              extra_info: Mapping[str, Any] | None = None,
                              **kwargs: Any) -> dict[str, float]:
    """:func:`compute_score` off the event loop (for verl's async reward loop)."""
    return await asyncio.to_thread(compute_score, data_source, solution_str, ground_truth,
                                   extra_info, **kwargs)


def overrides(config_path: str | Path, step: int | None = None, fallback: float = 0.0,
              use_async: bool = False) -> list[str]:
    """The verl command-line overrides (and environment) that select this reward."""
    path = Path(config_path).resolve()
    lines = [
        f"export REWARDKIT_CONFIG={path}",
        f"reward.custom_reward_function.path={REWARD_PATH}",
        "reward.custom_reward_function.name="
        + ("compute_score_async" if use_async else "compute_score"),
        *[f"{k}={v}" for k, v in MANAGER_OVERRIDES.items()],
    ]
    if step is not None:
        lines.append(f"+reward.custom_reward_function.reward_kwargs.step={step}")
    if fallback:
        lines.append(f"+reward.custom_reward_function.reward_kwargs.fallback={fallback}")
    return lines
