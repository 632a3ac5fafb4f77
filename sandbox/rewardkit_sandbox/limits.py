"""Resource limits of one sandboxed task, and the rlimits that enforce them."""

from __future__ import annotations

import functools
import math
import resource
from dataclasses import dataclass
from typing import Any

_MIB = 1024 * 1024


@dataclass(frozen=True)
class SandboxLimits:
    """What one task may use.  Every limit is enforced from outside the task.

    ``wall_time_s`` is enforced by the zygote (kill of the whole task), ``cpu_time_s`` by
    RLIMIT_CPU (rounded up to whole seconds), ``memory_bytes`` by RLIMIT_AS (address
    space, so leave room for the interpreter: ~30 MiB) and, where the pool has a memory
    cgroup per slot (layer ``memory_cgroup``), by the cgroup's limit on all the task's
    memory; ``address_space_bytes``, when set, is RLIMIT_AS instead (for runtimes that
    reserve far more address space than they use; see :mod:`.languages`); ``file_size_bytes`` by
    RLIMIT_FSIZE, ``open_files`` by RLIMIT_NOFILE, ``processes`` by RLIMIT_NPROC (threads
    count too; per slot uid), ``stdout_bytes``/``stderr_bytes`` by the pool, which keeps
    that much and ends the task when it writes more.  ``disk_bytes`` sizes each slot's
    private tmpfs ``/tmp`` and is read once, when the pool starts.

    >>> SandboxLimits(wall_time_s=2.0, memory_bytes=256 * 1024 * 1024).cpu_time_s
    10.0
    """

    wall_time_s: float = 10.0
    cpu_time_s: float = 10.0
    memory_bytes: int = 1024 * _MIB
    file_size_bytes: int = 16 * _MIB
    open_files: int = 64
    processes: int = 32
    stdout_bytes: int = 1 * _MIB
    stderr_bytes: int = 256 * 1024
    disk_bytes: int = 64 * _MIB
    address_space_bytes: int | None = None

    def __post_init__(self) -> None:
        # vars(), not dataclasses.asdict (a recursive deep copy): limits are made per run.
        for name, value in vars(self).items():
            if not (value is None and name == "address_space_bytes") and not value > 0:
                raise ValueError(f"SandboxLimits.{name} must be positive, got {value!r}")

    def to_message(self) -> dict[str, Any]:
        """The limits as sent to the zygote."""
        return dict(vars(self))


@functools.lru_cache(maxsize=64)
def limits_message(limits: SandboxLimits) -> dict[str, Any]:
    """The limits as the zygote wants them, rlimits ready for setrlimit (cached: frozen)."""
    cpu = max(1, math.ceil(limits.cpu_time_s))
    message = limits.to_message()
    address_space = limits.address_space_bytes or limits.memory_bytes
    # Soft CPU limit sends SIGXCPU, the hard one a second later SIGKILL.
    message["rlimits"] = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, address_space, address_space),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (resource.RLIMIT_NPROC, limits.processes, limits.processes),
    ]
    return message
