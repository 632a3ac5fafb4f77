"""``rewardkit train`` on EasyR1: one ``python3 -m verl.trainer.main config=...`` job per
segment.

EasyR1 passes no step to reward functions, so a config with reward stages runs as
successive *segments* (:mod:`rewardkit_trainers.launch.segments`): each segment's reward
file (:mod:`rewardkit_trainers.rewards.easyr1`) is pinned to its first step, and each
segment after the first resumes from the previous one's checkpoint
(``trainer.load_checkpoint_path=.../global_step_<boundary>``).

EasyR1 has no multi-turn rollout (one generation per prompt, text only): a config whose
rewards need a trajectory or how the generation ended is refused
(:func:`refuse_rollout_needs`) rather than trained on components that fail every row.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from rewardkit import RewardSet, Sample, Status, registry
from rewardkit.config import ConfigError, RewardConfig, read_config_file

from rewardkit_trainers.config import TrainConfig, parse_train
from rewardkit_trainers.launch.data import (
    easyr1_template,
    materialise,
    normalise_rows,
    read_rows,
    to_easyr1_parquet,
)
from rewardkit_trainers.launch.plan import Job, RunPlan
from rewardkit_trainers.rewards.easyr1 import export_reward_file
from rewardkit_trainers.rewards.verl import ROLLOUT_COLUMNS


def easyr1_config(plan: RunPlan, train_file: Path, val_file: Path, template: Path,
                  reward_file: Path, max_steps: int | None, checkpoints: Path,
                  load_from: Path | None, experiment: str) -> dict[str, Any]:
    """The EasyR1 config (``config=...`` file) for one segment.

    The batch is :meth:`RunPlan.batch`: ``data.rollout_batch_size`` and
    ``worker.actor.global_batch_size`` are both ``batch_size`` prompts (one optimizer
    step per rollout batch; EasyR1 multiplies the actor's by ``rollout.n`` and divides
    it over the GPUs), and ``micro_batch_size_per_device_for_update`` is the per-device
    micro-batch in completions, so gradient accumulation is
    ``gradient_accumulation_steps`` (with EasyR1's default dynamic batching that is a
    token budget per micro-batch; the step's batch is the same). ``deepspeed``:
    ``zero3`` is FSDP full sharding, ``zero2`` ``enable_full_shard: false``
    (SHARD_GRAD_OP)."""
    t = plan.train
    batch = plan.batch()
    cfg: dict[str, Any] = {
        "data": {
            "train_files": str(train_file), "val_files": str(val_file),
            "prompt_key": "problem", "answer_key": "answer",
            "max_prompt_length": t.max_prompt_length,
            "max_response_length": t.max_completion_length,
            "rollout_batch_size": batch.prompts,
            "filter_overlong_prompts": True,
            "format_prompt": str(template),
            "seed": t.seed,
        },
        "algorithm": {"adv_estimator": "grpo", "disable_kl": t.beta == 0,
                      "use_kl_loss": t.beta > 0, "kl_coef": t.beta},
        "worker": {
            "actor": {
                "global_batch_size": batch.prompts,
                "micro_batch_size_per_device_for_update": batch.per_device,
                "micro_batch_size_per_device_for_experience": batch.per_device,
                "model": {"model_path": str(t.model), "lora": _lora_section(t)},
                "optim": {"lr": t.learning_rate, "lr_warmup_ratio": t.warmup_ratio,
                          "lr_scheduler_type": t.lr_scheduler,
                          "strategy": "adamw_bf16" if t.bf16 else "adamw"},
                "fsdp": {"enable_full_shard": t.deepspeed != "zero2"},
            },
            "rollout": {"n": t.num_generations, "temperature": t.temperature, "top_p": t.top_p,
                        "tensor_parallel_size": t.vllm.tensor_parallel_size,
                        "gpu_memory_utilization": t.vllm.gpu_memory_utilization},
            "reward": {"reward_function": f"{reward_file}:compute_score"},
        },
        "trainer": _trainer_section(t, max_steps, checkpoints, load_from, experiment),
    }
    for dotted, value in t.extra_args.items():  # extra_args: dotted keys replace values
        node = cfg
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return cfg


def _lora_section(t: TrainConfig) -> dict[str, Any]:
    """``worker.actor.model.lora``: rank 0 (full fine-tuning) without ``train.lora``."""
    if t.lora is None:
        return {"rank": 0}
    targets = t.lora.target_modules
    return {"rank": t.lora.r, "alpha": t.lora.alpha,
            "target_modules": targets if isinstance(targets, str) else ",".join(targets)}


def _trainer_section(t: TrainConfig, max_steps: int | None, checkpoints: Path,
                     load_from: Path | None, experiment: str) -> dict[str, Any]:
    """``trainer``: the segment's end, where it saves and which checkpoint it resumes."""
    return {
        "total_epochs": int(max(1, round(t.epochs))),
        "max_steps": max_steps,
        "project_name": "rewardkit",
        "experiment_name": experiment,
        "logger": ["file"],
        "nnodes": t.nnodes,
        "n_gpus_per_node": t.gpus,
        "save_freq": t.save_steps or -1,
        "save_checkpoint_path": str(checkpoints),
        "load_checkpoint_path": str(load_from) if load_from else None,
        "find_last_checkpoint": load_from is None,
        "val_before_train": False,
    }


def rollout_needs(plan: RunPlan, row: dict[str, Any]) -> list[str]:
    """The components that fail on a text response but grade once the same answer comes
    as a finished one-turn trajectory (:func:`rollout_needs_of` with the plan's reference
    column), probed on ``row`` (the dataset's first); shared with the verl planner, whose
    single-turn rollout is text-only too."""
    return rollout_needs_of(plan.reward_config, row, plan.train.dataset.reference_column)


def rollout_needs_of(reward_config: RewardConfig, row: dict[str, Any],
                     reference_column: str = "reference") -> list[str]:
    """The components that fail on a text response but grade once the same answer comes
    as a finished one-turn trajectory: they need a trajectory (tool calls, turns) or the
    rollout's ``finish_reason`` / ``truncated``, which a text-only rollout never gives.
    Probed on ``row``, its reference as the response, running only the components that
    may read the rollout."""
    candidates = {name: c for name, c in reward_config.rewards.items()
                  if _may_read_rollout(c.reward, c.on_truncated)}
    if not candidates:
        return []  # nothing to probe: no reward is run at planning time
    # only those are run: a judge (an API call) or a sandboxed program must not run while
    # a run is planned
    config = reward_config.model_copy(update={"rewards": candidates})
    reference = row.get(reference_column)
    text = reference if isinstance(reference, str) else str(reference or "")
    metadata = {k: v for k, v in row.items()
                if k not in ("prompt", "completion", reference_column, *ROLLOUT_COLUMNS)}
    # a reward reading the offered tools errs without a tools column whatever the
    # response: offered none, it still tells a text response from a trajectory
    metadata.setdefault("tools", [])
    as_text = Sample(row.get("prompt", ""), text, reference, metadata=metadata)
    as_rollout = Sample(row.get("prompt", ""), [{"role": "assistant", "content": text}],
                        reference, metadata={**metadata, "finish_reason": "stop",
                                             "truncated": False})
    scored = RewardSet(config).score([as_text, as_rollout], step=0)
    failed = (Status.ERROR, Status.TIMEOUT)
    return [name for name in candidates
            if scored.scores(name)[0].status in failed
            and scored.scores(name)[1].status not in failed]


#: the row ``rewardkit export easyr1`` probes when the config names no training data
MADE_UP_ROW: dict[str, Any] = {"prompt": "q", "reference": "7"}


def export_probe_row(reward_config: RewardConfig, config_file: Path | None,
                     ) -> tuple[dict[str, Any], str]:
    """The row (and its reference column) ``rewardkit export easyr1`` probes with
    :func:`rollout_needs_of`: the first row of the config's ``train.dataset.train`` when
    it has one (generated data is made in a temporary folder), else :data:`MADE_UP_ROW`."""
    if config_file is None or reward_config.section("train") is None:
        return dict(MADE_UP_ROW), "reference"
    train = parse_train(read_config_file(config_file).get("train"), str(config_file))
    with tempfile.TemporaryDirectory(prefix="rewardkit-export-") as tmp:
        train_path, _ = materialise(train, config_file, Path(tmp))
        rows = normalise_rows(read_rows(train_path, str(config_file)), train.dataset)
    return (rows[0] if rows else dict(MADE_UP_ROW)), train.dataset.reference_column


def _may_read_rollout(reward: str, on_truncated: str) -> bool:
    """Whether a component may need a trajectory or how the generation ended: it zeroes
    or masks truncated samples, or its reward's module uses :mod:`rewardkit.trajectory`
    (where trajectories and truncation are read); unknown rewards count as may."""
    if on_truncated != "keep":
        return True
    try:
        module = sys.modules.get(registry.get(reward).__module__)
    except Exception:
        return True
    return module is None or any(getattr(v, "__module__", None) == "rewardkit.trajectory"
                                 for v in vars(module).values())


def refuse_rollout_needs(plan: RunPlan, row: dict[str, Any]) -> None:
    """EasyR1 has no multi-turn or tool rollout and passes no finish reason: a
    :class:`ConfigError` naming each component of :func:`rollout_needs`."""
    refuse_needs(str(plan.config_file), rollout_needs(plan, row))


def refuse_needs(source: str, needs: list[str]) -> None:
    """The :class:`ConfigError` of :func:`refuse_rollout_needs` for ``needs`` (none: no error)."""
    if needs:
        raise ConfigError(source, [
            (f"rewards.{name}", "needs a multi-turn trajectory or the rollout's finish "
             "reason, and EasyR1 rolls out text only (no agent or tool loop): it would fail "
             "on every row; use backend verl (rewardkit's tool agent loop), trl or swift")
            for name in needs])


def build_jobs(plan: RunPlan) -> list[Job]:
    """One ``python3 -m verl.trainer.main config=...`` job per segment."""
    t = plan.train
    out = plan.output_dir / "easyr1"
    train_path, test_path = materialise(t, plan.config_file, plan.output_dir)
    source = str(plan.config_file)
    rows = normalise_rows(read_rows(train_path, source), t.dataset)
    if rows:
        refuse_rollout_needs(plan, rows[0])
    from rewardkit_trainers.environments import refuse_missing_workspace

    refuse_missing_workspace(plan.reward_config, rows, "EasyR1", source)
    train_file = to_easyr1_parquet(rows, t.dataset, out / "data" / "train.parquet")
    val_file = train_file
    if test_path is not None:
        val_rows = normalise_rows(read_rows(test_path, source, "train.dataset.test"), t.dataset)
        val_file = to_easyr1_parquet(val_rows, t.dataset, out / "data" / "test.parquet")
    template = easyr1_template(rows, t.dataset, out / "format_prompt.jinja")
    checkpoints = out / "checkpoints"
    jobs = []
    for k, (start, end) in enumerate(plan.segment_ranges("EasyR1")):
        reward_file = export_reward_file(plan.reward_config, plan.config_file,
                                         out / f"reward_segment{k}.py", step=start)
        load_from = checkpoints / f"global_step_{start}" if k > 0 else None
        cfg = easyr1_config(plan, train_file, val_file, template, reward_file.resolve(), end,
                            checkpoints, load_from, f"{plan.config_file.stem}_segment{k}")
        cfg_file = out / f"segment{k}.yaml"
        text = yaml.safe_dump(cfg, sort_keys=False)
        cfg_file.write_text(text, encoding="utf-8")
        label = f"EasyR1 segment {k}: steps {start}..{end if end is not None else 'end'}"
        if load_from is not None:
            label += f", resumes from {load_from.name}"
        jobs.append(Job(label, ["python3", "-m", "verl.trainer.main", f"config={cfg_file}"],
                        plan.output_dir, {}, {str(cfg_file): text}))
    return jobs
