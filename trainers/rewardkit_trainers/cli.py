"""``rewardkit train | export | eval | launch | jobs``: the trainer commands.

They reach the ``rewardkit`` command line through the ``register_commands`` hook
(:mod:`rewardkit_trainers.plugin`); the core prints their problems as it prints its own
(``file: key.path: reason``, exit code 2, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rewardkit import EXIT_OK, Subcommands, UsageError

from rewardkit_trainers.sagemaker.arguments import jobs_arguments, launch_arguments


def add_commands(subparsers: Subcommands) -> None:
    """Add ``train``, ``export``, ``eval``, ``launch`` and ``jobs`` to ``rewardkit``."""
    _train_arguments(subparsers.add_parser(
        "train", help="run GRPO with the config's reward and train: section",
        description=_TRAIN_DESCRIPTION)).set_defaults(func=_train)
    _export_arguments(subparsers.add_parser(
        "export", help="write the composed reward in a trainer's own format",
        description="Write the composed reward in a trainer's own format.",
    )).set_defaults(func=_export)
    _eval_arguments(subparsers.add_parser(
        "eval", help="accuracy and reward of base vs trained model on the test split",
        description=_EVAL_DESCRIPTION)).set_defaults(func=_eval)
    launch_arguments(subparsers.add_parser(
        "launch", help="launch a training run on a cloud platform (sagemaker)",
        description="Launch a training run on a cloud platform.")).set_defaults(func=_launch)
    jobs_arguments(subparsers.add_parser(
        "jobs", help="status and logs of a SageMaker training job",
        description="SageMaker jobs.")).set_defaults(func=_jobs)


def run(command: str, argv: list[str]) -> int:
    """``rewardkit <command> <argv...>`` through the core command line (scripts, tests);
    returns the exit code."""
    from rewardkit.cli import main

    return main([command, *argv])


def _console() -> Any:
    """rewardkit's own standard output: in a log or a pipe it is 160 columns wide and
    never breaks a line, so a path is not cut in the middle of a name."""
    from rewardkit.cli import out

    return out


# ---------------------------------------------------------------- train


_TRAIN_DESCRIPTION = (
    "Run GRPO with the config's composed reward and its train: section. "
    "TRL runs in this process; ms-swift, EasyR1 and verl run as their own commands "
    "(data converted, reward file exported). EasyR1 and verl, which pass no step to "
    "rewards, run one job per reward stage, each resuming from the previous one."
)


def _train_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("config", help="reward config (.yaml/.toml) with a train: section")
    p.add_argument("--dry-run", action="store_true",
                   help="print the exact command(s)/config and write the files, run nothing")
    p.add_argument("--backend", choices=["trl", "swift", "easyr1", "verl"],
                   help="override train.backend")
    p.add_argument("--output-dir", help="override train.output_dir")
    p.add_argument("--max-steps", type=int, help="override train.max_steps")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def _train(args: argparse.Namespace) -> int:
    from rewardkit_trainers.launch.runner import dry_run, execute, load_run

    plan = load_run(args.config, backend=args.backend, output_dir=args.output_dir,
                    max_steps=args.max_steps)
    console = _console()
    if args.dry_run:
        description = dry_run(plan)
        if args.json:
            print(json.dumps(description, indent=2, default=str))
        else:
            _print_description(console, description)
        return EXIT_OK
    return execute(plan, console)


def _print_description(console: Any, description: dict[str, Any]) -> None:
    commands = description.get("commands")
    if commands:
        for i, job in enumerate(commands):
            console.rule(f"job {i + 1}/{len(commands)}: {job.get('label', '')}")
            console.print(job["shell"], markup=False, soft_wrap=True)
            for path, text in job.get("files", {}).items():
                console.print(f"[dim]# {path}[/]")
                console.print(text, markup=False, soft_wrap=True)
    rest = {k: v for k, v in description.items() if k != "commands"}
    console.print_json(json.dumps(rest, default=str))


# ---------------------------------------------------------------- export


def _export_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("target", choices=["trl", "swift", "easyr1", "verl"])
    p.add_argument("config", help="reward config (.yaml/.toml)")
    p.add_argument("-o", "--output",
                   help="file to write (swift, easyr1, trl: the reward file; verl: the "
                   "overrides, one per line, for `$(cat FILE)`)")
    p.add_argument("--step", type=int, default=None,
                   help="easyr1/verl: pin stages and schedules to this step (EasyR1 passes none)")
    p.add_argument("--fallback", type=float, default=0.0,
                   help="easyr1/verl: value for a failed grading (counted in *_failed)")
    return p


def _export(args: argparse.Namespace) -> int:
    from rewardkit.config import load_config

    config_path = Path(args.config)
    reward_config = load_config(config_path)
    from rewardkit_trainers.fidelity import check, pinned_file_warnings

    warnings = check(reward_config, args.target, str(config_path))
    warnings += pinned_file_warnings(reward_config, args.target, args.step or 0)
    for warning in warnings:
        print(f"rewardkit export: warning: {warning}", file=sys.stderr)
    console = _console()
    if args.target == "swift":
        from rewardkit_trainers.rewards.swift import export_plugin

        out = Path(args.output or "rewardkit_swift_plugin.py")
        info = export_plugin(reward_config, config_path, out)
        console.print(f"wrote {out}")
        console.print("ms-swift arguments:", style="bold")
        console.print(" ".join(info.arguments()), markup=False, soft_wrap=True)
        return EXIT_OK
    if args.target == "easyr1":
        from rewardkit_trainers.launch.easyr1 import (
            export_probe_row,
            refuse_needs,
            rollout_needs_of,
        )
        from rewardkit_trainers.rewards.easyr1 import export_reward_file

        # refused as `rewardkit train --backend easyr1` refuses it: a component that
        # needs a trajectory or the finish reason would fail on every row
        row, reference_column = export_probe_row(reward_config, config_path)
        refuse_needs(str(config_path), rollout_needs_of(reward_config, row, reference_column))
        out = Path(args.output or "rewardkit_easyr1_reward.py")
        export_reward_file(reward_config, config_path, out, step=args.step or 0,
                           fallback=args.fallback)
        console.print(f"wrote {out}")
        console.print("EasyR1 argument:", style="bold")
        console.print(f"worker.reward.reward_function={out.resolve()}:compute_score",
                      markup=False, soft_wrap=True)
        return EXIT_OK
    if args.target == "verl":
        from rewardkit_trainers.launch.verl import export_rollout_args, hydra_value
        from rewardkit_trainers.rewards.verl import overrides

        # rewards that need a trajectory grade only under rewardkit's tool agent loop:
        # selected (its registry written beside the overrides) when the config names
        # verl's tools, else refused as `rewardkit train --backend verl` refuses it
        target = Path(args.output) if args.output else None
        registry = (target.parent if target else Path.cwd()) / "rewardkit_verl_agent_loop.yaml"
        rollout = export_rollout_args(reward_config, config_path, registry)
        lines = overrides(config_path, step=args.step, fallback=args.fallback)
        lines += [f"{k}={hydra_value(v)}" for k, v in rollout.items()]
        if rollout:
            print(f"rewardkit export: wrote {registry} (the agent loop the overrides name)",
                  file=sys.stderr)
        if target:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(lines) + "\n", encoding="utf-8")
            console.print(f"wrote {target}")
            return EXIT_OK
        for line in lines:
            console.print(line, markup=False, soft_wrap=True)
        return EXIT_OK
    from rewardkit_trainers.rewards.trl import export_module

    out = Path(args.output or "rewardkit_trl_rewards.py")
    export_module(config_path, out)
    console.print(f"wrote {out}")
    console.print(
        f"use: from {out.stem} import REWARDS, grpo_kwargs, reward_funcs; "
        "trainer = GRPOTrainer(model=..., reward_funcs=reward_funcs, "
        "args=GRPOConfig(output_dir=..., **grpo_kwargs), train_dataset=...); "
        "REWARDS.attach(trainer); trainer.train()", markup=False, soft_wrap=True)
    return EXIT_OK


# ---------------------------------------------------------------- eval


_EVAL_DESCRIPTION = (
    "Generate on the test split and score with the composed reward: accuracy "
    "and mean reward per component, base model vs trained model."
)


def _eval_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("config")
    p.add_argument("--model", help="trained model (default: train.output_dir/final)")
    p.add_argument("--base-model", help="base model (default: train.model)")
    p.add_argument("--split", help="test file (jsonl/json/parquet)")
    p.add_argument("--limit", type=int, help="first N test rows")
    p.add_argument("--no-base", action="store_true", help="evaluate only the trained model")
    p.add_argument("--json", action="store_true")
    return p


def _eval(args: argparse.Namespace) -> int:
    from rewardkit_trainers.evaluate import evaluate_config, print_report

    report = evaluate_config(args.config, model=args.model, base_model=args.base_model,
                             split=args.split, limit=args.limit, include_base=not args.no_base)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_report(_console(), report)
    return EXIT_OK


# ---------------------------------------------------------------- launch / jobs


def _sagemaker_cli() -> Any:
    try:
        from rewardkit_trainers.sagemaker import cli as sm_cli
    except ImportError as exc:
        raise UsageError(
            f"this command needs rewardkit_trainers.sagemaker, which is not available "
            f"here ({exc}); install rewardkit-trainers[sagemaker]"
        ) from None
    return sm_cli


def _launch(args: argparse.Namespace) -> int:
    code: int = _sagemaker_cli().run_launch(args)
    return code


def _jobs(args: argparse.Namespace) -> int:
    code: int = _sagemaker_cli().run_jobs(args)
    return code
