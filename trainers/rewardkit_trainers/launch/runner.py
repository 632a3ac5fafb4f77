"""``rewardkit train``: from a config to a finished run on the chosen backend.

:func:`load_run` validates the config and makes a :class:`~.plan.RunPlan` for this
machine; :func:`dry_run` writes every file and returns the exact commands without
running anything; :func:`execute` runs them. What each backend runs comes from its
planner in :mod:`rewardkit_trainers.launch.backends`:

* ``trl`` trains in this process (:mod:`rewardkit_trainers.launch.trl_train`) on one GPU
  or the CPU; on more GPUs or nodes, or with a vLLM server, it runs ``accelerate launch``
  with a DeepSpeed ZeRO config (and ``trl vllm-serve`` first):
  :mod:`rewardkit_trainers.launch.trl`.
* ``swift`` runs ``swift rlhf --rlhf_type grpo ...`` (:mod:`rewardkit_trainers.launch.swift`);
  ms-swift passes ``trainer_state``, so stages and schedules follow the step in one job.
* ``verl`` and ``easyr1`` pass no step to rewards, so a staged config runs as one job per
  *segment* (:mod:`rewardkit_trainers.launch.segments`), each pinned to its first step and
  resuming from the previous one's checkpoint (:mod:`rewardkit_trainers.launch.verl`,
  :mod:`rewardkit_trainers.launch.easyr1`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rewardkit import EXIT_OK, EXIT_USAGE, ConfigError
from rewardkit.config import load_config, read_config_file

from rewardkit_trainers.config import TrainConfig, parse_train
from rewardkit_trainers.fidelity import check, job_warnings
from rewardkit_trainers.launch.backends import build_jobs
from rewardkit_trainers.launch.hardware import Hardware, detect_hardware
from rewardkit_trainers.launch.plan import (
    Job,
    NodePlacement,
    RunPlan,
    placement_from_env,
)

READY_TIMEOUT_S = 900.0
"""How long a background job (the vLLM server) may take to answer its ready URL."""


def jobs(plan: RunPlan) -> list[Job]:
    """The external commands of a run (files written as a side effect): its backend's
    planner (:mod:`rewardkit_trainers.launch.backends`)."""
    return build_jobs(plan)


#: what each backend's trainer takes as a completion's reward, which is why per-turn values
#: reach it as one number (docs/agents.md, "Per-turn values on each backend")
PER_TURN_DELIVERY = {
    "trl": "TRL 1.x's GRPOTrainer takes one reward per completion from each reward "
           "function (_calculate_rewards: a completions x functions matrix)",
    "swift": "ms-swift's GRPO trainer takes one reward per completion from each reward "
             "function (_compute_rewards_per_func); its multi-turn schedulers pass no "
             "per-turn reward to the loss (the gym scheduler's step_rewards are summed "
             "into one total_reward)",
    "easyr1": "EasyR1's reward function returns one score per response, and it rolls out "
              "text only (a config whose rewards need a trajectory is refused)",
    "verl": "verl 0.9.1's reward loop takes one float per response (reward_score) and "
            "puts it at the last valid token, in the agent loop worker's streaming path "
            "and in assemble_rm_scores, which is handed the floats only; GRPO sums a "
            "response's token rewards, so placing values at each turn's last token would "
            "train the same",
}


def per_turn_note(plan: RunPlan) -> str:
    """How per-turn values reach the plan's backend: reduced to one number per completion
    by each component's ``turns`` (naming the components that set one), and why."""
    named = [f"{name} (turns: {c.turns})" for name, c in plan.reward_config.rewards.items()
             if c.turns != "last" or (c.params or {}).get("per_turn")]
    which = f" ({', '.join(named)})" if named else ""
    return (f"per-turn values reach {plan.train.backend} as one number per completion, "
            f"each component's turns reduction{which}: "
            f"{PER_TURN_DELIVERY[plan.train.backend]}")


def dry_run(plan: RunPlan) -> dict[str, Any]:
    """Write the files and describe the run without running it."""
    plan.output_dir.mkdir(parents=True, exist_ok=True)
    hardware = {"gpus": plan.hardware.gpus, "vllm": plan.hardware.vllm,
                "nodes": plan.placement.num_nodes, "node_rank": plan.placement.rank}
    if plan.train.backend == "trl":
        from rewardkit_trainers.launch.trl_train import describe, prepare

        prep = prepare(plan.reward_config, plan.train, plan.config_file, plan.output_dir,
                       gpu=plan.hardware.gpus > 0, processes=plan.processes())
        described = {**describe(prep, plan.train), "output_dir": str(plan.output_dir),
                     "hardware": hardware, "warnings": plan.warnings,
                     "per_turn": per_turn_note(plan)}
        if plan.launched:
            described["commands"] = [j.describe() for j in jobs(plan)]
        return described
    return {"backend": plan.train.backend, "output_dir": str(plan.output_dir),
            "hardware": hardware, "commands": [j.describe() for j in jobs(plan)],
            "warnings": plan.warnings, "per_turn": per_turn_note(plan)}


def execute(plan: RunPlan, console: Any) -> int:
    """Run it; returns the exit code."""
    plan.output_dir.mkdir(parents=True, exist_ok=True)
    for warning in plan.warnings:
        console.print(f"[yellow]warning:[/] {warning}", markup=True, soft_wrap=True)
    if plan.train.backend == "trl" and not plan.launched:
        return _train_here(plan, console)
    return run_jobs(jobs(plan), console)


def _train_here(plan: RunPlan, console: Any) -> int:
    """TRL in this process (one GPU or the CPU), with its summary lines."""
    from rewardkit_trainers.launch.trl_train import run

    report = run(plan.reward_config, plan.train, plan.config_file, plan.output_dir, console)
    on = f" on {report.cpu.describe()}" if report.cpu else " on the GPU"
    of = f" (of {report.max_reward:g})" if report.max_reward is not None else ""
    console.print(
        f"[bold]done[/] in {report.seconds:.0f}s ({report.train_seconds:.0f}s "
        f"training{on}), {report.steps} steps. "
        f"mean reward: start {report.start_reward:.3f} -> end {report.end_reward:.3f}{of}",
        soft_wrap=True)  # one line, whatever the width: logs and scripts read it
    console.print(f"model: {report.model_dir}", markup=False, soft_wrap=True)
    console.print(f"curves: {report.curves_csv}"
                  + (f", {report.curves_png}" if report.curves_png else ""),
                  markup=False, soft_wrap=True)
    if report.report_html:
        console.print(f"report: {report.report_html}", markup=False, soft_wrap=True)
    return EXIT_OK


def run_jobs(jobs: list[Job], console: Any) -> int:
    """Run the jobs in order (a background job runs until the others are done, and the
    next one starts once its ``ready_url`` answers); returns the exit code."""
    missing = sorted({j.argv[0] for j in jobs if shutil.which(j.argv[0]) is None})
    if missing:
        hint = {"swift": "activate the ms-swift environment (e.g. .venv-swift)",
                "python3": "install python3 with EasyR1",
                "accelerate": "pip install accelerate deepspeed",
                "trl": "pip install 'trl[vllm]'"}
        console.print(f"[red]cannot run {', '.join(missing)}: not on PATH[/]; "
                      + "; ".join(hint.get(m, "install it") for m in missing)
                      + ". `--dry-run` prints the commands without running them.")
        return EXIT_USAGE
    servers: list[subprocess.Popen[bytes]] = []
    previous = _exit_on_sigterm() if any(j.background for j in jobs) else None
    try:
        for i, job in enumerate(jobs):
            console.rule(f"job {i + 1}: {job.label}")
            console.print(job.shell, markup=False, soft_wrap=True)
            env = {**os.environ, **job.env}
            if job.background:
                proc = subprocess.Popen(job.argv, cwd=job.cwd, env=env, process_group=0)
                servers.append(proc)
                problem = wait_ready(proc, job.ready_url, READY_TIMEOUT_S)
                if problem:
                    console.print(f"[red]job {i + 1} ({job.label}): {problem}[/]")
                    return 1
                continue
            code = subprocess.call(job.argv, cwd=job.cwd, env=env)
            if code != 0:
                console.print(f"[red]job {i + 1} ({job.label}) failed with exit code "
                              f"{code}[/]")
                return code
        return EXIT_OK
    finally:
        for proc in servers:
            stop_group(proc)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm() -> Any:
    """SIGTERM (a spot interruption reaching ``rewardkit train``) becomes SystemExit, so
    the background server in its own process group is stopped too. Returns the previous
    handler (None outside the main thread, where nothing is changed)."""

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:
        return None


def wait_ready(proc: subprocess.Popen[bytes], url: str | None, timeout_s: float,
               stop: threading.Event | None = None) -> str | None:
    """Wait until ``url`` answers 200; returns what went wrong, or None when ready.
    ``stop`` (set by a signal handler) ends the wait early."""
    if url is None:
        return None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if stop is not None and stop.is_set():
            return f"stopped before {url} answered"
        if proc.poll() is not None:
            return f"exited with code {proc.returncode} before {url} answered"
        with contextlib.suppress(urllib.error.URLError, OSError), \
                urllib.request.urlopen(url, timeout=5) as response:
            if response.status == 200:
                return None
        time.sleep(1.0)
    return f"{url} did not answer within {timeout_s:.0f}s"


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = 30.0) -> None:
    """SIGTERM a background job's process group, SIGKILL it after ``grace_s``."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def load_run(config: str | Path, backend: str | None = None, output_dir: str | None = None,
             max_steps: int | None = None, hardware: Hardware | None = None,
             placement: NodePlacement | None = None) -> RunPlan:
    """Validate the reward config and its ``train:`` section (with CLI overrides), and
    make its automatic choices (GPU count, vLLM) for ``hardware`` (default: this
    machine's, :func:`rewardkit_trainers.launch.hardware.detect_hardware`) and ``placement``
    (default: the SageMaker entrypoint's environment, else one node)."""
    path = Path(config)
    reward_config = load_config(path)
    raw = (dict(read_config_file(path).get("train") or {})
           if reward_config.section("train") is not None else None)
    if raw is not None:
        if backend:
            raw["backend"] = backend
        if output_dir:
            raw["output_dir"] = str(Path(output_dir).resolve())
        if max_steps:
            raw["max_steps"] = max_steps
    train = parse_train(raw, str(path))
    from rewardkit_trainers.environments import refuse_environment_factory

    refuse_environment_factory(train.backend, train.extra_args, str(path))  # TRL's only
    try:
        hardware = hardware or detect_hardware()
        placement = placement or placement_from_env()
    except ValueError as exc:
        raise ConfigError(str(path), [("train", str(exc))]) from None
    requested, train = train, train.for_hardware(hardware.gpus, hardware.vllm)
    warnings = check(reward_config, train.backend, str(path))
    plan = RunPlan(path.resolve(), reward_config, train, hardware, placement, warnings)
    plan.batch()  # batch_size that does not split over these GPUs: refused here
    plan.warnings += job_warnings(plan)  # components a pinned job trains without
    plan.warnings += unhonoured_keys(plan, requested)
    return plan


#: (backend, key) -> (is the key's value, as the config asks it, one the backend honours;
#: what happens instead)
_UNHONOURED: dict[tuple[str, str], tuple[Any, str]] = {
    ("easyr1", "logging_steps"): (lambda t: t.logging_steps == 1, "EasyR1 logs every step"),
    ("verl", "logging_steps"): (lambda t: t.logging_steps == 1, "verl logs every step"),
    ("easyr1", "lora.dropout"): (lambda t: t.lora is None or t.lora.dropout == 0,
                                 "EasyR1's LoRA has no dropout (it trains with 0; set "
                                 "lora.dropout: 0 for the same run everywhere)"),
    ("verl", "lora.dropout"): (lambda t: t.lora is None or t.lora.dropout == 0,
                               "verl's FSDP LoRA has no dropout (it trains with 0; set "
                               "lora.dropout: 0 for the same run everywhere)"),
    ("easyr1", "lora.quantize"): (lambda t: t.lora is None or t.lora.quantize is None,
                                  "EasyR1 trains the LoRA on unquantised weights"),
    ("verl", "lora.quantize"): (lambda t: t.lora is None or t.lora.quantize is None,
                                "verl trains the LoRA on unquantised weights"),
    ("easyr1", "vllm.enabled"): (lambda t: t.vllm.enabled is not False,
                                 "EasyR1 always generates with vLLM"),
    ("verl", "vllm.enabled"): (lambda t: t.vllm.enabled is not False,
                               "verl generates with vLLM (actor_rollout_ref.rollout.name)"),
    ("easyr1", "bf16"): (lambda t: t.bf16, "EasyR1's FSDP computes in bfloat16 "
                         "(fsdp.mp_param_dtype); set bf16: true to train the same everywhere"),
    ("verl", "bf16"): (lambda t: t.bf16, "verl's FSDP computes in bfloat16 "
                       "(fsdp_config.dtype); set bf16: true to train the same everywhere"),
    ("easyr1", "epochs"): (lambda t: t.max_steps is not None or float(t.epochs).is_integer(),
                           "EasyR1 runs whole epochs (trainer.total_epochs is rounded); "
                           "set max_steps for a part of one"),
    ("verl", "epochs"): (lambda t: t.max_steps is not None or float(t.epochs).is_integer(),
                         "verl runs whole epochs (trainer.total_epochs is rounded); set "
                         "max_steps for a part of one"),
    ("easyr1", "vllm.mode"): (lambda t: t.vllm.mode == "colocate",
                              "EasyR1 runs vLLM colocated with the actor"),
    ("verl", "vllm.mode"): (lambda t: t.vllm.mode == "colocate",
                            "verl runs vLLM colocated with the actor"),
}

#: learning-rate schedules EasyR1 and verl implement (their optimiser builders raise on others)
FSDP_SCHEDULERS = ("constant", "cosine")


def unhonoured_keys(plan: RunPlan, requested: TrainConfig) -> list[str]:
    """A warning per ``train:`` key whose value, as ``requested`` (before the automatic
    choices for this machine), the backend cannot honour, saying what it does instead; a
    learning-rate schedule it lacks is a ConfigError naming the ones it has."""
    t = plan.train
    out = [f"train.{key}: not honoured on {t.backend}: {instead}"
           for (backend, key), (honoured, instead) in _UNHONOURED.items()
           if backend == t.backend and not honoured(requested)]
    if t.backend in ("easyr1", "verl") and t.lr_scheduler not in FSDP_SCHEDULERS:
        raise ConfigError(str(plan.config_file), [(
            "train.lr_scheduler", f"{t.lr_scheduler!r} is not a schedule {t.backend} has; "
            f"use one of {', '.join(FSDP_SCHEDULERS)}")])
    if t.backend in ("easyr1", "verl") and t.deepspeed == "none" and plan.processes() > 1:
        out.append(f"train.deepspeed: none (DDP) is not honoured on {t.backend}: its FSDP "
                   "shards at least gradients and optimizer state, so it trains as zero2")
    if t.backend == "trl":
        from rewardkit_trainers.launch.trl_train import missing_grpo_fields

        out += [f"{key}: not applied: this TRL's GRPOConfig has no such argument"
                for key in missing_grpo_fields(t)]
    return out
