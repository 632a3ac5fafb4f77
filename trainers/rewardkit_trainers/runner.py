"""``rewardkit train``: from a config to a finished run on the chosen backend.

* ``trl`` trains in this process (:mod:`rewardkit_trainers.trl_train`).
* ``swift`` runs ``swift rlhf --rlhf_type grpo ...`` with the dataset as ms-swift JSONL
  and the exported ``--external_plugins`` file; ms-swift passes ``trainer_state``, so
  stages and schedules follow the step inside one job.
* ``verl`` runs ``python3 -m verl.trainer.main_ppo ...`` (Hydra overrides) with the
  ``pkg://rewardkit_trainers.verl`` reward, once per reward stage like EasyR1.
* ``easyr1`` runs ``python3 -m verl.trainer.main config=...`` once per reward stage:
  EasyR1 passes no step to reward functions, so each job's reward file is pinned to
  its stage's first step, and each job after the first resumes from the previous one's
  checkpoint (``trainer.load_checkpoint_path=.../global_step_<boundary>``).

:meth:`RunPlan.dry_run` writes every file and returns the exact commands without
running anything.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit import ConfigError
from rewardkit.cli import EXIT_OK, EXIT_USAGE
from rewardkit.config import RewardConfig, load_config, read_config_file

from rewardkit_trainers.config import TrainConfig, parse_train, resolve


@dataclass
class Job:
    """One external command of a run."""

    label: str
    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)

    @property
    def shell(self) -> str:
        """The command as one copy-pasteable shell line (wrapped before each option)."""
        parts: list[str] = []
        for i, arg in enumerate(self.argv):
            quoted = shlex.quote(arg)
            option = arg.startswith("--") or ("=" in arg and not arg.startswith("-"))
            parts.append((" \\\n    " if i and option else " " if i else "") + quoted)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        cmd = "".join(parts)
        return f"{env} {cmd}" if env else cmd

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "argv": self.argv, "cwd": str(self.cwd), "env": self.env,
                "shell": self.shell, "files": self.files}


@dataclass
class RunPlan:
    """A validated run: reward config, train section and where it writes."""

    config_file: Path
    reward_config: RewardConfig
    train: TrainConfig
    #: what the backend approximates (rewardkit_trainers.fidelity.check)
    warnings: list[str] = field(default_factory=list)

    @property
    def output_dir(self) -> Path:
        return resolve(self.train.output_dir, self.config_file)

    def stage_boundaries(self) -> list[int]:
        """Steps where a new job starts (besides 0), for backends that pass no step:
        ``train.stages``, or every ``until_step`` of the reward stages."""
        if self.train.stages != "auto":
            return sorted(set(self.train.stages))
        found: set[int] = set()
        for comp in self.reward_config.rewards.values():
            for stage in comp.stages or []:
                if stage.until_step is not None:
                    found.add(stage.until_step)
        return sorted(found)

    def stage_ranges(self, backend: str) -> list[tuple[int, int | None]]:
        """``(first step, end step)`` of each successive job (end None = run to the end)."""
        boundaries = self.stage_boundaries()
        total = self.train.max_steps
        if boundaries and total is None:
            raise ConfigError(str(self.config_file), [(
                "train.max_steps",
                f"needed: {backend} runs the reward stages as successive jobs (boundaries at "
                f"steps {boundaries}), which needs a step count rather than epochs")])
        ends: list[int | None] = [b for b in boundaries if total is None or b < total]
        ends.append(total)
        starts = [0, *[e for e in ends[:-1] if e is not None]]
        return list(zip(starts, ends, strict=True))

    def jobs(self) -> list[Job]:
        """The external commands of a swift / easyr1 run (files written as a side effect)."""
        if self.train.backend == "swift":
            from rewardkit_trainers.swift import build_jobs

            return build_jobs(self)
        if self.train.backend == "easyr1":
            from rewardkit_trainers.easyr1 import build_jobs as build_easyr1

            return build_easyr1(self)
        if self.train.backend == "verl":
            from rewardkit_trainers.verl import build_jobs as build_verl

            return build_verl(self)
        raise ValueError(f"backend {self.train.backend} runs in-process")

    def dry_run(self) -> dict[str, Any]:
        """Write the files and describe the run without running it."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if self.train.backend == "trl":
            from rewardkit_trainers.trl_train import describe, prepare

            prep = prepare(self.reward_config, self.train, self.config_file, self.output_dir)
            return {**describe(prep, self.train), "output_dir": str(self.output_dir),
                    "warnings": self.warnings}
        jobs = self.jobs()
        return {"backend": self.train.backend, "output_dir": str(self.output_dir),
                "commands": [j.describe() for j in jobs], "warnings": self.warnings}

    def execute(self, console: Any) -> int:
        """Run it; returns the exit code."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        for warning in self.warnings:
            console.print(f"[yellow]warning:[/] {warning}", markup=True, soft_wrap=True)
        if self.train.backend == "trl":
            from rewardkit_trainers.trl_train import run

            report = run(self.reward_config, self.train, self.config_file, self.output_dir,
                         console)
            console.print(
                f"[bold]done[/] in {report.seconds:.0f}s, {report.steps} steps. "
                f"mean reward: start {report.start_reward:.3f} -> end {report.end_reward:.3f}")
            console.print(f"model: {report.model_dir}")
            console.print(f"curves: {report.curves_csv}"
                          + (f", {report.curves_png}" if report.curves_png else ""))
            if report.report_html:
                console.print(f"report: {report.report_html}", markup=False, soft_wrap=True)
            return EXIT_OK
        jobs = self.jobs()
        missing = sorted({j.argv[0] for j in jobs if shutil.which(j.argv[0]) is None})
        if missing:
            hint = {"swift": "activate the ms-swift environment (e.g. .venv-swift)",
                    "python3": "install python3 with EasyR1"}
            console.print(f"[red]cannot run {', '.join(missing)}: not on PATH[/]; "
                          + "; ".join(hint.get(m, "install it") for m in missing)
                          + ". `--dry-run` prints the commands without running them.")
            return EXIT_USAGE
        for i, job in enumerate(jobs):
            console.rule(f"job {i + 1}: {job.label}")
            console.print(job.shell, markup=False, soft_wrap=True)
            env = {**os.environ, **job.env}
            code = subprocess.call(job.argv, cwd=job.cwd, env=env)
            if code != 0:
                console.print(f"[red]job {i + 1} ({job.label}) failed with exit code {code}[/]")
                return code
        return EXIT_OK


def load_run(config: str | Path, backend: str | None = None, output_dir: str | None = None,
             max_steps: int | None = None) -> RunPlan:
    """Validate the reward config and its ``train:`` section (with CLI overrides)."""
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
    from rewardkit_trainers.fidelity import check

    warnings = check(reward_config, train.backend, str(path))
    return RunPlan(path.resolve(), reward_config, train, warnings)
