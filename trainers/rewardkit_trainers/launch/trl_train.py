"""``rewardkit train`` with ``backend: trl``: GRPO in this process with TRL.

Maps the ``train:`` section onto ``GRPOConfig``, builds the reward callables with
:func:`rewardkit_trainers.rewards.trl.trl_rewards`, shows a progress bar with the current mean
reward, and writes the reward curves (CSV + PNG) and the final model into the output
folder.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit.config import RewardConfig
from rewardkit.report.monitor import HackMonitor

from rewardkit_trainers.config import GeneratedData, TinyModel, TrainConfig
from rewardkit_trainers.curves import RewardCurves
from rewardkit_trainers.environments import FACTORY_KEY, load_environment_factory
from rewardkit_trainers.evaluate import max_total
from rewardkit_trainers.launch.data import materialise, normalise_rows, read_rows
from rewardkit_trainers.launch.hardware import CpuPlan, apply_cpu_plan, cpu_plan, passive_waits
from rewardkit_trainers.run_report import ScoredSampleLog, write_run_report

#: seconds between plain progress lines when the output is not a terminal (a log, CI)
PROGRESS_LINE_SECONDS = float(os.environ.get("REWARDKIT_PROGRESS_SECONDS", "10"))
#: ``train.extra_args`` keys that are GRPOTrainer arguments, not GRPOConfig fields
TRAINER_ARGS = ("tools", "environment_factory")


@dataclass
class TrainReport:
    """What a finished run reports."""

    output_dir: Path
    model_dir: Path
    curves_csv: Path
    curves_png: Path | None
    start_reward: float
    end_reward: float
    steps: int
    seconds: float
    report_html: Path | None = None
    #: seconds of ``trainer.train`` alone (no data, model building, saving)
    train_seconds: float = 0.0
    #: cores, threads and load of a CPU run (None on a GPU)
    cpu: CpuPlan | None = None
    #: the most a sample's total can be at the last step (None: normalize_then_sum)
    max_reward: float | None = None


def grpo_kwargs(train: TrainConfig, output_dir: Path, reward_kwargs: dict[str, Any],
                gpu: bool, processes: int = 1) -> tuple[dict[str, Any], list[str]]:
    """``GRPOConfig`` keyword arguments for ``train`` on ``processes`` training
    processes, and the names this TRL lacks.

    TRL counts ``per_device_train_batch_size`` in completions per process and micro-step,
    and generates ``per_device x processes x gradient_accumulation_steps`` completions
    (its default ``steps_per_generation``) per optimizer step; so it is
    ``batch_size x num_generations / (processes x gradient_accumulation_steps)``
    (:meth:`TrainConfig.batch_split`), and one optimizer step is ``batch_size`` prompts
    on any number of GPUs. ``max_prompt_length`` is not a GRPOConfig field in TRL 1.x:
    :func:`drop_overlong_prompts` applies it to the rows.
    """
    wanted: dict[str, Any] = {
        "output_dir": str(output_dir),
        "learning_rate": train.learning_rate,
        "lr_scheduler_type": train.lr_scheduler,
        "warmup_ratio": train.warmup_ratio,
        "num_generations": train.num_generations,
        "per_device_train_batch_size": train.batch_split(processes).per_device,
        "gradient_accumulation_steps": train.gradient_accumulation_steps,
        "max_completion_length": train.max_completion_length,
        "beta": train.beta,
        "num_train_epochs": train.epochs,
        "max_steps": train.max_steps or -1,
        "temperature": train.temperature,
        "top_p": train.top_p,
        "use_vllm": train.vllm.enabled is True,
        "bf16": train.bf16,
        "seed": train.seed,
        "logging_steps": train.logging_steps,
        "save_strategy": "steps" if train.save_steps else "no",
        "report_to": "none",
        "remove_unused_columns": False,
        "use_cpu": not gpu,
        "disable_tqdm": True,
        **reward_kwargs,
    }
    if train.save_steps:
        wanted["save_steps"] = train.save_steps
    if train.vllm.enabled is True and train.vllm.mode == "server":
        # the server runs `trl vllm-serve` on its own GPUs (rewardkit_trainers.launch.trl)
        wanted.update(vllm_mode="server", vllm_server_host="127.0.0.1",
                      vllm_server_port=train.vllm.server_port)
    elif train.vllm.enabled is True:
        wanted.update(vllm_mode="colocate",
                      vllm_gpu_memory_utilization=train.vllm.gpu_memory_utilization,
                      vllm_tensor_parallel_size=train.vllm.tensor_parallel_size)
    if train.lora is not None and train.lora.quantize:
        wanted["model_init_kwargs"] = {"quantization_config": _quantization(train)}
    wanted.update({k: v for k, v in train.extra_args.items() if k not in TRAINER_ARGS})
    from trl import GRPOConfig

    known = {f.name for f in dataclasses.fields(GRPOConfig)}
    if "multi_objective_aggregation" in wanted and "multi_objective_aggregation" not in known:
        raise RuntimeError(
            "aggregate: normalize_then_sum needs a TRL with GRPOConfig."
            "multi_objective_aggregation (TRL >= 1.16 tested); upgrade trl or use weighted_sum")
    if "warmup_ratio" not in known and "warmup_steps" in known:
        # transformers 5: a float warmup_steps in [0, 1) is the ratio
        ratio = wanted.pop("warmup_ratio")
        if ratio:
            wanted.setdefault("warmup_steps", float(ratio))
    dropped = [k for k in wanted if k not in known]
    return {k: v for k, v in wanted.items() if k in known}, dropped


def _quantization(train: TrainConfig) -> Any:
    from transformers import BitsAndBytesConfig

    assert train.lora is not None
    if train.lora.quantize == "8bit":
        return BitsAndBytesConfig(load_in_8bit=True)
    extra: dict[str, Any] = {}
    if train.gpus > 1 and train.deepspeed == "zero3":
        # ZeRO-3 shards parameters of one dtype: the 4-bit weights are stored in that dtype
        import torch

        extra["bnb_4bit_quant_storage"] = torch.bfloat16 if train.bf16 else torch.float32
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_use_double_quant=True, **extra)


def peft_config(train: TrainConfig) -> Any:
    """A ``peft.LoraConfig`` for ``train.lora`` (None without LoRA)."""
    if train.lora is None:
        return None
    from peft import LoraConfig

    return LoraConfig(r=train.lora.r, lora_alpha=train.lora.alpha,
                      lora_dropout=train.lora.dropout,
                      target_modules=train.lora.target_modules, task_type="CAUSAL_LM")


def prepare(reward_config: RewardConfig, train: TrainConfig, config_file: Path | None,
            output_dir: Path, gpu: bool | None = None,
            processes: int | None = None) -> dict[str, Any]:
    """Everything but the training itself: rows, model, tokenizer, GRPOConfig kwargs
    (for a GPU when ``gpu``; default: whether torch sees one) on ``processes`` training
    processes (default: the launcher's ``WORLD_SIZE``, else 1)."""
    train_file, _ = materialise(train, config_file, output_dir)
    source = str(config_file) if config_file else "<config>"
    rows = normalise_rows(read_rows(train_file, source), train.dataset)
    from rewardkit_trainers.rewards.trl import trl_rewards

    rewards = trl_rewards(reward_config, train.dataset.reference_column)
    if gpu is None:
        import torch

        gpu = torch.cuda.is_available()
    if processes is None:
        processes = int(os.environ.get("WORLD_SIZE", "1"))
    kwargs, dropped = grpo_kwargs(train, output_dir, rewards.grpo_kwargs(), gpu, processes)
    return {"rows": rows, "rewards": rewards, "kwargs": kwargs, "dropped": dropped,
            "train_file": train_file, "gpu": gpu, "tools": load_tools(train, config_file),
            "environment": load_environment_factory(train.extra_args.get(FACTORY_KEY),
                                                    config_file)}


def load_tools(train: TrainConfig, config_file: Path | None) -> list[Any]:
    """GRPOTrainer's ``tools``: the functions ``train.extra_args.tools`` names as
    ``module:function`` (the module found next to the config file first); TRL renders
    their schemas into the prompt and runs them in its tool loop. A ConfigError naming
    the entry that does not import."""
    import importlib
    import sys

    from rewardkit import ConfigError

    names = train.extra_args.get("tools") or []
    source = str(config_file or "<config>")
    if not isinstance(names, list) or not all(isinstance(n, str) and ":" in n for n in names):
        raise ConfigError(source, [("train.extra_args.tools", "a list of 'module:function' "
                                    f"import paths, got {names!r}")])
    folder = str(config_file.resolve().parent) if config_file else None
    if folder and folder not in sys.path:
        sys.path.insert(0, folder)
    tools = []
    for i, name in enumerate(names):
        module, _, attr = name.partition(":")
        try:
            tool = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(source, [(f"train.extra_args.tools.{i}",
                                        f"{name}: {type(exc).__name__}: {exc}")]) from None
        if not callable(tool):
            raise ConfigError(source, [(f"train.extra_args.tools.{i}", f"{name} is not a "
                                        "function")])
        tools.append(tool)
    return tools


def run(reward_config: RewardConfig, train: TrainConfig, config_file: Path | None,
        output_dir: Path, console: Any) -> TrainReport:
    """Train with TRL's GRPOTrainer; write curves and the final model."""
    import time

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    passive_waits()  # before torch loads (prepare imports it)
    started = time.monotonic()
    prep = prepare(reward_config, train, config_file, output_dir)
    rows, rewards, kwargs = prep["rows"], prep["rewards"], prep["kwargs"]
    # only what the config set is worth a word; a default this TRL lacks is simply left out
    asked = train.model_fields_set | set(train.extra_args)
    missing = [k for k in prep["dropped"] if k in asked]
    if missing:
        console.print(f"[dim]this TRL's GRPOConfig has no {', '.join(missing)}; "
                      "not applied[/]")

    import warnings

    from datasets import Dataset
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    # keep the terminal for the progress bar: no shard-writing bars, no v6 rename notices
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=".*deprecated and will be removed in v6",
                            category=FutureWarning)
    plan = None
    if not prep["gpu"]:
        plan = cpu_plan(tiny=isinstance(train.model, TinyModel))
        apply_cpu_plan(plan)
    if prep["environment"] is not None:  # the folders the workspace reward may read
        from rewardkit_trainers.environments import WORKSPACES_ENV

        os.environ.setdefault(WORKSPACES_ENV, str(output_dir / "workspaces"))
    model, tokenizer = _model_and_tokenizer(train, rows, output_dir, prep)
    rows = _fitting_rows(rows, tokenizer, train, config_file, console)
    dataset = Dataset.from_list(arrow_columns(
        rows, {"prompt", train.dataset.reference_column}, console))
    args = GRPOConfig(**kwargs)
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.funcs, args=args,
                          train_dataset=dataset, processing_class=tokenizer,
                          peft_config=peft_config(train), tools=prep["tools"] or None,
                          **({"environment_factory": prep["environment"]}
                             if prep["environment"] is not None else {}))
    rewards.attach(trainer)  # always: it also reads the tools and EOS ids for the rewards
    curves = RewardCurves(rewards.names)
    samples = ScoredSampleLog(num_generations=train.num_generations)
    samples.watch(rewards.scorer)
    monitor = HackMonitor.for_reward_set(rewards.scorer.reward_set)
    progress = make_progress_callback(curves, console, monitor=monitor, rows=samples.rows)
    _quiet_printer(trainer)
    trainer.add_callback(progress)
    resume = resume_checkpoint(train, output_dir)
    if resume:
        console.print(f"resuming from {resume}")
    training = time.monotonic()
    try:
        trainer.train(resume_from_checkpoint=resume)
    finally:
        progress.close()
    train_seconds = time.monotonic() - training
    model_dir = output_dir / "final"
    trainer.save_model(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    csv_path, png_path = curves.write(output_dir)
    steps = int(trainer.state.global_step)
    report_html = write_run_report(output_dir, samples, reward_config, curves.rows, steps)
    return TrainReport(output_dir, model_dir, csv_path, png_path,
                       curves.mean("reward", first=True), curves.mean("reward", first=False),
                       steps, time.monotonic() - started, report_html, train_seconds, plan,
                       max_total(rewards.scorer.reward_set, steps))


def _model_and_tokenizer(train: TrainConfig, rows: list[dict[str, Any]],
                         output_dir: Path, prep: dict[str, Any] | None = None
                         ) -> tuple[Any, Any]:
    """The policy (a tiny model built for ``rows``, or ``train.model``'s name for TRL to
    load) and its tokenizer, with a pad token. A tiny model of a run with tools or an
    environment gets a chat template that renders tool calls."""
    if isinstance(train.model, TinyModel) and prep and (prep.get("tools") or
                                                         prep.get("environment")):
        from rewardkit_trainers.environments import build_tiny_for_tools, environment_tools

        tools = list(prep.get("tools") or [])
        if prep.get("environment") is not None:
            tools += environment_tools(prep["environment"])
        return build_tiny_for_tools(train.model, rows, tools, output_dir / "base-model")
    if isinstance(train.model, TinyModel):
        from rewardkit_trainers.quickstart import build_tiny

        return build_tiny(train.model, rows, output_dir / "base-model")
    from rewardkit_trainers.quickstart import load_tokenizer

    tokenizer = load_tokenizer(train.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return train.model, tokenizer


def _fitting_rows(rows: list[dict[str, Any]], tokenizer: Any, train: TrainConfig,
                  config_file: Path | None, console: Any) -> list[dict[str, Any]]:
    """``rows`` without the prompts longer than ``max_prompt_length``, saying how many
    were left out; a ConfigError when none is left."""
    try:
        kept, dropped = drop_overlong_prompts(rows, tokenizer, train.max_prompt_length)
    except ValueError as exc:
        from rewardkit import ConfigError

        raise ConfigError(str(config_file or "<config>"),
                          [("train.max_prompt_length", str(exc))]) from None
    if dropped:
        console.print(f"left out {dropped} of {dropped + len(kept)} prompts longer "
                      f"than max_prompt_length ({train.max_prompt_length} tokens)")
    return kept


def arrow_columns(rows: list[dict[str, Any]], keep: set[str], console: Any
                  ) -> list[dict[str, Any]]:
    """The rows, with each column Arrow (``datasets.Dataset``) refuses as JSON text, and a
    note naming them; ``keep`` (the prompt, the reference) and every column Arrow takes
    stay as they are. BFCL's reference calls are refused (``precision: ["", 2, 3]`` mixes
    text and numbers); the tool rewards read such a column as JSON text."""
    import json

    import pyarrow as pa

    refused = []
    for column in sorted({k for row in rows for k in row} - keep):
        try:
            pa.array([row.get(column) for row in rows])
        except (pa.ArrowException, TypeError, ValueError):
            refused.append(column)
    if not refused:
        return rows
    console.print(f"[dim]columns Arrow cannot hold, passed as JSON text: "
                  f"{', '.join(refused)}[/]", soft_wrap=True)
    return [{k: json.dumps(v) if k in refused and v is not None else v
             for k, v in row.items()} for row in rows]


def drop_overlong_prompts(rows: list[dict[str, Any]], tokenizer: Any,
                          max_tokens: int) -> tuple[list[dict[str, Any]], int]:
    """The rows whose prompt (chat-templated when it is messages) is at most
    ``max_tokens`` tokens, and how many were left out: ``max_prompt_length`` as EasyR1
    (``data.filter_overlong_prompts``), verl (the same key, set by rewardkit) and ms-swift
    (``--truncation_strategy delete``) apply it, which TRL 1.x no longer does itself."""
    kept = []
    for row in rows:
        prompt = row.get("prompt", "")
        if isinstance(prompt, list):
            ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True,
                                                tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
        else:
            ids = tokenizer(str(prompt))["input_ids"]
        if len(ids) <= max_tokens:
            kept.append(row)
    if not kept:
        raise ValueError(f"all {len(rows)} prompts are longer than {max_tokens} tokens "
                         "and would be left out; raise it")
    return kept, len(rows) - len(kept)


def missing_grpo_fields(train: TrainConfig) -> list[str]:
    """The ``GRPOConfig`` arguments rewardkit sets for ``train`` that the installed TRL
    lacks (not applied); empty where TRL is not installed (the plan is for elsewhere)."""
    import importlib.util

    if importlib.util.find_spec("trl") is None:
        return []
    return grpo_kwargs(train, Path("."), {}, gpu=False)[1]


def resume_checkpoint(train: TrainConfig, output_dir: Path) -> str | None:
    """The checkpoint to resume from: ``train.resume`` as a path, or (``auto``/true) the
    step the SageMaker entrypoint restored (``REWARDKIT_RESUME_FROM``), else the newest
    ``checkpoint-<step>`` folder in ``output_dir``."""
    if train.resume is False or train.resume == "false":
        return None
    if isinstance(train.resume, str) and train.resume not in ("auto", "true"):
        return train.resume
    restored = os.environ.get("REWARDKIT_RESUME_FROM")
    if restored and Path(restored).is_dir():
        return restored
    found = [p for p in output_dir.glob("checkpoint-*")
             if p.is_dir() and p.name.split("-")[-1].isdigit()]
    if not found:
        return None
    return str(max(found, key=lambda p: int(p.name.split("-")[-1])))


def _quiet_printer(trainer: Any) -> None:
    """Drop the per-step log-dict printing; the progress bar shows the reward."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)


def make_progress_callback(curves: RewardCurves, console: Any,
                           every: float | None = None, monitor: HackMonitor | None = None,
                           rows: list[dict[str, Any]] | None = None) -> Any:
    """A TrainerCallback that fills ``curves`` and shows progress: a rich bar with the
    current mean reward on a terminal; otherwise (a log file, CI) a plain line
    ``step N/M  reward R  elapsed T`` at the start, every ``every`` seconds
    (``REWARDKIT_PROGRESS_SECONDS``, default 10) and at the last step.

    With a ``monitor`` (:class:`~rewardkit.report.monitor.HackMonitor`), each logged step
    goes to it with the scored ``rows`` recorded since the last one; a flag that starts
    is printed at once (``hack monitor: <flag> since step N: <evidence>``), and the plain
    lines end with the flags that still hold (``hack: <flag>, ...``)."""
    import time

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from transformers import TrainerCallback

    interval = PROGRESS_LINE_SECONDS if every is None else every

    class RewardProgress(TrainerCallback):
        def __init__(self) -> None:
            self.plain = not console.is_terminal
            self.bar = Progress(TextColumn("[bold]GRPO"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.description}"), TimeElapsedColumn(),
                                TimeRemainingColumn(), console=console, transient=False,
                                disable=self.plain)
            self.task: Any = None
            self.started = time.monotonic()
            self.last_line = -float("inf")
            self.reward: float | None = None
            self.total = 0
            self.printed = -1
            self.fed = 0
            self.watching = True

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.started = time.monotonic()
            self.total = int(state.max_steps or 0)
            self.bar.start()
            self.task = self.bar.add_task("reward -", total=state.max_steps)
            if self.plain:
                self._line(int(state.global_step))

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.task is not None:
                self.bar.update(self.task, completed=state.global_step)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None,
                   **kw: Any) -> None:
            row = curves.add(state.global_step, logs or {})
            if row and monitor is not None and self.watching:
                new = rows[self.fed:] if rows is not None else []
                self.fed += len(new)
                try:
                    started = monitor.step(int(state.global_step), row, new)
                except Exception as exc:  # a monitor fault must not cost the run
                    self.watching = False
                    started = []
                    console.print(f"hack monitor stopped: {type(exc).__name__}: {exc}",
                                  markup=False, highlight=False)
                for flag in started:
                    console.print(f"hack monitor: {flag.line()}", markup=False,
                                  highlight=False)
            if row and "reward" in row:
                self.reward = row["reward"]
                if self.task is not None:
                    self.bar.update(self.task, description=f"reward {row['reward']:.3f}")
            if self.plain:
                step = int(state.global_step)
                now = time.monotonic()
                due = now - self.last_line >= interval or step >= self.total
                if due and step != self.printed:
                    self._line(step)

        def _line(self, step: int) -> None:
            self.printed = step
            self.last_line = time.monotonic()
            elapsed = int(self.last_line - self.started)
            reward = "-" if self.reward is None else f"{self.reward:.3f}"
            held = [f.short() for f in monitor.flags if f.active] if monitor else []
            flags = f"  hack: {', '.join(held)}" if held else ""
            console.print(f"GRPO step {step}/{self.total}  reward {reward}  "
                          f"elapsed {elapsed // 60}:{elapsed % 60:02d}{flags}", markup=False,
                          highlight=False)

        def close(self) -> None:
            self.bar.stop()

    return RewardProgress()


def describe(prep: dict[str, Any], train: TrainConfig) -> dict[str, Any]:
    """What ``--dry-run`` shows for TRL: the GRPOConfig and the reward functions."""
    rewards = prep["rewards"]
    model = train.model if isinstance(train.model, str) else train.model.model_dump()
    return {
        "backend": "trl",
        "model": model,
        "dataset": str(prep["train_file"]),
        "rows": len(prep["rows"]),
        "data_generated": isinstance(train.dataset.train, GeneratedData),
        "reward_funcs": rewards.names,
        "weight_schedule_callback": rewards.scheduled,
        "grpo_config": {k: (v if isinstance(v, str | int | float | bool | list | type(None))
                            else repr(v)) for k, v in prep["kwargs"].items()},
        "ignored_by_this_trl": prep["dropped"],
        # not a GRPOConfig field in TRL 1.x: longer prompts are left out of the rows
        "max_prompt_length": train.max_prompt_length,
        "peft": train.lora.model_dump() if train.lora else None,
        "environment_factory": train.extra_args.get(FACTORY_KEY),
        **_describe_tools(prep),
    }


def _describe_tools(prep: dict[str, Any]) -> dict[str, Any]:
    """The dry run's word on tools: the schemas TRL will render (``tools``), and a note
    when the rows carry a ``tools`` column that no tool of the trainer runs."""
    from rewardkit_trainers.rewards.trl import tool_schemas

    out: dict[str, Any] = {"tools": [s.get("function", s) for s in tool_schemas(prep["tools"])]}
    if prep.get("environment") is not None:  # each rollout's environment: its methods
        from rewardkit_trainers.environments import environment_tools

        out["environment_tools"] = [s.get("function", s) for s in tool_schemas(
            environment_tools(prep["environment"]))]
    if not prep["tools"] and prep.get("environment") is None and \
            any("tools" in row for row in prep["rows"]):
        out["tools_note"] = (
            "the dataset has a tools column, which reaches the rewards, but GRPOTrainer "
            "gets no tools: TRL renders none into the prompt and runs no call; name the "
            "functions in train.extra_args.tools ('module:function')")
    return out


def main(argv: list[str] | None = None) -> int:
    """One process of a launched TRL run (``accelerate launch -m rewardkit_trainers.launch.trl_train
    --config CONFIG --train TRAIN.json``): trains with the train section exactly as the
    launching ``rewardkit train`` resolved it. Only the main process prints."""
    import argparse

    from rewardkit import ConfigError
    from rewardkit.config import load_config
    from rich.console import Console

    parser = argparse.ArgumentParser(prog="python -m rewardkit_trainers.launch.trl_train")
    parser.add_argument("--config", required=True, help="reward config")
    parser.add_argument("--train", required=True, help="resolved train section (JSON)")
    args = parser.parse_args(argv)
    config_file = Path(args.config).resolve()
    try:
        reward_config = load_config(config_file)
        train = TrainConfig.model_validate_json(Path(args.train).read_text(encoding="utf-8"))
    except ConfigError as exc:
        print(exc.render())
        return 2
    from rewardkit_trainers.config import resolve

    output_dir = resolve(train.output_dir, config_file)
    main_process = os.environ.get("RANK", "0") == "0"
    console = Console(highlight=False, quiet=not main_process, soft_wrap=True)  # no cut paths
    report = run(reward_config, train, config_file, output_dir, console)
    console.print(f"done in {report.seconds:.0f}s, {report.steps} steps; model: {report.model_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
