"""What this machine offers a training run: GPUs and vLLM.

``rewardkit train`` and the SageMaker entrypoint decide from :func:`detect_hardware`
whether TRL runs as one process or through ``accelerate launch`` with DeepSpeed, and
whether generation uses vLLM. Both take a :class:`Hardware` argument, so a plan for
another machine can be made here: set ``REWARDKIT_GPUS`` / ``REWARDKIT_VLLM`` (e.g.
``REWARDKIT_GPUS=8 REWARDKIT_VLLM=1 rewardkit train CONFIG --dry-run`` prints the
commands an 8-GPU node with vLLM would run), or pass ``Hardware(gpus=8, vllm=True)``.

>>> detect_hardware({"REWARDKIT_GPUS": "4", "REWARDKIT_VLLM": "0"})
Hardware(gpus=4, vllm=False)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass

GPUS_VARIABLE = "REWARDKIT_GPUS"
VLLM_VARIABLE = "REWARDKIT_VLLM"


@dataclass(frozen=True)
class Hardware:
    """GPUs visible to this process and whether vLLM can be imported."""

    gpus: int
    vllm: bool


def _flag(value: str, name: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{name}={value!r}: expected 1/0 (or true/false)")


def count_gpus(env: dict[str, str]) -> int:
    """CUDA devices this process sees: ``SM_NUM_GPUS`` (SageMaker), else torch's count
    (it honours ``CUDA_VISIBLE_DEVICES``), else ``nvidia-smi -L``, else 0."""
    if env.get("SM_NUM_GPUS", "").isdigit():
        return int(env["SM_NUM_GPUS"])
    if env.get("CUDA_VISIBLE_DEVICES") in ("", "-1"):
        return 0
    if importlib.util.find_spec("torch") is not None:
        import torch

        return int(torch.cuda.device_count())
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "-L"], check=False, capture_output=True,
                                 text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return 0
        return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
    return 0


def detect_hardware(env: dict[str, str] | None = None) -> Hardware:
    """This machine's :class:`Hardware`, or what ``REWARDKIT_GPUS`` / ``REWARDKIT_VLLM``
    say (a ValueError names a malformed value)."""
    env = dict(os.environ) if env is None else env
    raw_gpus = env.get(GPUS_VARIABLE)
    if raw_gpus is not None:
        if not raw_gpus.strip().isdigit():
            raise ValueError(f"{GPUS_VARIABLE}={raw_gpus!r}: expected a GPU count (0, 1, 8 ...)")
        gpus = int(raw_gpus)
    else:
        gpus = count_gpus(env)
    raw_vllm = env.get(VLLM_VARIABLE)
    if raw_vllm is not None:
        vllm = _flag(raw_vllm, VLLM_VARIABLE)
    else:
        vllm = importlib.util.find_spec("vllm") is not None
    return Hardware(gpus=gpus, vllm=vllm)
