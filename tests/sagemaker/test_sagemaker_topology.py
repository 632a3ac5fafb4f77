"""resourceconfig.json -> rank and head; the training command of each node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from rewardkit_trainers.sagemaker.commands import Placement, launcher_files, training_command
from rewardkit_trainers.sagemaker.spec import RunSpec
from rewardkit_trainers.sagemaker.topology import (
    TopologyError,
    host_resolver,
    load_topology,
    resolve_with_retries,
)


def resource_config(tmp_path: Path, current: str, hosts: list[str]) -> dict[str, str]:
    path = tmp_path / "resourceconfig.json"
    path.write_text(json.dumps({"current_host": current, "hosts": hosts}))
    return {"REWARDKIT_RESOURCE_CONFIG": str(path)}


def test_rank_is_the_index_in_the_naturally_sorted_hosts(tmp_path):
    hosts = [f"algo-{i}" for i in (10, 2, 1, 3, 4, 5, 6, 7, 8, 9)]
    topo = load_topology(resource_config(tmp_path, "algo-10", hosts))
    assert (topo.rank, topo.num_nodes, topo.head_host) == (9, 10, "algo-1")
    assert not topo.is_head


def test_sm_variables_are_the_fallback(tmp_path):
    env = {
        "REWARDKIT_RESOURCE_CONFIG": str(tmp_path / "absent.json"),
        "SM_HOSTS": '["algo-2", "algo-1"]',
        "SM_CURRENT_HOST": "algo-1",
    }
    topo = load_topology(env)
    assert topo.is_head and topo.hosts == ("algo-1", "algo-2")


def test_a_host_missing_from_the_list_is_an_error(tmp_path):
    with pytest.raises(TopologyError, match="'algo-3' is not in hosts"):
        load_topology(resource_config(tmp_path, "algo-3", ["algo-1", "algo-2"]))


def test_an_unreadable_resource_config_names_the_file(tmp_path):
    path = tmp_path / "resourceconfig.json"
    path.write_text("{not json")
    with pytest.raises(TopologyError, match=r"resourceconfig\.json: unreadable resource config"):
        load_topology({"REWARDKIT_RESOURCE_CONFIG": str(path)})


def test_the_host_map_overrides_dns_and_unknown_hosts_fail_after_retries():
    resolve = host_resolver({"REWARDKIT_HOST_MAP": '{"algo-1": "127.0.0.1"}'})
    assert resolve_with_retries("algo-1", resolve, timeout_s=1) == "127.0.0.1"
    with pytest.raises(TopologyError, match=r"cannot resolve host 'algo-9\.invalid'"):
        resolve_with_retries("algo-9.invalid", resolve, timeout_s=0.3, interval_s=0.1)


def spec(backend: str, command: list[str]) -> RunSpec:
    return RunSpec(backend=backend, command=command, config_file="run.yaml")


ROOT = Path("/ckpt")


def test_trl_multi_node_goes_through_accelerate_with_the_machine_rank():
    argv, env = training_command(
        spec("trl", ["python", "train.py", "--config", "{config}"]),
        Placement(rank=1, num_nodes=2, head_ip="10.0.0.1", gpus_per_node=8),
        ROOT,
        resume_step=40,
    )
    assert argv == [
        "accelerate",
        "launch",
        "--config_file",
        "/ckpt-launch/accelerate-zero3.yaml",
        "--num_machines",
        "2",
        "--machine_rank",
        "1",
        "--main_process_ip",
        "10.0.0.1",
        "--main_process_port",
        "29500",
        "--num_processes",
        "16",
        "train.py",
        "--config",
        "/opt/ml/input/data/config/run.yaml",
        "--output_dir",
        "/ckpt",
        "--resume_from_checkpoint",
        "/ckpt/checkpoint-40",
        "--save_on_each_node",
        "true",
    ]
    assert env["REWARDKIT_RESUME_FROM"] == "/ckpt/checkpoint-40"


def test_a_non_python_command_runs_under_accelerate_without_python():
    argv, _ = training_command(
        spec("trl", ["my-trainer", "--config", "{config}"]),
        Placement(rank=0, num_nodes=2, head_ip="10.0.0.1", gpus_per_node=1),
        ROOT,
        None,
    )
    assert argv[argv.index("--no_python") + 1 :][:3] == [
        "my-trainer",
        "--config",
        "/opt/ml/input/data/config/run.yaml",
    ]


def test_one_node_with_four_gpus_runs_trl_under_accelerate_with_deepspeed_zero3():
    where = Placement(rank=0, num_nodes=1, head_ip="10.0.0.1", gpus_per_node=4)
    run = spec("trl", ["python", "train.py"])
    argv, _ = training_command(run, where, ROOT, None)
    assert argv[:5] == ["accelerate", "launch", "--config_file",
                        "/ckpt-launch/accelerate-zero3.yaml", "--num_machines"]
    assert argv[argv.index("--num_processes") + 1] == "4"
    assert argv[-3:] == ["train.py", "--output_dir", "/ckpt"]
    [(path, text)] = launcher_files(run, where, ROOT).items()
    assert path == Path("/ckpt-launch/accelerate-zero3.yaml")
    config = yaml.safe_load(text)
    assert config["distributed_type"] == "DEEPSPEED"
    assert config["deepspeed_config"]["zero_stage"] == 3
    assert (config["num_processes"], config["num_machines"]) == (4, 1)


def test_one_gpu_runs_the_command_as_it_is():
    run = spec("trl", ["python", "train.py"])
    where = Placement(rank=0, num_nodes=1, head_ip="10.0.0.1", gpus_per_node=1)
    argv, _ = training_command(run, where, ROOT, None)
    assert argv[:2] == ["python", "train.py"]
    assert launcher_files(run, where, ROOT) == {}


def test_rewardkit_train_is_not_wrapped_it_launches_itself_from_the_placement():
    run = RunSpec(backend="trl", command=["rewardkit", "train", "{config}"],
                  config_file="run.yaml", gpus_per_node=8, dist_port=29517,
                  checkpoint_args=False)
    where = Placement(rank=1, num_nodes=2, head_ip="10.0.0.1", gpus_per_node=8)
    argv, env = training_command(run, where, ROOT, None)
    assert argv == ["rewardkit", "train", "/opt/ml/input/data/config/run.yaml"]
    assert launcher_files(run, where, ROOT) == {}
    assert {k: env[k] for k in ("REWARDKIT_NUM_NODES", "REWARDKIT_NODE_RANK",
                                "REWARDKIT_HEAD_IP", "REWARDKIT_DIST_PORT", "REWARDKIT_GPUS")} \
        == {"REWARDKIT_NUM_NODES": "2", "REWARDKIT_NODE_RANK": "1",
            "REWARDKIT_HEAD_IP": "10.0.0.1", "REWARDKIT_DIST_PORT": "29517",
            "REWARDKIT_GPUS": "8"}
    # which is what `rewardkit train` reads back
    from rewardkit_trainers.launch.plan import NodePlacement, placement_from_env

    assert placement_from_env(env) == NodePlacement(2, 1, "10.0.0.1", 29517)


def test_torchrun_gets_the_node_rank_and_master():
    argv, _ = training_command(
        spec("trl", ["torchrun", "--nproc_per_node", "8", "train.py"]),
        Placement(rank=2, num_nodes=3, head_ip="10.0.0.1", gpus_per_node=8),
        ROOT,
        None,
    )
    assert argv[:9] == [
        "torchrun",
        "--nnodes",
        "3",
        "--node_rank",
        "2",
        "--master_addr",
        "10.0.0.1",
        "--master_port",
        "29500",
    ]


def test_swift_multi_node_uses_its_environment():
    argv, env = training_command(
        spec("swift", ["swift", "rlhf", "--rlhf_type", "grpo"]),
        Placement(rank=1, num_nodes=2, head_ip="10.0.0.1", gpus_per_node=8),
        ROOT,
        None,
    )
    assert argv[:4] == ["swift", "rlhf", "--rlhf_type", "grpo"]
    assert "--add_version" in argv
    assert {k: env[k] for k in ("NNODES", "NODE_RANK", "MASTER_ADDR", "NPROC_PER_NODE")} == {
        "NNODES": "2",
        "NODE_RANK": "1",
        "MASTER_ADDR": "10.0.0.1",
        "NPROC_PER_NODE": "8",
    }


def test_easyr1_multi_node_gets_the_ray_address_and_its_own_resume_arguments():
    argv, env = training_command(
        spec("easyr1", ["python3", "-m", "verl.trainer.main", "config=/cfg.yaml"]),
        Placement(rank=0, num_nodes=2, head_ip="10.0.0.1", gpus_per_node=8),
        ROOT,
        resume_step=20,
    )
    assert argv == [
        "python3",
        "-m",
        "verl.trainer.main",
        "config=/cfg.yaml",
        "trainer.save_checkpoint_path=/ckpt",
        "trainer.load_checkpoint_path=/ckpt/global_step_20",
    ]
    assert env["RAY_ADDRESS"] == "10.0.0.1:6379"
