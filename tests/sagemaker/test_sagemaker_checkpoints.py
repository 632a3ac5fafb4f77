"""Checkpoint completion, per-node flags, resume choice and pruning (S3 = moto server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rewardkit_trainers.sagemaker.layouts import layout_for
from rewardkit_trainers.sagemaker.store import CheckpointStore
from rewardkit_trainers.sagemaker.sync import CheckpointSync
from sm_harness import s3_keys

EASYR1 = layout_for("easyr1")
TRL = layout_for("trl")


def trl_step(root: Path, step: int, complete: bool = True) -> None:
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_text(f"w{step}")
    if complete:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))


def easyr1_step(root: Path, step: int, shard: int = 0) -> None:
    actor = root / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True, exist_ok=True)
    (actor / f"model_world_size_2_rank_{shard}.pt").write_text(f"s{step}r{shard}")


def test_trl_steps_are_complete_once_trainer_state_is_written(tmp_path):
    trl_step(tmp_path, 1)
    trl_step(tmp_path, 2, complete=False)
    assert TRL.complete_steps(tmp_path) == [1]


def test_easyr1_steps_are_complete_up_to_the_tracker(tmp_path):
    for step in (1, 2, 3):
        easyr1_step(tmp_path, step)
    assert EASYR1.complete_steps(tmp_path) == []
    (tmp_path / "checkpoint_tracker.json").write_text(json.dumps({"last_global_step": 2}))
    assert EASYR1.complete_steps(tmp_path) == [1, 2]


def test_an_old_easyr1_tracker_with_a_bare_number_is_read(tmp_path):
    easyr1_step(tmp_path, 5)
    (tmp_path / "checkpoint_tracker.json").write_text("5")
    assert EASYR1.complete_steps(tmp_path) == [5]


def test_a_ray_worker_uses_the_step_the_head_published(tmp_path):
    easyr1_step(tmp_path, 1, shard=1)
    easyr1_step(tmp_path, 2, shard=1)
    assert EASYR1.complete_steps(tmp_path, published=1) == [1]


@pytest.fixture
def store(s3, bucket) -> CheckpointStore:
    return CheckpointStore(s3, f"s3://{bucket}/ckpt/steps", EASYR1, num_nodes=2)


def test_a_step_with_a_missing_node_flag_is_never_chosen(tmp_path, store):
    for rank in (0, 1):
        root = tmp_path / f"node{rank}"
        for step in (1, 2):
            easyr1_step(root, step, shard=rank)
            store.upload_step(root, step, rank)
    # step 3: node 1 was interrupted before its flag
    easyr1_step(tmp_path / "node0", 3, shard=0)
    store.upload_step(tmp_path / "node0", 3, 0)
    assert store.flags() == {1: {0, 1}, 2: {0, 1}, 3: {0}}
    assert store.latest_complete() == 2


def test_a_downloaded_step_holds_every_node_files_and_no_flags(tmp_path, store):
    for rank in (0, 1):
        easyr1_step(tmp_path / f"node{rank}", 4, shard=rank)
        store.upload_step(tmp_path / f"node{rank}", 4, rank)
    folder = store.download_step(4, tmp_path / "fresh")
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == ["actor/model_world_size_2_rank_0.pt", "actor/model_world_size_2_rank_1.pt"]


def test_prune_keeps_the_newest_complete_steps_and_anything_newer(tmp_path, s3, bucket, store):
    for step in (1, 2, 3, 4):
        for rank in (0, 1):
            easyr1_step(tmp_path / f"node{rank}", step, shard=rank)
            store.upload_step(tmp_path / f"node{rank}", step, rank)
    easyr1_step(tmp_path / "node0", 5)
    store.upload_step(tmp_path / "node0", 5, 0)  # still uploading on node 1
    assert store.prune(keep_last=1) == [1, 2, 3]
    assert store.flags() == {4: {0, 1}, 5: {0}}
    assert store.latest_complete() == 4


def test_sync_uploads_each_complete_step_once(tmp_path, s3, bucket):
    store = CheckpointStore(s3, f"s3://{bucket}/trl", TRL, num_nodes=1)
    root = tmp_path / "out"
    trl_step(root, 1)
    trl_step(root, 2, complete=False)
    sync = CheckpointSync(store, root, rank=0)
    assert sync.sync_once() == [1]
    assert sync.sync_once() == []
    (root / "checkpoint-2" / "trainer_state.json").write_text("{}")
    assert sync.sync_once() == [2]
    assert s3_keys(s3, bucket, "trl/checkpoint-2/") == [
        "trl/checkpoint-2/model.safetensors",
        "trl/checkpoint-2/sync_completed_0.flag",
        "trl/checkpoint-2/trainer_state.json",
    ]
