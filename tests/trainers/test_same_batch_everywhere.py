"""One config, one optimizer step on every backend (issue 27 item 2).

The dry runs of TRL, ms-swift, EasyR1 and verl at 1, 4 and 16 GPUs are read back the way
each backend reads its own arguments (the formulas below are those of its source at the
pinned versions), and every backend's row must be the same: prompts and completions per
optimizer step, generations, per-device micro-batch, gradient accumulation, ZeRO stage,
learning rate and lengths. ``pytest -s`` prints the table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from backend_venvs import run_in_venv
from rewardkit_trainers.launch import runner
from rewardkit_trainers.launch.hardware import Hardware
from rewardkit_trainers.launch.plan import NodePlacement
from rewardkit_trainers.launch.runner import load_run

from rewardkit import ConfigError

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("trl", "swift", "easyr1", "verl")
GPUS = (1, 4, 16)
COLUMNS = ("prompts/step", "completions/step", "generations", "per-device", "grad accum",
           "ZeRO", "lr", "scheduler", "prompt len", "completion len")


def write_config(tmp_path: Path, **train: Any) -> Path:
    section = {
        "backend": "trl", "model": "Qwen/Qwen2.5-0.5B",
        "dataset": {"train": str(ROOT / "examples" / "data" / "gsm8k-rlvr.jsonl")},
        "learning_rate": 1.84e-4, "lr_scheduler": "cosine", "batch_size": 16,
        "num_generations": 8, "gradient_accumulation_steps": 2, "max_prompt_length": 1024,
        "max_completion_length": 512, "max_steps": 10, "deepspeed": "zero3", "bf16": True,
        "vllm": {"enabled": True}, **train}
    config = tmp_path / "batch.yaml"
    config.write_text(yaml.safe_dump({
        "on_error": "ignore",  # verl scores one response at a time
        "rewards": {"format": {"reward": "final_answer_line",
                               "params": {"pattern": "#### \\d+"}}},
        "train": section}), encoding="utf-8")
    return config


def flags(argv: list[str]) -> dict[str, str]:
    """``--key value`` pairs of an argv (the first value of each flag)."""
    return {a[2:]: argv[i + 1] for i, a in enumerate(argv[:-1]) if a.startswith("--")}


def read_trl(described: dict[str, Any]) -> dict[str, Any]:
    """TRL 1.16 GRPOConfig.__post_init__: steps_per_generation = gradient_accumulation_steps
    and generation_batch_size = per_device x num_processes x steps_per_generation, i.e. one
    generation (of that many completions) per optimizer step."""
    g = described["grpo_config"]
    world, zero = 1, 0
    for command in described.get("commands", []):
        for path, text in command["files"].items():
            if Path(path).name.startswith("accelerate-"):
                accel = yaml.safe_load(text)
                world = accel["num_processes"]
                zero = accel.get("deepspeed_config", {}).get("zero_stage", 0)
    completions = g["per_device_train_batch_size"] * world * g["gradient_accumulation_steps"]
    return {"prompts/step": completions // g["num_generations"],
            "completions/step": completions, "generations": g["num_generations"],
            "per-device": g["per_device_train_batch_size"],
            "grad accum": g["gradient_accumulation_steps"], "ZeRO": zero,
            "lr": g["learning_rate"], "scheduler": g["lr_scheduler_type"],
            "prompt len": described["max_prompt_length"],
            "completion len": g["max_completion_length"]}


def read_swift(described: dict[str, Any]) -> dict[str, Any]:
    """ms-swift 4.6 GRPOArgumentsMixin._init_generation_batch_params: the same rule as TRL
    over world_size = NPROC_PER_NODE x NNODES; --max_length is the prompt's limit in GRPO;
    --deepspeed zeroN names its bundled ZeRO config."""
    job = described["commands"][-1]
    f = flags(job["argv"])
    world = int(job["env"].get("NPROC_PER_NODE", "1")) * int(job["env"].get("NNODES", "1"))
    per_device, accumulation = int(f["per_device_train_batch_size"]), int(
        f["gradient_accumulation_steps"])
    completions = per_device * world * accumulation
    assert f["truncation_strategy"] == "delete"  # a longer prompt is left out, as elsewhere
    return {"prompts/step": completions // int(f["num_generations"]),
            "completions/step": completions, "generations": int(f["num_generations"]),
            "per-device": per_device, "grad accum": accumulation,
            "ZeRO": int(f["deepspeed"][4:]) if "deepspeed" in f else 0,
            "lr": float(f["learning_rate"]), "scheduler": f["lr_scheduler_type"],
            "prompt len": int(f["max_length"]),
            "completion len": int(f["max_completion_length"])}


def read_easyr1(described: dict[str, Any]) -> dict[str, Any]:
    """EasyR1 b44b311: ray_trainer checks rollout_batch_size % actor.global_batch_size; the
    FSDP worker multiplies global_batch_size by rollout.n, divides it by the world size
    (global_batch_size_per_device, one optimizer step per mini-batch) and splits that into
    micro_batch_size_per_device_for_update micro-batches; enable_full_shard picks
    FULL_SHARD (ZeRO-3) or SHARD_GRAD_OP (ZeRO-2)."""
    (text,) = described["commands"][0]["files"].values()
    cfg = yaml.safe_load(text)
    data, actor = cfg["data"], cfg["worker"]["actor"]
    n = cfg["worker"]["rollout"]["n"]
    world = cfg["trainer"]["n_gpus_per_node"] * cfg["trainer"]["nnodes"]
    assert data["rollout_batch_size"] % actor["global_batch_size"] == 0
    assert data["rollout_batch_size"] * n % actor["micro_batch_size_per_device_for_experience"] == 0
    assert data["filter_overlong_prompts"] is True
    completions = actor["global_batch_size"] * n
    per_device_step = completions // world
    assert per_device_step > 0
    assert per_device_step % actor["micro_batch_size_per_device_for_update"] == 0
    full = actor["fsdp"]["enable_full_shard"]
    return {"prompts/step": actor["global_batch_size"], "completions/step": completions,
            "generations": n, "per-device": actor["micro_batch_size_per_device_for_update"],
            "grad accum": per_device_step // actor["micro_batch_size_per_device_for_update"],
            "ZeRO": (3 if full else 2) if world > 1 else 0, "lr": actor["optim"]["lr"],
            "scheduler": actor["optim"]["lr_scheduler_type"],
            "prompt len": data["max_prompt_length"],
            "completion len": data["max_response_length"]}


def read_verl(described: dict[str, Any]) -> dict[str, Any]:
    """verl 0.9.1: ray_trainer._update_actor passes ppo_mini_batch_size x rollout.n as the
    optimizer step's batch, engine_workers.train_mini_batch divides it by the data-parallel
    size and splits it into ppo_micro_batch_size_per_gpu micro-batches;
    fsdp_config.reshard_after_forward picks FULL_SHARD (ZeRO-3) or SHARD_GRAD_OP."""
    argv = described["commands"][0]["argv"][3:]
    o = dict(a.split("=", 1) for a in argv)
    actor = "actor_rollout_ref.actor."
    n = int(o["actor_rollout_ref.rollout.n"])
    world = int(o["trainer.n_gpus_per_node"]) * int(o["trainer.nnodes"])
    mini = int(o[actor + "ppo_mini_batch_size"])
    micro = int(o[actor + "ppo_micro_batch_size_per_gpu"])
    assert int(o["data.train_batch_size"]) % mini == 0
    assert o["data.filter_overlong_prompts"] == "true"
    completions = mini * n
    assert completions % world == 0 and completions // world % micro == 0
    full = o[actor + "fsdp_config.reshard_after_forward"] == "true"
    return {"prompts/step": mini, "completions/step": completions, "generations": n,
            "per-device": micro, "grad accum": completions // world // micro,
            "ZeRO": (3 if full else 2) if world > 1 else 0,
            "lr": float(o[actor + "optim.lr"]), "scheduler": o[actor + "optim.lr_scheduler_type"],
            "prompt len": int(o["data.max_prompt_length"]),
            "completion len": int(o["data.max_response_length"])}


READERS = {"trl": read_trl, "swift": read_swift, "easyr1": read_easyr1, "verl": read_verl}


def dry_run(config: Path, backend: str, gpus: int, out: Path) -> dict[str, Any]:
    plan = load_run(config, backend=backend, output_dir=str(out / f"{backend}-{gpus}"),
                    hardware=Hardware(gpus=gpus, vllm=True), placement=NodePlacement())
    return runner.dry_run(plan)


def render(rows: list[tuple[str, int, dict[str, Any]]]) -> str:
    head = ("backend", "GPUs", *COLUMNS)
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    lines += [" | ".join([b, str(g), *(str(r[c]) for c in COLUMNS)]) for b, g, r in rows]
    return "\n".join(lines)


def test_every_backend_trains_the_same_step_at_1_4_and_16_gpus(tmp_path: Path):
    config = write_config(tmp_path)
    rows = []
    for gpus in GPUS:
        expected = {"prompts/step": 16, "completions/step": 128, "generations": 8,
                    "per-device": 128 // (gpus * 2), "grad accum": 2,
                    "ZeRO": 0 if gpus == 1 else 3, "lr": 1.84e-4, "scheduler": "cosine",
                    "prompt len": 1024, "completion len": 512}
        for backend in BACKENDS:
            described = dry_run(config, backend, gpus, tmp_path)
            row = READERS[backend](described)
            rows.append((backend, gpus, row))
            assert row == expected, (backend, gpus)
            assert described["warnings"] == [], (backend, gpus)
    print("\n" + render(rows))


def test_the_accelerate_launch_matches_its_grpo_config(tmp_path: Path, monkeypatch):
    """A launched TRL process prepares its GRPOConfig from the file it is given
    (rewardkit-train.json) and the launcher's WORLD_SIZE: the batch of the dry run."""
    from rewardkit_trainers.config import TrainConfig
    from rewardkit_trainers.launch.trl_train import prepare

    from rewardkit.config import load_config

    config = write_config(tmp_path)
    described = dry_run(config, "trl", 4, tmp_path)
    files = described["commands"][-1]["files"]
    (train_json,) = [t for p, t in files.items() if p.endswith("rewardkit-train.json")]
    assert described["commands"][-1]["argv"][4:6] == ["--num_processes", "4"]
    monkeypatch.setenv("WORLD_SIZE", "4")  # what accelerate sets in each process
    prep = prepare(load_config(config), TrainConfig.model_validate_json(train_json), config,
                   tmp_path / "launched", gpu=True)
    keys = ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations")
    launched = {k: prep["kwargs"][k] for k in keys}
    assert launched == {k: described["grpo_config"][k] for k in keys}
    assert launched == dict(zip(keys, (16, 2, 8), strict=True))


def test_trl_own_grpo_config_generates_one_batch_per_step(tmp_path: Path):
    """Through TRL's own GRPOConfig (one process here): the generation batch is the
    optimizer step's completions, in whole groups."""
    from trl import GRPOConfig

    described = dry_run(write_config(tmp_path, bf16=False), "trl", 1, tmp_path)
    kwargs = {k: v for k, v in described["grpo_config"].items() if k != "use_cpu"}
    args = GRPOConfig(**{**kwargs, "use_cpu": True, "use_vllm": False})
    assert args.generation_batch_size == 128 and args.steps_per_generation == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_batch_that_does_not_split_over_the_gpus_is_refused(tmp_path: Path, backend: str):
    config = write_config(tmp_path, batch_size=3, gradient_accumulation_steps=1)
    with pytest.raises(ConfigError) as err:
        dry_run(config, backend, 16, tmp_path)
    text = err.value.render()
    assert "train.batch_size" in text
    assert "24 completions per optimizer step do not split evenly over 16 GPU" in text
    assert "batch_size a multiple of 2 (2, 4, 8)" in text


def test_keys_fsdp_backends_cannot_honour_are_warnings_or_errors(tmp_path: Path):
    for backend in ("easyr1", "verl"):
        config = write_config(tmp_path, deepspeed="none", logging_steps=5, bf16=False,
                              max_steps=None, epochs=1.5)
        warnings = dry_run(config, backend, 4, tmp_path)["warnings"]
        assert any(w.startswith("train.bf16") for w in warnings)
        assert any(w.startswith("train.epochs") for w in warnings)
        assert any(w.startswith("train.deepspeed: none") and "zero2" in w for w in warnings)
        assert any(w.startswith("train.logging_steps") for w in warnings)
        with pytest.raises(ConfigError) as err:
            dry_run(write_config(tmp_path, lr_scheduler="linear"), backend, 4, tmp_path)
        assert "train.lr_scheduler" in err.value.render()
        assert "constant, cosine" in err.value.render()
    # zero2 is honoured: SHARD_GRAD_OP on EasyR1 and verl, --deepspeed zero2 on ms-swift
    config = write_config(tmp_path, deepspeed="zero2")
    for backend in BACKENDS:
        described = dry_run(config, backend, 4, tmp_path)
        assert READERS[backend](described)["ZeRO"] == 2, backend
        assert described["warnings"] == [], backend


def test_trl_leaves_out_prompts_longer_than_max_prompt_length(tiny_tokenizer_dir: Path):
    from rewardkit_trainers.launch.trl_train import drop_overlong_prompts
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    short = {"prompt": [{"role": "user", "content": "3 plus 4"}]}
    long = {"prompt": [{"role": "user", "content": " ".join(["3 plus 4"] * 200)}]}
    limit = len(tokenizer.apply_chat_template(short["prompt"], add_generation_prompt=True,
                                              tokenize=True, return_dict=True)["input_ids"])
    kept, dropped = drop_overlong_prompts([short, long, short], tokenizer, limit)
    assert kept == [short, short] and dropped == 1
    with pytest.raises(ValueError, match="all 1 prompts are longer than"):
        drop_overlong_prompts([long], tokenizer, limit)


def test_multi_gpu_example_dry_run_via_the_cli(tmp_path: Path, capsys, monkeypatch):
    """`rewardkit train examples/gsm8k-rlvr-multi-gpu.yaml --dry-run` at 4 GPUs (TRL, its
    backend; ms-swift by --backend): 16 prompts, 128 completions per step, ZeRO-3."""
    from rewardkit_trainers.cli import run

    monkeypatch.setenv("REWARDKIT_GPUS", "4")
    monkeypatch.setenv("REWARDKIT_VLLM", "1")
    example = str(ROOT / "examples" / "gsm8k-rlvr-multi-gpu.yaml")
    for backend in ("trl", "swift"):
        assert run("train", [example, "--dry-run", "--json", "--backend", backend,
                             "--output-dir", str(tmp_path / backend)]) == 0
        row = READERS[backend](json.loads(capsys.readouterr().out))
        assert (row["prompts/step"], row["completions/step"], row["per-device"],
                row["grad accum"], row["ZeRO"]) == (16, 128, 16, 2, 3), backend


def test_ms_swift_and_verl_read_the_4_gpu_arguments_as_the_table_says(
        tmp_path: Path, tiny_tokenizer_dir: Path):
    """Through ms-swift's own RLHFArguments parser and verl's own Hydra config (where an
    unknown key is an error): the 4-GPU arguments are the ones the table read."""
    config = write_config(tmp_path)
    swift_job = dry_run(config, "swift", 4, tmp_path)["commands"][-1]
    argv_file = tmp_path / "swift-argv.json"
    argv_file.write_text(json.dumps(swift_job["argv"]))
    result = run_in_venv("swift", "swift_args_check.py", str(argv_file))
    assert result["unknown"] == []
    parsed = result["parsed"]
    assert (parsed["per_device_train_batch_size"], parsed["gradient_accumulation_steps"],
            parsed["num_generations"], parsed["deepspeed"], parsed["max_length"],
            parsed["truncation_strategy"], parsed["max_completion_length"],
            parsed["learning_rate"], parsed["lr_scheduler_type"]) == (
        16, 2, 8, "zero3", 1024, "delete", 512, 1.84e-4, "cosine")
    assert swift_job["env"]["NPROC_PER_NODE"] == "4"  # 16 x 4 x 2 = 128 completions

    verl_job = dry_run(config, "verl", 4, tmp_path)["commands"][0]
    argv_file = tmp_path / "verl-argv.json"
    argv_file.write_text(json.dumps(verl_job["argv"]))
    batch = run_in_venv("verl", "verl_args_check.py", str(argv_file),
                        str(tiny_tokenizer_dir))["batch"]
    assert batch == {"train_batch_size": 16, "ppo_mini_batch_size": 16,
                     "ppo_micro_batch_size_per_gpu": 16, "reshard_after_forward": True,
                     "lr_scheduler_type": "cosine", "filter_overlong_prompts": True,
                     "n_gpus_per_node": 4}


def test_a_trl_run_whose_every_prompt_is_too_long_is_a_config_error(tmp_path: Path, capsys):
    from rewardkit_trainers.cli import run

    config = tmp_path / "q.yaml"
    config.write_text((ROOT / "examples" / "quickstart.yaml").read_text().replace(
        "output_dir: ../runs/quickstart",
        f"output_dir: {tmp_path / 'out'}\n  max_prompt_length: 1"))
    assert run("train", [str(config)]) == 2
    out = capsys.readouterr()
    assert "train.max_prompt_length: all 512 prompts are longer than 1 tokens" in (
        out.out + out.err)


def test_two_nodes_split_the_same_step_over_twice_the_gpus(tmp_path: Path):
    """8 GPUs on each of 2 nodes: 16 processes, micro-batches of 4 completions, as 16 GPUs
    on one node (TRL by the SageMaker placement, the others by train.nnodes)."""
    config = write_config(tmp_path)
    trl = load_run(config, output_dir=str(tmp_path / "trl"), hardware=Hardware(8, True),
                   placement=NodePlacement(num_nodes=2, rank=0, head_ip="10.0.0.1"))
    row = read_trl(runner.dry_run(trl))
    assert (row["completions/step"], row["per-device"], row["grad accum"]) == (128, 4, 2)
    for backend in ("swift", "easyr1", "verl"):
        plan = load_run(write_config(tmp_path, nnodes=2), backend=backend,
                        output_dir=str(tmp_path / backend), hardware=Hardware(8, True),
                        placement=NodePlacement())
        row = READERS[backend](runner.dry_run(plan))
        assert (row["completions/step"], row["per-device"], row["grad accum"]) == (
            128, 4, 2), backend
