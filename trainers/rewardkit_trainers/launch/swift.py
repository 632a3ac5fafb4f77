"""``rewardkit train`` on ms-swift: one ``swift rlhf --rlhf_type grpo`` job with the dataset
as ms-swift JSONL and the exported ``--external_plugins`` file
(:mod:`rewardkit_trainers.rewards.swift`), after a ``swift rollout`` server in vLLM
server mode (:mod:`rewardkit_trainers.launch.swift_server`). ms-swift passes the step,
so reward stages and schedules follow it inside the one job.
"""

from __future__ import annotations

from pathlib import Path

from rewardkit import ConfigError

from rewardkit_trainers.config import TrainConfig, resolve
from rewardkit_trainers.launch.data import materialise, normalise_rows, read_rows, to_swift_jsonl
from rewardkit_trainers.launch.hardware import split_gpus
from rewardkit_trainers.launch.plan import Job, RunPlan
from rewardkit_trainers.launch.swift_server import RolloutServer
from rewardkit_trainers.rewards.swift import SwiftRewards, export_plugin


def swift_major_version() -> int:
    """The installed ms-swift's major version (4 when it is not installed here)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("ms-swift").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 4


def swift_arguments(plan: RunPlan, dataset: Path, rewards: SwiftRewards,
                    resume: Path | None = None, major: int | None = None,
                    server: RolloutServer | None = None) -> list[str]:
    """``swift rlhf --rlhf_type grpo ...`` for the run: ms-swift 4.x names, or 3.x
    (``--train_type`` for ``--tuner_type``) when ms-swift 3 is what is installed; in vLLM
    server mode pointed at ``server``. ``extra_args`` replace flags of the same name, but
    ``external_plugins`` (a ``--multi_turn_scheduler``'s file, a relative path found next
    to the config file) come after the rewards' own.

    The batch is :meth:`RunPlan.batch`, as for TRL: ms-swift counts
    ``--per_device_train_batch_size`` in completions per process and micro-step and
    generates ``per_device x world size x gradient_accumulation_steps`` per optimizer
    step (``generation_batch_size``'s default), so one step is ``batch_size`` prompts.
    ``--max_length`` is the prompt's limit in GRPO (ms-swift's docs: it stands for
    ``max_prompt_length`` there), with ``--truncation_strategy delete`` (a longer prompt
    is replaced by another, as EasyR1 and verl leave it out). ``deepspeed`` becomes
    ``--deepspeed zero3``/``zero2`` on more than one process (:meth:`RunPlan.zero_stage`)."""
    t = plan.train
    batch = plan.batch()
    zero = plan.zero_stage()
    tuner_flag = "--train_type" if (major or swift_major_version()) < 4 else "--tuner_type"
    argv = ["swift", "rlhf", "--rlhf_type", "grpo",
            "--model", str(t.model),
            "--dataset", str(dataset),
            *rewards.arguments(),
            "--learning_rate", repr(t.learning_rate),
            "--lr_scheduler_type", t.lr_scheduler,
            "--warmup_ratio", repr(t.warmup_ratio),
            "--num_generations", str(t.num_generations),
            "--per_device_train_batch_size", str(batch.per_device),
            "--gradient_accumulation_steps", str(batch.accumulation),
            "--max_length", str(t.max_prompt_length),
            "--truncation_strategy", "delete",
            "--max_completion_length", str(t.max_completion_length),
            "--beta", repr(t.beta),
            "--temperature", repr(t.temperature),
            "--top_p", repr(t.top_p),
            "--output_dir", str(plan.output_dir / "swift"),
            "--logging_steps", str(t.logging_steps),
            "--seed", str(t.seed),
            "--report_to", "tensorboard"]
    if t.max_steps:
        argv += ["--max_steps", str(t.max_steps)]
    else:
        argv += ["--num_train_epochs", repr(t.epochs)]
    if t.save_steps:
        argv += ["--save_steps", str(t.save_steps)]
    if t.bf16:
        argv += ["--torch_dtype", "bfloat16"]
    if zero:
        argv += ["--deepspeed", f"zero{zero}"]
    argv += _tuner_arguments(t, tuner_flag) + _generation_arguments(t, server)
    if (major or swift_major_version()) < 4:  # ms-swift 3 has no callback table
        argv = _without_flag(argv, "--callbacks")
    if resume is not None:
        argv += ["--resume_from_checkpoint", str(resume)]
    for key, value in t.extra_args.items():
        values = list(map(str, value)) if isinstance(value, list) else [str(value)]
        if key == "external_plugins":  # a scheduler's file (next to the config), after ours
            values = [str(rewards.plugin), *(str(resolve(v, plan.config_file)) for v in values)]
        argv = _without_flag(argv, f"--{key}")
        argv += [f"--{key}", *values]
    return argv


def _tuner_arguments(t: TrainConfig, tuner_flag: str) -> list[str]:
    """Full fine-tuning, or LoRA (quantised with bitsandbytes when ``lora.quantize``)."""
    if t.lora is None:
        return [tuner_flag, "full"]
    targets = t.lora.target_modules
    argv = [tuner_flag, "lora", "--lora_rank", str(t.lora.r),
            "--lora_alpha", str(t.lora.alpha), "--lora_dropout", repr(t.lora.dropout),
            "--target_modules", *([targets] if isinstance(targets, str) else targets)]
    if t.lora.quantize:
        argv += ["--quant_method", "bnb",
                 "--quant_bits", "4" if t.lora.quantize == "4bit" else "8"]
    return argv


def _generation_arguments(t: TrainConfig, server: RolloutServer | None) -> list[str]:
    """Generation through ``server`` (vLLM server mode), colocated vLLM, or ms-swift's own."""
    if server is not None:
        return server.client_args()
    if t.vllm.enabled:
        return ["--use_vllm", "true", "--vllm_mode", t.vllm.mode,
                "--vllm_gpu_memory_utilization", repr(t.vllm.gpu_memory_utilization),
                "--vllm_tensor_parallel_size", str(t.vllm.tensor_parallel_size)]
    return ["--use_vllm", "false"]


def _without_flag(argv: list[str], flag: str) -> list[str]:
    """``argv`` without ``flag`` and its values (so ``extra_args`` replace, not repeat)."""
    out: list[str] = []
    skipping = False
    for arg in argv:
        if arg.startswith("--"):
            skipping = arg == flag
        if not skipping:
            out.append(arg)
    return out


#: columns of a recorded rollout (the scored rows of ``rewardkit score``, the tool-use
#: example): the run generates its own, and ms-swift would pass a stale ``completion`` or
#: ``truncated`` to the rewards beside its own ``finish_reason``
ROLLOUT_COLUMNS = frozenset({"completion", "finish_reason", "truncated"})


def build_jobs(plan: RunPlan) -> list[Job]:
    """One ``swift rlhf`` job (ms-swift passes the step, so stages live inside it), after
    the ``swift rollout`` server in vLLM server mode."""
    out = plan.output_dir
    train_file, _ = materialise(plan.train, plan.config_file, out)
    rows = normalise_rows(read_rows(train_file, str(plan.config_file)), plan.train.dataset)
    rows = [{k: v for k, v in row.items() if k not in ROLLOUT_COLUMNS} for row in rows]
    dataset = to_swift_jsonl(rows, plan.train.dataset, out / "data" / "train.swift.jsonl")
    plugin = out / "rewardkit_swift_plugin.py"
    rewards = export_plugin(plan.reward_config, plan.config_file, plugin)
    resume = plan.train.resume
    path = Path(resume) if isinstance(resume, str) and resume not in ("auto", "true") else None
    jobs: list[Job] = []
    server, processes, env = None, plan.train.gpus, {}
    if plan.train.vllm.enabled is True and plan.train.vllm.mode == "server":
        server, server_job, trainer_ids = rollout_job(plan)
        jobs.append(server_job)
        processes = len(trainer_ids)
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, trainer_ids))
    argv = swift_arguments(plan, dataset, rewards, resume=path, server=server)
    if processes > 1:
        env["NPROC_PER_NODE"] = str(processes)
    if plan.train.nnodes > 1:  # torchrun's node count (each node sets NODE_RANK, MASTER_ADDR)
        env["NNODES"] = str(plan.train.nnodes)
    jobs.append(Job("swift rlhf (GRPO)", argv, out, env,
                    {str(plugin): plugin.read_text(encoding="utf-8")}))
    return jobs


def rollout_job(plan: RunPlan) -> tuple[RolloutServer, Job, list[int]]:
    """The ``swift rollout`` server of a ``vllm.mode: server`` run on its node's last
    ``vllm.tensor_parallel_size`` GPUs: (server, background job, trainer GPU ids)."""
    t = plan.train
    if t.nnodes > 1 or plan.placement.num_nodes > 1:
        raise ConfigError(str(plan.config_file), [(
            "train.vllm.mode", "ms-swift server mode starts swift rollout on the node it "
            "trains on, which rewardkit supports on one node only; use colocate for "
            "multi-node runs")])
    try:
        trainer_ids, server_ids = split_gpus(t.gpus, t.vllm.tensor_parallel_size)
    except ValueError as exc:
        raise ConfigError(str(plan.config_file), [("train.vllm.mode", str(exc))]) from None
    server = RolloutServer(str(t.model), t.vllm.server_port, t.vllm.tensor_parallel_size,
                           t.vllm.gpu_memory_utilization)
    job = Job("vLLM rollout server (swift rollout)", server.argv, plan.output_dir,
              {"CUDA_VISIBLE_DEVICES": ",".join(map(str, server_ids))},
              background=True, ready_url=server.ready_url)
    return server, job, trainer_ids
