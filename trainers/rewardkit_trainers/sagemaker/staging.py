"""The stage sequence of one SageMaker job for backends that pass no step (EasyR1, verl).

Locally, ``rewardkit train`` runs a staged config as successive resumed jobs
(:mod:`rewardkit_trainers.launch.segments`). A SageMaker job runs the same sequence inside the
one training job: the launch side cuts the run at the stage boundaries and writes, per
stage, the arguments the entrypoint appends to the user's command:

* EasyR1: ``worker.reward.reward_function={config_dir}/rewardkit-reward-stage<k>.py:
  compute_score`` (a reward file generated at launch, pinned to the stage's first step,
  uploaded to the config channel) and ``trainer.max_steps=<end>``;
* verl: ``++reward.custom_reward_function.reward_kwargs.step=<start>`` and
  ``trainer.total_training_steps=<end>``.

The last stage has no step limit: it runs to the end the command itself sets. The
entrypoint resumes every stage after the first from the checkpoint the previous one
saved at the boundary, and a restarted job from the stage its newest complete step
belongs to (:mod:`rewardkit_trainers.sagemaker.entrypoint`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rewardkit import ConfigError
from rewardkit.config import RewardConfig

from rewardkit_trainers.fidelity import STEP_PINNED
from rewardkit_trainers.launch.segments import segment_boundaries, segment_ranges
from rewardkit_trainers.sagemaker.spec import Stage

REWARD_FILE = "rewardkit-reward-stage{k}.py"
"""EasyR1 reward file of stage k, in the config channel."""


def plan_stages(backend: str, command: list[str], config: RewardConfig,
                config_path: Path) -> tuple[list[Stage], dict[str, bytes]]:
    """The stages of a job (empty when it runs as one) and the files they read, by name
    in the config channel. Raises :class:`ConfigError` for a command that cannot stop
    and resume at a boundary."""
    found = segment_boundaries(getattr(config.section("train"), "stages", "auto"), config)
    if backend not in STEP_PINNED or not found or command[:2] == ["rewardkit", "train"]:
        return [], {}
    if backend == "verl":
        _check_verl_saves(command, str(config_path))
    stages: list[Stage] = []
    files: dict[str, bytes] = {}
    for k, (start, end) in enumerate(segment_ranges(found, None)):
        if backend == "easyr1":
            name = REWARD_FILE.format(k=k)
            files[name] = _easyr1_reward_file(config, config_path, start)
            args = [f"worker.reward.reward_function={{config_dir}}/{name}:compute_score"]
            if end is not None:
                args.append(f"trainer.max_steps={end}")
        else:
            args = [f"++reward.custom_reward_function.reward_kwargs.step={start}"]
            if end is not None:
                args.append(f"trainer.total_training_steps={end}")
        stages.append(Stage(start=start, end=end, args=args))
    return stages, files


def _easyr1_reward_file(config: RewardConfig, config_path: Path, step: int) -> bytes:
    from rewardkit_trainers.rewards.easyr1 import export_reward_file

    with tempfile.TemporaryDirectory() as tmp:
        path = export_reward_file(config, config_path, Path(tmp) / "reward.py", step=step)
        return path.read_bytes()


def _check_verl_saves(command: list[str], source: str) -> None:
    """verl saves the last step of a run only with a positive ``trainer.save_freq``:
    without it a stage leaves no checkpoint at its boundary for the next to resume."""
    values = [a.split("=", 1)[1] for a in command
              if a.lstrip("+").startswith("trainer.save_freq=")]
    try:
        ok = bool(values) and int(values[-1]) > 0
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(source, [(
            "sagemaker.command",
            "the reward stages run as successive verl jobs in one SageMaker job, each "
            "resuming from the checkpoint the previous one saved at its last step, which "
            "verl writes only with trainer.save_freq > 0: add trainer.save_freq=N")])
