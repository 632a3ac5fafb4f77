"""A staged EasyR1/verl config inside one SageMaker job: the launch side cuts the run at
the reward stage boundaries (one pinned reward per stage), and the real entrypoint runs
the stages in turn, each resuming from the previous one's checkpoint, with checkpoints
synced to a moto S3 and a restart resuming in the right stage.

The trainer command is ``stubs/stub_staged.py`` (EasyR1 and verl need GPUs): it reads
its arguments as those trainers do and loads the EasyR1 reward file the way EasyR1
does. The verl arguments the entrypoint ran are then composed with verl's own Hydra
config in .venv-verl (tests/trainers/backends/verl_stage_check.py)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
import yaml
from rewardkit_trainers.sagemaker.cli import load_launch_config
from rewardkit_trainers.sagemaker.request import stage_inputs
from sm_harness import STUBS, Cluster, s3_keys, wait_for

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "trainers"))
from backend_venvs import run_in_venv  # noqa: E402

STUB = [sys.executable, str(STUBS / "stub_staged.py")]


def write_config(tmp_path: Path, backend: str, bucket: str, command: list[str]) -> Path:
    config = {
        "aggregate": "weighted_sum",
        "on_error": "ignore",
        "rewards": {
            "format": {"reward": "soft_format", "stages": [
                {"until_step": 3, "weight": 0.5},
                {"weight": 0.1, "params": {"min_reasoning_chars": 5}}]},
            "number": {"reward": "answer_is_number", "weight": 0.5},
        },
        "sagemaker": {
            "backend": backend,
            "role": "arn:aws:iam::111122223333:role/RewardkitSageMaker",
            "images": {backend: "111122223333.dkr.ecr.us-west-2.amazonaws.com/rk:0.1"},
            "output": f"s3://{bucket}/out",
            "checkpoint": f"s3://{bucket}/ckpt",
            "command": command,
        },
    }
    path = tmp_path / f"{backend}-staged.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def start_node(cluster: Cluster, config: Path, tag: str, env: dict[str, str]):
    """The node with the config channel the launch side writes (spec, stage files)."""
    settings, text = load_launch_config(config)
    staged = stage_inputs(settings, config, text, "job")
    spec = json.loads(staged.spec.dump())
    spec.pop("output_s3")  # no final merge here: the stages are what is tested
    spec["sync_interval_s"] = 600  # only the end-of-run / signal sync uploads
    folder = cluster.base / tag / "algo-1"
    folder.mkdir(parents=True, exist_ok=True)
    for uri, body in staged.blobs.items():
        name = uri.rsplit("/", 1)[1]
        if name.startswith("rewardkit-reward-stage"):
            (folder / name).write_bytes(body)
    return cluster.start(spec, ["algo-1"], "algo-1", tag, env)


def steps_in_s3(s3, bucket: str) -> list[int]:
    keys = s3_keys(s3, bucket, "ckpt/steps/")
    return sorted({int(k.split("/")[2].removeprefix("global_step_")) for k in keys
                   if k.endswith("sync_completed_0.flag")})


def argvs(path: Path) -> list[list[str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_easyr1_stages_run_in_turn_in_one_job(cluster: Cluster, s3, bucket, tmp_path):
    config = write_config(tmp_path, "easyr1", bucket, STUB)
    events, argv_log = tmp_path / "events", tmp_path / "argv"
    node = start_node(cluster, config, "run", {"STUB_LOG": str(events),
                                               "STUB_ARGV_LOG": str(argv_log)})
    assert node.wait(120) == 0, node.output()
    assert events.read_text().splitlines() == [
        "start 0 reward_step 0 until 3", "saved 1", "saved 2", "saved 3", "done",
        "start 3 reward_step 3 until 6", "saved 4", "saved 5", "saved 6", "done"]
    folder, ckpt = cluster.base / "run" / "algo-1", node.checkpoint_dir
    assert argvs(argv_log) == [
        [*STUB[1:], f"worker.reward.reward_function={folder}/rewardkit-reward-stage0.py:"
                    "compute_score", "trainer.max_steps=3",
         f"trainer.save_checkpoint_path={ckpt}"],
        [*STUB[1:], f"worker.reward.reward_function={folder}/rewardkit-reward-stage1.py:"
                    "compute_score",
         f"trainer.save_checkpoint_path={ckpt}",
         f"trainer.load_checkpoint_path={ckpt}/global_step_3"],
    ]
    assert steps_in_s3(s3, bucket) == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow  # 13-17 s a case: a staged job on the moto server, restarted
@pytest.mark.parametrize(("hang_at", "resumed"), [
    (2, ["start 1 reward_step 0 until 3", "saved 2", "saved 3", "done",
         "start 3 reward_step 3 until 6"]),            # inside stage 0: finish it first
    (4, ["start 3 reward_step 3 until 6"]),           # on the boundary: stage 1 from it
    (5, ["start 4 reward_step 3 until 6"]),           # inside stage 1
])
def test_a_restarted_job_resumes_in_the_stage_of_its_newest_complete_step(
        cluster: Cluster, s3, bucket, tmp_path, hang_at: int, resumed: list[str]):
    config = write_config(tmp_path, "easyr1", bucket, STUB)
    events, argv_log = tmp_path / "events", tmp_path / "argv"
    env = {"STUB_LOG": str(events), "STUB_ARGV_LOG": str(argv_log)}
    node = start_node(cluster, config, "run1", {**env, "STUB_HANG_AT": str(hang_at)})
    wait_for(lambda: events.exists() and f"hanging {hang_at}" in events.read_text(), 60,
             f"the save of step {hang_at}")
    node.proc.send_signal(signal.SIGTERM)  # spot interruption
    assert node.wait(60) == 143, node.output()
    assert steps_in_s3(s3, bucket) == list(range(1, hang_at))

    before = len(events.read_text().splitlines())
    node = start_node(cluster, config, "run2", env)  # a fresh disk
    assert node.wait(120) == 0, node.output()
    after = events.read_text().splitlines()[before:]
    assert [e for e in after if e.startswith("start")] == [
        e for e in resumed if e.startswith("start")]
    assert after[:len(resumed)] == resumed
    assert after[-1] == "done"
    assert steps_in_s3(s3, bucket) == [1, 2, 3, 4, 5, 6]


def test_a_stage_that_ends_before_its_boundary_fails_the_job_clearly(
        cluster: Cluster, s3, bucket, tmp_path):
    config = write_config(tmp_path, "easyr1", bucket, STUB)
    events = tmp_path / "events"
    node = start_node(cluster, config, "run", {"STUB_LOG": str(events), "STUB_DATA_END": "2",
                                               "STUB_ARGV_LOG": str(tmp_path / "argv")})
    assert node.wait(120) == 1, node.output()
    assert node.failure.read_text().startswith(
        "rewardkit: stage 1 of 2 ended without a complete checkpoint of step 3")
    assert [e for e in events.read_text().splitlines() if e.startswith("start")] == [
        "start 0 reward_step 0 until 2"]  # stage 2 never started on a missing checkpoint
    assert steps_in_s3(s3, bucket) == [1, 2]  # what was complete is synced


@pytest.mark.slow  # ~16 s: a staged verl job on the moto server
def test_verl_stages_compose_with_verl_own_config(cluster: Cluster, s3, bucket, tmp_path):
    config = write_config(tmp_path, "verl", bucket, [*STUB, "trainer.save_freq=1"])
    events, argv_log = tmp_path / "events", tmp_path / "argv"
    node = start_node(cluster, config, "run", {"STUB_LOG": str(events),
                                               "STUB_ARGV_LOG": str(argv_log)})
    assert node.wait(120) == 0, node.output()
    assert [e for e in events.read_text().splitlines() if e.startswith("start")] == [
        "start 0 reward_step 0 until 3", "start 3 reward_step 3 until 6"]
    ckpt = node.checkpoint_dir
    runs = argvs(argv_log)
    assert runs == [
        [*STUB[1:], "trainer.save_freq=1", "++reward.custom_reward_function.reward_kwargs.step=0",
         "trainer.total_training_steps=3", f"trainer.default_local_dir={ckpt}"],
        [*STUB[1:], "trainer.save_freq=1", "++reward.custom_reward_function.reward_kwargs.step=3",
         f"trainer.default_local_dir={ckpt}", "trainer.resume_mode=resume_path",
         f"trainer.resume_from_path={ckpt}/global_step_3"],
    ]
    runs_file = tmp_path / "runs.json"
    runs_file.write_text(json.dumps([run[1:] for run in runs]), encoding="utf-8")
    composed = run_in_venv("verl", "verl_stage_check.py", str(runs_file))["stages"]
    assert [c["reward_step"] for c in composed] == [0, 3]
    assert [c["total_training_steps"] for c in composed] == [3, None]
    assert [c["resume_from_path"] for c in composed] == [None, f"{ckpt}/global_step_3"]
    assert [c["save_freq"] for c in composed] == [1, 1]


def test_verl_stages_need_a_save_frequency(tmp_path, bucket, capsys):
    from rewardkit_trainers.sagemaker.cli import launch

    config = write_config(tmp_path, "verl", bucket, STUB)
    assert launch(["sagemaker", str(config), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "sagemaker.command" in err and "trainer.save_freq=N" in err


def test_dry_run_shows_the_stage_sequence_of_the_gui_example(tmp_path, capsys):
    from rewardkit_trainers.sagemaker.cli import launch

    pytest.importorskip("rewardkit_gui", reason="the GUI example needs rewardkit-gui")
    example = tmp_path / "examples" / "sagemaker-gui-easyr1.yaml"
    example.parent.mkdir()
    example.write_text((ROOT / "examples" / example.name).read_text())
    (tmp_path / "build" / "gui").mkdir(parents=True)  # the prepared `easyr1` channel
    (tmp_path / "build" / "gui" / "config.yaml").write_text("trainer: {}\n")
    assert launch(["sagemaker", str(example), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    plan = json.loads(captured.out)
    ckpt, cfg = "/opt/ml/rewardkit/checkpoints", "/opt/ml/input/data/config"
    command = yaml.safe_load((ROOT / "examples" / "sagemaker-gui-easyr1.yaml").read_text())[
        "sagemaker"]["command"]
    # the stage's pinned reward file replaces the command's own: the key appears once
    own = [a.replace("{data_dir}", "/opt/ml/input/data") for a in command
           if not a.startswith("worker.reward.reward_function=")]
    assert plan["stages"] == [
        {"stage": 0, "steps": "0..20", "reward_step": 0, "argv": [
            *own, f"worker.reward.reward_function={cfg}/rewardkit-reward-stage0.py:compute_score",
            "trainer.max_steps=20", f"trainer.save_checkpoint_path={ckpt}"]},
        {"stage": 1, "steps": "20..end", "reward_step": 20, "argv": [
            *own, f"worker.reward.reward_function={cfg}/rewardkit-reward-stage1.py:compute_score",
            f"trainer.save_checkpoint_path={ckpt}",
            f"trainer.load_checkpoint_path={ckpt}/global_step_20"]},
    ]
    uploads = {u["to"].rsplit("/", 1)[1] for u in plan["uploads"]}
    assert {"rewardkit-reward-stage0.py", "rewardkit-reward-stage1.py"} <= uploads
