"""How each backend lays out checkpoints on disk, and how it says one is complete.

A step folder is never trusted because it exists: backends write it file by file.
Completion is read from the backend's own marker:

* EasyR1 writes ``checkpoint_tracker.json`` (``{"last_global_step": N, ...}``; older
  releases wrote the bare number) next to ``global_step_N/`` after every rank saved.
* verl writes ``latest_checkpointed_iteration.txt`` (the number) the same way.
* TRL and ms-swift (transformers ``Trainer``) write ``trainer_state.json`` inside
  ``checkpoint-N/`` after the weights, optimizer and RNG states.

On a Ray worker node of a multi-node EasyR1/verl job the marker exists only on the
head, so :meth:`CheckpointLayout.complete_steps` also takes the step the head
published as complete.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CheckpointLayout:
    """One backend's checkpoint conventions."""

    backend: str
    step_prefix: str
    """step folder name = step_prefix + number"""
    tracker: str | None = None
    """root-level marker file naming the newest complete step"""
    inner_marker: str | None = None
    """marker file inside a step folder, written last"""
    save_args: tuple[str, ...] = ()
    """arguments naming the checkpoint root ({root})"""
    resume_args: tuple[str, ...] = ()
    """arguments naming the step folder to resume from ({step_dir})"""
    multi_node_args: tuple[str, ...] = ()
    """extra arguments for multi-node runs without Ray"""
    merge_command: tuple[str, ...] = ()
    """default command merging a step's shards into a model ({local_dir})"""
    model_subdir: str = ""
    """where the deliverable model lies inside the step folder (sharded backends)"""

    @property
    def sharded(self) -> bool:
        """True when the final model is merged from a step folder's shards."""
        return bool(self.merge_command)

    def step_dir_name(self, step: int) -> str:
        return f"{self.step_prefix}{step}"

    def step_of(self, name: str) -> int | None:
        """The step number of a folder name, or None for anything else."""
        match = re.fullmatch(re.escape(self.step_prefix) + r"(\d+)", name)
        return int(match.group(1)) if match else None

    def local_steps(self, root: Path) -> list[int]:
        """Step folders present under ``root``, ascending."""
        if not root.is_dir():
            return []
        steps = (self.step_of(p.name) for p in root.iterdir() if p.is_dir())
        return sorted(s for s in steps if s is not None)

    def tracker_step(self, root: Path) -> int | None:
        """The newest complete step according to the root-level tracker, if any."""
        if self.tracker is None:
            return None
        path = root / self.tracker
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent, or caught mid-write: try again next round
        if isinstance(data, dict):
            data = data.get("last_global_step")
        return data if isinstance(data, int) and not isinstance(data, bool) else None

    def complete_steps(self, root: Path, published: int | None = None) -> list[int]:
        """Local step folders that are complete on disk, ascending.

        ``published`` is the newest step the head declared complete (Ray worker nodes,
        which have no tracker of their own).
        """
        steps = self.local_steps(root)
        if self.inner_marker is not None:
            marker = self.inner_marker
            done = [s for s in steps if (root / self.step_dir_name(s) / marker).is_file()]
            if published is not None:
                done = sorted(set(done) | {s for s in steps if s <= published})
            return done
        bounds = [b for b in (self.tracker_step(root), published) if b is not None]
        if not bounds:
            return []
        return [s for s in steps if s <= max(bounds)]

    def write_tracker(self, root: Path, step: int) -> None:
        """Record ``step`` as the newest complete one, the way the backend does (after a
        download, so the backend's own auto-resume agrees with ours)."""
        if self.tracker is None:
            return
        path = root / self.tracker
        if self.backend == "easyr1":
            path.write_text(json.dumps({"last_global_step": step}), encoding="utf-8")
        else:
            path.write_text(str(step), encoding="utf-8")

    def checkpoint_args(self, root: Path, resume_step: int | None, multi_node: bool) -> list[str]:
        """Backend arguments: where to save, where to resume from, multi-node extras."""
        args = [a.format(root=root) for a in self.save_args]
        if resume_step is not None:
            step_dir = root / self.step_dir_name(resume_step)
            args += [a.format(step_dir=step_dir) for a in self.resume_args]
        if multi_node:
            args += list(self.multi_node_args)
        return args


_HF_TRAINER = {
    "step_prefix": "checkpoint-",
    "inner_marker": "trainer_state.json",
    "save_args": ("--output_dir", "{root}"),
    "resume_args": ("--resume_from_checkpoint", "{step_dir}"),
    # every node must write trainer_state.json for its own shards to count as complete
    "multi_node_args": ("--save_on_each_node", "true"),
}

LAYOUTS: dict[str, CheckpointLayout] = {
    "trl": CheckpointLayout(backend="trl", **_HF_TRAINER),  # type: ignore[arg-type]
    "swift": CheckpointLayout(
        backend="swift",
        **{**_HF_TRAINER, "save_args": ("--output_dir", "{root}", "--add_version", "false")},  # type: ignore[arg-type]
    ),
    "easyr1": CheckpointLayout(
        backend="easyr1",
        step_prefix="global_step_",
        tracker="checkpoint_tracker.json",
        save_args=("trainer.save_checkpoint_path={root}",),
        resume_args=("trainer.load_checkpoint_path={step_dir}",),
        merge_command=("python3", "scripts/model_merger.py", "--local_dir", "{local_dir}"),
        model_subdir="actor",
    ),
    "verl": CheckpointLayout(
        backend="verl",
        step_prefix="global_step_",
        tracker="latest_checkpointed_iteration.txt",
        save_args=("trainer.default_local_dir={root}",),
        resume_args=("trainer.resume_mode=resume_path", "trainer.resume_from_path={step_dir}"),
        merge_command=(
            "python3",
            "-m",
            "verl.model_merger",
            "merge",
            "--backend",
            "fsdp",
            "--local_dir",
            "{local_dir}",
            "--target_dir",
            "{local_dir}/huggingface",
        ),
        model_subdir="actor",
    ),
}


def layout_for(backend: str) -> CheckpointLayout:
    """The layout of a backend name (``trl``, ``swift``, ``easyr1``, ``verl``)."""
    try:
        return LAYOUTS[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(LAYOUTS)}") from None
