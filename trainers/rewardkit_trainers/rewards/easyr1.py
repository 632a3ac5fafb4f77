"""EasyR1 adapter: a batch reward file, and staged ``verl.trainer.main`` jobs.

``rewardkit export easyr1 CONFIG -o reward.py`` writes a file EasyR1 loads with
``worker.reward.reward_function=reward.py:compute_score``. EasyR1 (``verl/workers/
reward/function.py``) imports it with ``spec_from_file_location``, reads
``REWARD_TYPE = "batch"``, and calls ``compute_score(reward_inputs,
**reward_function_kwargs)`` with ``reward_inputs = [{"response", "response_length",
"ground_truth"}, ...]``. Each returned dict has ``overall`` (what trains), one key per
component and ``<component>_failed`` (0/1: its mean is the failure rate), under
``on_error: null`` also ``imputed_group_share`` (:func:`score_batch`), the same keys
every call, all numbers (EasyR1 averages each key into a metric).

Lengths in tokens: EasyR1 passes each response's token count (``response_length``) but
not its ids, so ``unit: tokens`` lengths (overlong_penalty, cosine_scaled, group_length)
use that count (``metadata["completion_length"]``); token n-grams
(``repetition_penalty``) need the reward's ``tokenizer`` parameter.

The prompt a response answers and the row's columns travel in the ``answer`` column
(:func:`pack_answer`): EasyR1 passes nothing else and reorders the batch before scoring.

EasyR1 passes no step, so the file is pinned to one step (``STEP``): stages and
schedules are evaluated there. ``rewardkit train`` with ``backend: easyr1`` runs one job
per reward stage, each with its own pinned file, each resuming from the previous
stage's last checkpoint (``trainer.load_checkpoint_path=.../global_step_<boundary>``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rewardkit import Sample, Status
from rewardkit.config import RewardConfig
from rewardkit.lengths import COMPLETION_LENGTH

from rewardkit_trainers.scoring import (
    SharedScorer,
    config_literal,
    imputed_group_share,
    neutralise_failed_rows,
)

if TYPE_CHECKING:
    from rewardkit_trainers.runner import Job, RunPlan


#: marks an ``answer`` cell packed by :func:`pack_answer` (reference, prompt id, metadata)
PACKED = "rewardkit/v1"


def pack_answer(reference: Any, prompt_id: int, metadata: Mapping[str, Any]) -> str:
    """The ``answer`` cell EasyR1 hands back as ``ground_truth``: JSON carrying the
    reference, the prompt's id and the row's other columns.

    EasyR1's reward inputs hold only ``response``, ``response_length`` and
    ``ground_truth``, and it reorders the batch (``_balance_batch``) before scoring, so
    the prompt a response answers and the row's metadata must travel inside the answer.
    """
    return json.dumps({PACKED: True, "reference": reference, "prompt_id": prompt_id,
                       "metadata": dict(metadata)}, ensure_ascii=False, default=str)


def unpack_answer(ground_truth: Any) -> tuple[Any, Any, dict[str, Any]] | None:
    """(reference, prompt id, metadata) from a packed answer; None for a plain one."""
    if not isinstance(ground_truth, str) or PACKED not in ground_truth:
        return None
    try:
        data = json.loads(ground_truth)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get(PACKED) is not True:
        return None
    return data.get("reference"), data.get("prompt_id"), dict(data.get("metadata") or {})


def score_batch(scorer: SharedScorer, reward_inputs: Sequence[Mapping[str, Any]], step: int,
                fallback: float = 0.0, **ignored: Any) -> list[dict[str, float]]:
    """EasyR1 batch scores for ``reward_inputs`` at ``step``.

    Groups (per-group rewards, ``normalize_then_sum``, masking failed rows) come from the
    prompt id packed in the ground truth (:func:`pack_answer`), never from positions:
    EasyR1 reorders the batch. A config that needs groups or metadata on a batch whose
    ground truths are not packed raises :class:`GroupsUnknown`.

    A failed row (``on_error: null``) gets its group's mean ``overall``: EasyR1's GRPO
    advantage and reward manager offer no way to leave a row out (the reward only fills
    the last token's score; a NaN would spread to the whole group), so the row stays in
    the group's sample std, and the other rows' advantages are ``sqrt((n - 1) / (k - 1))``
    times a mask's (:func:`~rewardkit_trainers.scoring.neutralise_failed_rows`).
    """
    samples = []
    unpacked = 0
    for item in reward_inputs:
        packed = unpack_answer(item.get("ground_truth"))
        reference, prompt_id, metadata = packed or (item.get("ground_truth"), None, {})
        unpacked += packed is None
        metadata["response_length"] = item.get("response_length")
        if item.get("response_length") is not None:  # the policy's token count: unit tokens
            metadata[COMPLETION_LENGTH] = item["response_length"]
        sample = Sample(completion=str(item.get("response", "")), reference=reference,
                        metadata=metadata)
        if packed is not None:
            sample.group = prompt_id
        samples.append(sample)
    if unpacked and (needs := needs_prompt_identity(scorer.config)):
        raise GroupsUnknown(
            f"rewardkit EasyR1 reward: {unpacked} of {len(samples)} ground truths carry no "
            f"prompt id or metadata, but the config needs them ({'; '.join(needs)}). "
            "Pack the reference, prompt id and columns into the answer column: "
            "`python -m rewardkit_trainers.easyr1 pack data/train.parquet ...` rewrites "
            "existing EasyR1 parquet files in place (answer_key/prompt_key: --answer-key, "
            "--prompt-key), or `rewardkit train --backend easyr1 --dry-run` writes the "
            "dataset packed."
        )
    result = scorer.reward_set.score(samples, step=step)
    groups = [s.group for s in samples]
    failed = scorer.null_rows(result)
    names = scorer.names
    columns = {name: result.scores(name) for name in names}
    totals: list[float | None] = list(result.totals)
    if failed:
        # a failed row's total becomes its group's mean: GRPO gives it zero advantage
        totals = neutralise_failed_rows(totals, groups, failed)
    imputing = scorer.config.on_error == "null"
    if imputing and IMPUTED_SHARE in names:
        raise ValueError(f"rewardkit EasyR1 reward: a component named {IMPUTED_SHARE!r} "
                         "clashes with the metric key of that name; rename the component")
    # every row carries the batch's share, so EasyR1's mean of the key is that share
    share = imputed_group_share(groups, failed)
    out = []
    for i, total in enumerate(totals):
        row: dict[str, float] = {"overall": fallback if total is None else float(total)}
        for name in names:
            sc = columns[name][i]
            bad = sc.status in (Status.ERROR, Status.TIMEOUT)
            row[name] = float(sc.value) if sc.value is not None else (fallback if bad else 0.0)
            row[f"{name}_failed"] = 1.0 if bad else 0.0
        if imputing:
            row[IMPUTED_SHARE] = share
        out.append(row)
    return out


#: the score key (EasyR1 metric ``reward/imputed_group_share``) under ``on_error: null``:
#: the share of graded rows whose group held an imputed (failed) row, whose advantage
#: the imputation scales up by sqrt((n - 1) / (k - 1))
IMPUTED_SHARE = "imputed_group_share"


class GroupsUnknown(ValueError):
    """The batch does not say which prompt each response answers, and the config needs it."""


def needs_prompt_identity(config: RewardConfig) -> list[str]:
    """Why scoring ``config`` needs each response's prompt and metadata (empty: it does not)."""
    from rewardkit import get_reward

    reasons = []
    if config.aggregate == "normalize_then_sum":
        reasons.append("aggregate: normalize_then_sum normalises within each prompt's group")
    if config.on_error == "null":
        reasons.append("on_error: null gives a failed row its group's mean")
    for name, component in config.rewards.items():
        if get_reward(component.reward).group:
            reasons.append(f"rewards.{name} is a per-group reward")
        if component.when:
            reasons.append(f"rewards.{name}.when routes on metadata")
    return reasons


_FILE_TEMPLATE = '''\
"""EasyR1 reward file generated by `rewardkit export easyr1` from {source}.

Use with:  worker.reward.reward_function={path}:compute_score
Pinned to training step {step} (EasyR1 passes no step): stages and schedules of the
config are evaluated there. Needs rewardkit and rewardkit-trainers installed.
"""

from rewardkit_trainers.easyr1 import score_batch
from rewardkit_trainers.scoring import SharedScorer

REWARD_NAME = "rewardkit"
REWARD_TYPE = "batch"
STEP = {step}
FALLBACK = {fallback!r}
CONFIG = {config}

_SCORER = SharedScorer(CONFIG)


def compute_score(reward_inputs, step=STEP, fallback=FALLBACK, **kwargs):
    """list of {{"response", "response_length", "ground_truth"}} -> list of score dicts."""
    return score_batch(_SCORER, reward_inputs, step=step, fallback=fallback, **kwargs)
'''


def export_reward_file(config: RewardConfig, config_path: Path | None, out: Path, step: int = 0,
                       fallback: float = 0.0) -> Path:
    """Write the EasyR1 reward file for ``config`` (embedded), pinned to ``step``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_FILE_TEMPLATE.format(
        source=str(config_path.resolve()) if config_path else "<config>",
        path=out.resolve(), step=int(step), fallback=float(fallback),
        config=config_literal(config)), encoding="utf-8")
    return out


def easyr1_config(plan: RunPlan, train_file: Path, val_file: Path, template: Path,
                  reward_file: Path, max_steps: int | None, checkpoints: Path,
                  load_from: Path | None, experiment: str) -> dict[str, Any]:
    """The EasyR1 config (``config=...`` file) for one job.

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
    lora: dict[str, Any] = {"rank": 0}
    if t.lora is not None:
        targets = t.lora.target_modules
        lora = {"rank": t.lora.r, "alpha": t.lora.alpha,
                "target_modules": targets if isinstance(targets, str) else ",".join(targets)}
    trainer: dict[str, Any] = {
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
                "model": {"model_path": str(t.model), "lora": lora},
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
        "trainer": trainer,
    }
    for dotted, value in t.extra_args.items():
        node = cfg
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return cfg


def build_jobs(plan: RunPlan) -> list[Job]:
    """One ``python3 -m verl.trainer.main config=...`` job per reward stage."""
    from rewardkit_trainers.data import (
        easyr1_template,
        materialise,
        normalise_rows,
        read_rows,
        to_easyr1_parquet,
    )
    from rewardkit_trainers.runner import Job

    t = plan.train
    out = plan.output_dir / "easyr1"
    train_path, test_path = materialise(t, plan.config_file, plan.output_dir)
    source = str(plan.config_file)
    rows = normalise_rows(read_rows(train_path, source), t.dataset)
    train_file = to_easyr1_parquet(rows, t.dataset, out / "data" / "train.parquet")
    val_file = train_file
    if test_path is not None:
        val_rows = normalise_rows(read_rows(test_path, source, "train.dataset.test"), t.dataset)
        val_file = to_easyr1_parquet(val_rows, t.dataset, out / "data" / "test.parquet")
    template = easyr1_template(rows, t.dataset, out / "format_prompt.jinja")
    checkpoints = out / "checkpoints"
    jobs = []
    for k, (start, end) in enumerate(plan.stage_ranges("EasyR1")):
        reward_file = export_reward_file(plan.reward_config, plan.config_file,
                                         out / f"reward_stage{k}.py", step=start)
        load_from = checkpoints / f"global_step_{start}" if k > 0 else None
        cfg = easyr1_config(plan, train_file, val_file, template, reward_file.resolve(), end,
                            checkpoints, load_from, f"{plan.config_file.stem}_stage{k}")
        cfg_file = out / f"stage{k}.yaml"
        text = yaml.safe_dump(cfg, sort_keys=False)
        cfg_file.write_text(text, encoding="utf-8")
        label = f"EasyR1 stage {k}: steps {start}..{end if end is not None else 'end'}"
        if load_from is not None:
            label += f", resumes from {load_from.name}"
        jobs.append(Job(label, ["python3", "-m", "verl.trainer.main", f"config={cfg_file}"],
                        plan.output_dir, {}, {str(cfg_file): text}))
    return jobs


#: EasyR1 columns that are model inputs, not metadata
_INPUT_COLUMNS = frozenset({"images", "videos", "image", "video"})


def pack_parquet(path: Path, answer_key: str = "answer", prompt_key: str = "problem") -> int:
    """Pack the ``answer_key`` column of an EasyR1 parquet file in place
    (:func:`pack_answer`: the row number as prompt id, the scalar columns as metadata);
    returns the number of rows. Already packed cells are left alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if answer_key not in table.column_names:
        raise ValueError(f"{path}: no {answer_key!r} column (columns: "
                         f"{', '.join(table.column_names)})")
    rows = table.to_pylist()
    packed = []
    for i, row in enumerate(rows):
        answer = row[answer_key]
        if unpack_answer(answer) is not None:
            packed.append(answer)
            continue
        metadata = {k: v for k, v in row.items()
                    if k not in (answer_key, prompt_key) and k not in _INPUT_COLUMNS
                    and (v is None or isinstance(v, str | int | float | bool))}
        packed.append(pack_answer(answer, i, metadata))
    index = table.column_names.index(answer_key)
    table = table.set_column(index, answer_key, pa.array(packed, type=pa.string()))
    pq.write_table(table, path)
    return len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rewardkit_trainers.easyr1 pack FILE.parquet ...``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m rewardkit_trainers.easyr1",
        description="pack: rewrite the answer column of EasyR1 parquet files so that the "
        "reward knows each response's prompt and the row's columns (EasyR1 passes only the "
        "response and the answer, in an order of its own).")
    sub = parser.add_subparsers(dest="command", required=True)
    pack = sub.add_parser("pack", help="pack the answer column in place")
    pack.add_argument("files", nargs="+", type=Path)
    pack.add_argument("--answer-key", default="answer")
    pack.add_argument("--prompt-key", default="problem")
    args = parser.parse_args(argv)
    for file in args.files:
        try:
            n = pack_parquet(file, args.answer_key, args.prompt_key)
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"packed {n} rows of {file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
