"""The isolation layers, what each guards, and which ones a running zygote has.

``detect_layers`` (which starts a zygote to ask) lives with the pool, in :mod:`.pool`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: name -> (what it guards, required).  Without a required layer the pool refuses to run.
LAYER_CATALOGUE: dict[str, tuple[str, bool]] = {
    "rlimits": ("memory, CPU, file size, open files, process count, no core dumps", True),
    "process_group_kill": ("wall-time kill of the task and all its children", True),
    "child_subreaper": ("daemonised double forks are reparented to the zygote and reaped", False),
    "uid_isolation": (
        "per-slot unprivileged uid: file permissions, NPROC per slot, kill(-1) scope",
        False,
    ),
    "no_new_privs": ("setuid binaries cannot raise privileges", False),
    "seccomp": ("kernel attack surface: ptrace, mount, bpf, namespaces, keyrings", False),
    "network_namespace": ("no network: a private namespace, loopback only (the slot's own)",
                          False),
    "mount_namespace": ("private /tmp with a size cap; home, /root, the repo hidden", False),
    "private_world_writable": (
        "every world-writable folder (/run/lock, ...) private: no files left on the host, "
        "no notes between slots",
        False,
    ),
    "scrubbed_environment": ("no secrets (tokens, keys) or CUDA devices in the environment", False),
    "memory_cgroup": (
        "a task's memory counted whole (every process, shared mappings, tmpfs files): "
        "a memory cgroup per slot",
        False,
    ),
}

REQUIRED_LAYERS = tuple(name for name, (_, required) in LAYER_CATALOGUE.items() if required)


@dataclass(frozen=True)
class Layer:
    """One isolation layer as found on this machine."""

    name: str
    active: bool
    guards: str
    detail: str
    required: bool


@dataclass(frozen=True)
class LayerReport:
    """Which layers a zygote could put in place; ``missing`` counts the inactive ones."""

    layers: tuple[Layer, ...]

    @classmethod
    def from_message(cls, message: dict[str, Any]) -> LayerReport:
        layers = []
        for name, (guards, required) in LAYER_CATALOGUE.items():
            found = message.get(name, {"active": False, "detail": "not reported by the zygote"})
            layers.append(
                Layer(name, bool(found["active"]), guards, str(found["detail"]), required)
            )
        return cls(tuple(layers))

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(layer.name for layer in self.layers if not layer.active)

    @property
    def missing_required(self) -> tuple[str, ...]:
        return tuple(layer.name for layer in self.layers if layer.required and not layer.active)

    def __getitem__(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def to_json(self) -> str:
        return json.dumps(
            {
                "layers": {
                    layer.name: {
                        "active": layer.active,
                        "required": layer.required,
                        "guards": layer.guards,
                        "detail": layer.detail,
                    }
                    for layer in self.layers
                },
                "missing": list(self.missing),
                "usable": not self.missing_required,
            },
            indent=2,
        )

    def to_table(self) -> str:
        rows = [("layer", "state", "detail")]
        for layer in self.layers:
            state = "active" if layer.active else ("MISSING!" if layer.required else "missing")
            rows.append((layer.name, state, layer.detail))
        widths = [max(len(row[column]) for row in rows) for column in range(2)]
        lines = [f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}" for row in rows]
        lines.insert(1, "-" * min(100, max(len(line) for line in lines)))
        verdict = "usable" if not self.missing_required else "NOT usable"
        lines.append(f"\n{len(self.missing)} layer(s) missing; sandbox {verdict}.")
        return "\n".join(lines)
