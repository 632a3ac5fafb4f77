"""``rewardkit train`` on verl: one ``python3 -m verl.trainer.main_ppo`` job per segment.

verl passes no step to the reward (:mod:`rewardkit_trainers.rewards.verl`), so each
segment (:mod:`rewardkit_trainers.launch.segments`) pins the step through the reward
kwargs and resumes from the previous segment's last checkpoint.

Multi-turn: when ``train.extra_args`` names the tools verl's tool agent loop runs
(:data:`TOOL_KEYS`), the jobs roll out with ``RewardkitToolAgentLoop``
(:func:`agent_loop_args`), whose record the reward rebuilds the trajectory from. A config
whose rewards need a trajectory without them is refused: verl's single-turn rollout is
text only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from rewardkit.config import ConfigError, RewardConfig, read_config_file

from rewardkit_trainers.config import TrainConfig, parse_train, resolve
from rewardkit_trainers.launch.data import materialise, normalise_rows, read_rows, to_verl_parquet
from rewardkit_trainers.launch.easyr1 import export_probe_row, rollout_needs, rollout_needs_of
from rewardkit_trainers.launch.plan import Job, RunPlan
from rewardkit_trainers.rewards.verl import MANAGER_OVERRIDES, REWARD_PATH

#: the ``train.extra_args`` keys that give verl's tool agent loop its tools
TOOL_KEYS = ("actor_rollout_ref.rollout.multi_turn.tool_config_path",
             "actor_rollout_ref.rollout.multi_turn.function_tool_path")
#: the agent loop name rewardkit's jobs register (``agent.agent_loop_config_path``)
AGENT_LOOP = "rewardkit_tool_agent"
AGENT_LOOP_TARGET = "rewardkit_trainers.rewards.verl_manager.RewardkitToolAgentLoop"
#: the prefix of verl's multi-turn rollout keys (tools, turn limits, format)
MULTI_TURN = "actor_rollout_ref.rollout.multi_turn."


def agent_loop_args(plan: RunPlan, rows: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """The overrides that roll out with ``RewardkitToolAgentLoop`` (its registration
    written to ``out/agent_loop.yaml``) when ``train.extra_args`` names tools; none
    without tools, and a :class:`ConfigError` when the rewards need a trajectory then."""
    if not any(plan.train.extra_args.get(key) for key in TOOL_KEYS):
        refuse_without_tools(str(plan.config_file),
                             rollout_needs(plan, rows[0]) if rows else [])
        return {}
    return _select_agent_loop(out / "agent_loop.yaml")


def refuse_without_tools(source: str, needs: list[str]) -> None:
    """A :class:`ConfigError` naming each of ``needs`` (the components that need a
    trajectory or the finish reason) and the keys that name verl's tools; none without."""
    if needs:
        raise ConfigError(source, [
            (f"rewards.{name}", "needs a multi-turn trajectory or the rollout's finish "
             "reason, which verl passes only from rewardkit's tool agent loop: name "
             f"your tools in train.extra_args ({TOOL_KEYS[1]}: tools.py, or "
             f"{TOOL_KEYS[0]}: tools.yaml)") for name in needs])


def _select_agent_loop(registry: Path) -> dict[str, Any]:
    """Write ``registry`` (verl's agent loop config list: RewardkitToolAgentLoop under
    :data:`AGENT_LOOP`) and return the overrides that roll out with it."""
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(yaml.safe_dump([{"name": AGENT_LOOP, "_target_": AGENT_LOOP_TARGET}]),
                        encoding="utf-8")
    return {"actor_rollout_ref.rollout.multi_turn.enable": True,
            "actor_rollout_ref.rollout.agent.default_agent_loop": AGENT_LOOP,
            "actor_rollout_ref.rollout.agent.agent_loop_config_path": str(registry.resolve())}


def export_rollout_args(reward_config: RewardConfig, config_file: Path,
                        registry: Path) -> dict[str, Any]:
    """The rollout overrides ``rewardkit export verl`` adds to the reward's: when the
    config's ``train:`` section, read for backend verl, names verl's tools
    (:data:`TOOL_KEYS`), those that select RewardkitToolAgentLoop (registered in
    ``registry``, written here) plus its ``multi_turn.*`` keys (the tools' files resolved
    next to the config, the turn limits), as ``rewardkit train --backend verl`` runs it;
    none otherwise, and a :class:`ConfigError` naming the components when the rewards
    need a trajectory then (verl's single-turn rollout is text only)."""
    extra: dict[str, Any] = {}
    raw = read_config_file(config_file).get("train")
    if isinstance(raw, Mapping):
        train = parse_train(raw, str(config_file))  # as the config means it
        extra = {**train.extra_args, **train.backend_args.get("verl", {})}
    if not any(extra.get(key) for key in TOOL_KEYS):
        row, reference_column = export_probe_row(reward_config, config_file)
        refuse_without_tools(str(config_file),
                             rollout_needs_of(reward_config, row, reference_column))
        return {}
    args = _select_agent_loop(registry)
    args.update({k: v for k, v in extra.items() if k.startswith(MULTI_TURN)})
    for key in TOOL_KEYS:
        if isinstance(args.get(key), str):
            args[key] = str(resolve(args[key], config_file))
    return args


def verl_overrides(plan: RunPlan, train_file: Path, val_file: Path, start: int,
                   end: int | None, checkpoints: Path, experiment: str,
                   agent: Mapping[str, Any] | None = None) -> list[str]:
    """Hydra overrides of ``verl.trainer.main_ppo`` for one segment (verl 0.9.x names).

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
        # a positive save_freq also saves the last step, which the next segment resumes from
        "trainer.save_freq": t.save_steps or (end or t.max_steps or -1),
        "trainer.val_before_train": False,
        "reward.custom_reward_function.path": REWARD_PATH,
        "reward.custom_reward_function.name": "compute_score",
        "+reward.custom_reward_function.reward_kwargs.config": str(plan.config_file),
        "+reward.custom_reward_function.reward_kwargs.step": start,
        **MANAGER_OVERRIDES,
    }
    args.update(_segment_args(start, end, checkpoints))
    args.update(_lora_args(t))
    args.update(agent or {})  # the tool agent loop (agent_loop_args)
    args.update(t.extra_args)
    for key in TOOL_KEYS:  # the tools' file, as a relative path, is next to the config
        path = args.get(key)
        if isinstance(path, str):
            args[key] = str(resolve(path, plan.config_file))
    return [f"{k}={hydra_value(v)}" for k, v in args.items()]


def _segment_args(start: int, end: int | None, checkpoints: Path) -> dict[str, Any]:
    """Where a segment ends, and the checkpoint a segment after the first resumes from."""
    args: dict[str, Any] = {}
    if end is not None:
        args["trainer.total_training_steps"] = end
    if start > 0:
        args["trainer.resume_mode"] = "resume_path"
        args["trainer.resume_from_path"] = str(checkpoints / f"global_step_{start}")
    return args


def _lora_args(t: TrainConfig) -> dict[str, Any]:
    """The actor model's LoRA overrides (none without ``train.lora``)."""
    if t.lora is None:
        return {}
    targets = t.lora.target_modules
    return {"actor_rollout_ref.model.lora_rank": t.lora.r,
            "actor_rollout_ref.model.lora_alpha": t.lora.alpha,
            "actor_rollout_ref.model.target_modules":
                targets if isinstance(targets, str) else "[" + ",".join(targets) + "]"}


def hydra_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def build_jobs(plan: RunPlan) -> list[Job]:
    """One ``python3 -m verl.trainer.main_ppo`` job per segment (verl passes no step:
    each pins the step through the reward kwargs and resumes from the last one)."""
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
    agent = agent_loop_args(plan, rows, out)
    jobs = []
    for k, (start, end) in enumerate(plan.segment_ranges("verl")):
        overrides_k = verl_overrides(plan, train_file, val_file, start, end, checkpoints,
                                     f"{plan.config_file.stem}_segment{k}", agent)
        label = f"verl segment {k}: steps {start}..{end if end is not None else 'end'}"
        if start:
            label += f", resumes from global_step_{start}"
        jobs.append(Job(label, ["python3", "-m", "verl.trainer.main_ppo", *overrides_k],
                        plan.output_dir, {"REWARDKIT_CONFIG": str(plan.config_file)}))
    return jobs
