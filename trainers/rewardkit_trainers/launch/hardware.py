"""What this machine offers a training run: GPUs and vLLM, and how a node's GPUs split
between the trainer and a vLLM server (:func:`split_gpus`).

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

import contextlib
import importlib.util
import os
import shutil
import subprocess
from collections.abc import MutableMapping
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


#: most intra-op threads a CPU run takes (a tiny model gains nothing from more)
MAX_CPU_THREADS = 4
#: the variable that sets the CPU run's thread count by hand (like OMP_NUM_THREADS)
THREADS_VARIABLE = "REWARDKIT_THREADS"


@dataclass(frozen=True)
class CpuPlan:
    """How a CPU run uses this machine: the cores it may run on, the 1-minute load
    average when it started, and the intra-op threads it takes."""

    cores: int
    load: float
    threads: int

    def describe(self) -> str:
        """``2 cores, 1 thread, load 2.3`` (the words the demo prints with its time)."""
        return (f"{self.cores} core{'s' * (self.cores != 1)}, {self.threads} "
                f"thread{'s' * (self.threads != 1)}, load {self.load:.1f}")


def cpu_plan(env: dict[str, str] | None = None, cores: int | None = None,
             load: float | None = None, tiny: bool = False) -> CpuPlan:
    """The thread count for a CPU run: ``REWARDKIT_THREADS`` or ``OMP_NUM_THREADS`` when
    set, else one for a ``tiny`` model built here (the quickstart's), else the cores left
    free by the load others put on them (at least 1, at most :data:`MAX_CPU_THREADS`).

    Why one for a tiny model: another thread count rounds the matrix products
    differently, so a thread count picked from the load would make the same seed give
    other numbers on a busier machine (the quickstart's 600 steps evaluated at 98.4% with
    one thread and 60.9% with two), and a model that small gains little from a second
    thread (36 s of training vs 32 s on two quiet cores).

    Why: a thread per core on a machine whose cores are busy makes the threads of one
    matrix product wait for each other behind other processes; the quickstart's 200
    steps took 49x longer beside a loaded machine's other work that way. One thread per
    free core keeps the run's slowdown close to its share of the machine.
    """
    env = dict(os.environ) if env is None else env
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    load = load if load is not None else os.getloadavg()[0]
    for name in (THREADS_VARIABLE, "OMP_NUM_THREADS"):
        raw = env.get(name, "").strip()
        if raw:
            if not raw.isdigit() or int(raw) < 1:
                raise ValueError(f"{name}={raw!r}: expected a thread count (1, 2, ...)")
            return CpuPlan(cores, load, int(raw))
    if tiny:
        return CpuPlan(cores, load, 1)
    free = int(cores - load + 0.5)
    return CpuPlan(cores, load, max(1, min(free, cores, MAX_CPU_THREADS)))


def passive_waits(env: MutableMapping[str, str] | None = None) -> None:
    """Make OpenMP threads sleep when they wait (``OMP_WAIT_POLICY=PASSIVE``) unless
    the user chose a policy. OpenMP reads it once, when torch loads: call this before
    anything imports torch. Spinning waits are what turns a busy machine's 2x into
    tens of times slower."""
    (os.environ if env is None else env).setdefault("OMP_WAIT_POLICY", "PASSIVE")


def apply_cpu_plan(plan: CpuPlan) -> None:
    """Set torch's intra-op threads (and one inter-op thread) to ``plan``'s."""
    import torch

    torch.set_num_threads(plan.threads)
    # settable once per process: a second run in one process keeps the first setting
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)


def split_gpus(gpus: int, tp: int) -> tuple[list[int], list[int]]:
    """(trainer GPU ids, server GPU ids) of a node with ``gpus`` GPUs whose vLLM server
    takes the last ``tp``; ValueError when none is left for training. Shared by
    ``trl vllm-serve`` and ms-swift's ``swift rollout``."""
    if gpus <= tp:
        raise ValueError(
            f"vllm.mode server needs more GPUs than vllm.tensor_parallel_size ({tp}): the "
            f"server takes {tp} and the trainer at least one, but train.gpus is {gpus}; "
            "use vllm.mode colocate on this machine")
    ids = list(range(gpus))
    return ids[: gpus - tp], ids[gpus - tp:]
