"""verl adapter: ``pkg://rewardkit_trainers.verl`` with ``compute_score`` (sync) or
``compute_score_async``.

verl (0.9.x) loads it with ``load_extern_object`` from::

    reward.custom_reward_function.path=pkg://rewardkit_trainers.verl
    reward.custom_reward_function.name=compute_score          # or compute_score_async

and its reward manager calls ``compute_score(data_source=, solution_str=, ground_truth=,
extra_info=, **reward_kwargs)`` once per response. The result is
``{"score": total, <component>: value, ..., <component>_failed: 0/1}`` with the same keys
on every call (verl stacks them into per-key metrics).

Which config: the ``config`` keyword (``+reward.custom_reward_function.reward_kwargs.config=
/path/rewards.yaml``), else ``extra_info["rewardkit_config"]``, else the
``REWARDKIT_CONFIG`` environment variable. Which step: verl passes none, so ``step``
(reward_kwargs), ``extra_info["global_step"]`` or ``REWARDKIT_STEP`` pins stages and
schedules (default 0); run one job per stage for staged configs, as for EasyR1.

Lengths in tokens: the overrides select :class:`rewardkit_trainers.verl_manager.
RewardkitRewardManager` (verl's naive manager plus the response's valid token ids in
``extra_info["response_ids"]``), and ``compute_score`` hands those ids to the rewards as
``metadata["completion_ids"]`` for ``unit: tokens``. Under verl's own ``naive`` manager
there are no ids: ``unit: tokens`` then needs the reward's ``tokenizer`` parameter.

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
from typing import TYPE_CHECKING, Any

from rewardkit import Sample, Status
from rewardkit.lengths import COMPLETION_IDS

from rewardkit_trainers.scoring import SharedScorer

if TYPE_CHECKING:
    from rewardkit_trainers.runner import Job, RunPlan

#: the ``extra_info`` key where :mod:`rewardkit_trainers.verl_manager` puts the
#: response's token ids
RESPONSE_IDS = "response_ids"
#: the overrides that make verl use that manager
MANAGER_OVERRIDES = {
    "reward.reward_manager.source": "importlib",
    "reward.reward_manager.module.path": "pkg://rewardkit_trainers.verl_manager",
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
                             "metadata", RESPONSE_IDS)}
    if info.get(RESPONSE_IDS) is not None:  # the policy's tokens, counted by unit tokens
        metadata[COMPLETION_IDS] = list(info[RESPONSE_IDS])
    if isinstance(info.get("metadata"), str):  # columns packed by `rewardkit train`
        with contextlib.suppress(ValueError):
            metadata.update(json.loads(info["metadata"]))
    metadata["data_source"] = data_source
    prompt = info.get("prompt", info.get("question", ""))
    sample = Sample(prompt=prompt, completion=solution_str, reference=ground_truth,
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
        "reward.custom_reward_function.path=pkg://rewardkit_trainers.verl",
        "reward.custom_reward_function.name="
        + ("compute_score_async" if use_async else "compute_score"),
        *[f"{k}={v}" for k, v in MANAGER_OVERRIDES.items()],
    ]
    if step is not None:
        lines.append(f"+reward.custom_reward_function.reward_kwargs.step={step}")
    if fallback:
        lines.append(f"+reward.custom_reward_function.reward_kwargs.fallback={fallback}")
    return lines


def verl_overrides(plan: RunPlan, train_file: Path, val_file: Path, start: int,
                   end: int | None, checkpoints: Path, experiment: str) -> list[str]:
    """Hydra overrides of ``verl.trainer.main_ppo`` for one job (verl 0.9.x names).

    The batch is :meth:`RunPlan.batch`: ``data.train_batch_size`` and the actor's
    ``ppo_mini_batch_size`` are both ``batch_size`` prompts (one optimizer step per
    rollout batch; verl multiplies the mini-batch by ``rollout.n`` and divides it over
    the data-parallel GPUs), and ``ppo_micro_batch_size_per_gpu`` is the per-device
    micro-batch in completions, so gradient accumulation is
    ``gradient_accumulation_steps``. ``deepspeed``: ``zero3`` is FSDP
    ``reshard_after_forward: true`` (FULL_SHARD), ``zero2`` false (SHARD_GRAD_OP).
    Prompts longer than ``max_prompt_length`` are left out
    (``data.filter_overlong_prompts``), as on the other backends."""
    t = plan.train
    batch = plan.batch()
    per_gpu = 2  # log-prob micro batches: memory only; tune through extra_args
    args = {
        "algorithm.adv_estimator": "grpo",
        "algorithm.use_kl_in_reward": False,
        "data.train_files": str(train_file),
        "data.val_files": str(val_file),
        "data.prompt_key": "prompt",
        "data.train_batch_size": batch.prompts,
        "data.max_prompt_length": t.max_prompt_length,
        "data.filter_overlong_prompts": True,
        "data.max_response_length": t.max_completion_length,
        "data.seed": t.seed,
        "actor_rollout_ref.model.path": str(t.model),
        "actor_rollout_ref.actor.optim.lr": t.learning_rate,
        "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": t.warmup_ratio,
        "actor_rollout_ref.actor.optim.lr_scheduler_type": t.lr_scheduler,
        "actor_rollout_ref.actor.ppo_mini_batch_size": batch.prompts,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": batch.per_device,
        "actor_rollout_ref.actor.fsdp_config.reshard_after_forward": t.deepspeed != "zero2",
        "actor_rollout_ref.actor.use_kl_loss": t.beta > 0,
        "actor_rollout_ref.actor.kl_loss_coef": t.beta,
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.n": t.num_generations,
        "actor_rollout_ref.rollout.temperature": t.temperature,
        "actor_rollout_ref.rollout.top_p": t.top_p,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": t.vllm.tensor_parallel_size,
        "actor_rollout_ref.rollout.gpu_memory_utilization": t.vllm.gpu_memory_utilization,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": per_gpu,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": per_gpu,
        "trainer.total_epochs": int(max(1, round(t.epochs))),
        "trainer.n_gpus_per_node": t.gpus,
        "trainer.nnodes": t.nnodes,
        "trainer.project_name": "rewardkit",
        "trainer.experiment_name": experiment,
        "trainer.logger": "[console]",
        "trainer.default_local_dir": str(checkpoints),
        # a positive save_freq also saves the last step, which the next stage resumes from
        "trainer.save_freq": t.save_steps or (end or t.max_steps or -1),
        "trainer.val_before_train": False,
        "reward.custom_reward_function.path": "pkg://rewardkit_trainers.verl",
        "reward.custom_reward_function.name": "compute_score",
        "+reward.custom_reward_function.reward_kwargs.config": str(plan.config_file),
        "+reward.custom_reward_function.reward_kwargs.step": start,
        **MANAGER_OVERRIDES,
    }
    if end is not None:
        args["trainer.total_training_steps"] = end
    if start > 0:
        args["trainer.resume_mode"] = "resume_path"
        args["trainer.resume_from_path"] = str(checkpoints / f"global_step_{start}")
    if t.lora is not None:
        targets = t.lora.target_modules
        args["actor_rollout_ref.model.lora_rank"] = t.lora.r
        args["actor_rollout_ref.model.lora_alpha"] = t.lora.alpha
        args["actor_rollout_ref.model.target_modules"] = (
            targets if isinstance(targets, str) else "[" + ",".join(targets) + "]")
    args.update(t.extra_args)
    return [f"{k}={_hydra_value(v)}" for k, v in args.items()]


def _hydra_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def build_jobs(plan: RunPlan) -> list[Job]:
    """One ``python3 -m verl.trainer.main_ppo`` job per reward stage (verl passes no step:
    each job pins the step through the reward kwargs and resumes from the last one)."""
    from rewardkit_trainers.data import materialise, normalise_rows, read_rows, to_verl_parquet
    from rewardkit_trainers.runner import Job

    t = plan.train
    out = plan.output_dir / "verl"
    source = str(plan.config_file)
    train_path, test_path = materialise(t, plan.config_file, plan.output_dir)
    rows = normalise_rows(read_rows(train_path, source), t.dataset)
    train_file = to_verl_parquet(rows, t.dataset, out / "data" / "train.parquet")
    val_file = train_file
    if test_path is not None:
        val_rows = normalise_rows(read_rows(test_path, source, "train.dataset.test"), t.dataset)
        val_file = to_verl_parquet(val_rows, t.dataset, out / "data" / "test.parquet", "test")
    checkpoints = out / "checkpoints"
    jobs = []
    for k, (start, end) in enumerate(plan.stage_ranges("verl")):
        overrides_k = verl_overrides(plan, train_file, val_file, start, end, checkpoints,
                                     f"{plan.config_file.stem}_stage{k}")
        label = f"verl stage {k}: steps {start}..{end if end is not None else 'end'}"
        if start:
            label += f", resumes from global_step_{start}"
        jobs.append(Job(label, ["python3", "-m", "verl.trainer.main_ppo", *overrides_k],
                        plan.output_dir, {"REWARDKIT_CONFIG": str(plan.config_file)}))
    return jobs
