"""Checkpoint steps in S3, with one completion flag per node.

Layout under the checkpoint prefix::

    <prefix>/global_step_20/actor/model_world_size_16_rank_3.pt   (files from every node)
    <prefix>/global_step_20/sync_completed_0.flag                  (node 0 uploaded all its files)
    <prefix>/global_step_20/sync_completed_1.flag

A flag is written only after that node's files of the step are all uploaded, so a
step is complete when every node's flag is present. Resume takes the newest complete
step; a step with a missing flag (a node interrupted mid-upload) is never chosen.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rewardkit_trainers.sagemaker.config import split_s3_uri
from rewardkit_trainers.sagemaker.layouts import CheckpointLayout

_FLAG = re.compile(r"sync_completed_(\d+)\.flag")


def flag_name(rank: int) -> str:
    """The completion marker of node ``rank`` inside a step folder."""
    return f"sync_completed_{rank}.flag"


class CheckpointStore:
    """Steps of one run under an S3 prefix (a boto3 S3 client does the I/O)."""

    def __init__(self, s3: Any, uri: str, layout: CheckpointLayout, num_nodes: int) -> None:
        self.s3 = s3
        self.bucket, self.prefix = split_s3_uri(uri)
        self.layout = layout
        self.num_nodes = num_nodes

    def _key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def _list(self, prefix: str) -> list[str]:
        keys: list[str] = []
        paginator = self.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            keys += [obj["Key"] for obj in page.get("Contents", [])]
        return keys

    def _step_folders(self) -> list[str]:
        base = self._key() + "/" if self.prefix else ""
        names: list[str] = []
        paginator = self.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=base, Delimiter="/"):
            names += [p["Prefix"][len(base) :].rstrip("/") for p in page.get("CommonPrefixes", [])]
        return names

    def flags(self) -> dict[int, set[int]]:
        """step -> ranks whose completion flag is present (steps with any object).

        Lists the step folders, then only the flag keys of each: shard files, which
        can number thousands per step, are not listed.
        """
        found: dict[int, set[int]] = {}
        for name in self._step_folders():
            step = self.layout.step_of(name)
            if step is None:
                continue
            found[step] = set()
            for key in self._list(self._key(name, "sync_completed_")):
                if match := _FLAG.fullmatch(key.rsplit("/", 1)[-1]):
                    found[step].add(int(match.group(1)))
        return found

    def complete_steps(self) -> list[int]:
        """Steps every node flagged, ascending."""
        everyone = set(range(self.num_nodes))
        return sorted(s for s, ranks in self.flags().items() if everyone <= ranks)

    def latest_complete(self) -> int | None:
        """The newest step every node flagged, or None."""
        steps = self.complete_steps()
        return steps[-1] if steps else None

    def upload_step(self, root: Path, step: int, rank: int) -> int:
        """Upload this node's files of ``step``, then its flag; returns the file count.

        Raises :class:`FileNotFoundError` when the folder vanishes mid-upload (the
        backend pruned it); no flag is written then.
        """
        name = self.layout.step_dir_name(step)
        folder = root / name
        files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
        total = 0
        for path in files:
            rel = path.relative_to(folder).as_posix()
            self.s3.upload_file(str(path), self.bucket, self._key(name, rel))
            total += path.stat().st_size
        body = json.dumps({"rank": rank, "files": len(files), "bytes": total})
        self.s3.put_object(Bucket=self.bucket, Key=self._key(name, flag_name(rank)), Body=body)
        return len(files)

    def has_flag(self, step: int, rank: int) -> bool:
        """Whether node ``rank`` already flagged ``step``."""
        return rank in self.flags().get(step, set())

    def download_step(self, step: int, root: Path) -> Path:
        """Download every node's files of ``step`` into ``root/<step folder>``."""
        name = self.layout.step_dir_name(step)
        base = self._key(name) + "/"
        target = root / name
        for key in self._list(base):
            rel = key[len(base) :]
            if not rel or _FLAG.fullmatch(rel):
                continue
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            self.s3.download_file(self.bucket, key, str(dest))
        return target

    def delete_step(self, step: int) -> None:
        """Remove a step: flags first, so a half-deleted step never looks complete."""
        base = self._key(self.layout.step_dir_name(step)) + "/"
        keys = self._list(base)
        flags = [k for k in keys if _FLAG.fullmatch(k[len(base) :])]
        rest = [k for k in keys if k not in flags]
        for batch in (flags, rest):
            for i in range(0, len(batch), 1000):
                chunk = [{"Key": k} for k in batch[i : i + 1000]]
                if chunk:
                    self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": chunk})

    def prune(self, keep_last: int) -> list[int]:
        """Keep the newest ``keep_last`` complete steps; delete older steps (complete or
        not). Steps newer than the newest complete one may still be uploading and are
        left alone. Returns the deleted steps."""
        flags = self.flags()
        everyone = set(range(self.num_nodes))
        complete = sorted(s for s, ranks in flags.items() if everyone <= ranks)
        if len(complete) <= keep_last:
            return []
        oldest_kept = complete[-keep_last]
        doomed = sorted(s for s in flags if s < oldest_kept)
        for step in doomed:
            self.delete_step(step)
        return doomed


def upload_tree(s3: Any, folder: Path, uri: str, skip: tuple[str, ...] = ()) -> int:
    """Upload every file under ``folder`` to the ``uri`` prefix, skipping top-level
    entries whose name starts with one of ``skip``; returns the file count."""
    bucket, prefix = split_s3_uri(uri)
    count = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if skip and rel.parts[0].startswith(skip):
            continue
        s3.upload_file(str(path), bucket, "/".join(x for x in (prefix, rel.as_posix()) if x))
        count += 1
    return count
