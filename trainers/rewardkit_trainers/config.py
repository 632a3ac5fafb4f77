"""The ``train:`` and ``eval:`` sections of a reward config, as pydantic models.

rewardkit-trainers registers both as config sections (:mod:`rewardkit_trainers.plugin`):
the core validates them with the rest of the file, with the same "file: key.path:
reason" errors (:class:`rewardkit.ConfigError`). One set of names for every backend: each backend
module maps them onto its own argument names (``learning_rate`` becomes TRL's
``learning_rate``, ms-swift's ``--learning_rate``, EasyR1's ``worker.actor.optim.lr``).

>>> cfg = parse_train({"backend": "trl", "model": "Qwen/Qwen2.5-0.5B-Instruct",
...                    "dataset": {"train": "data/train.jsonl"}})
>>> cfg.num_generations, cfg.lora is None
(8, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from rewardkit import ConfigError
from rewardkit.config import ConfigModel, require_finite, validation_problems

Backend = Literal["trl", "swift", "easyr1", "verl"]


class _Model(ConfigModel):
    """Unknown keys and NaN/infinite numbers are errors, as in the core config."""


class TinyModel(_Model):
    """A small causal LM built from a config (random weights), for demos and tests.

    The tokenizer is a word-level tokenizer trained on the run's dataset, with a chat
    template, so nothing is downloaded.
    """

    build: Literal["qwen2", "llama"] = Field("qwen2", description="architecture")
    hidden_size: int = Field(64, gt=0)
    num_layers: int = Field(2, gt=0)
    num_heads: int = Field(4, gt=0)
    intermediate_size: int = Field(128, gt=0)
    seed: int = 0


class GeneratedData(_Model):
    """A dataset generated on the fly (see :mod:`rewardkit_trainers.quickstart`)."""

    generate: Literal["quickstart"] = Field(description="name of the generator")
    size: int = Field(256, gt=0, description="rows in the train split")
    test_size: int = Field(64, ge=0, description="rows in the test split")
    seed: int = 0


class DatasetSpec(_Model):
    """Where the prompts come from and which columns mean what."""

    train: str | GeneratedData = Field(
        description="a .jsonl/.json/.parquet file, a local dataset folder, or {generate: ...}"
    )
    test: str | None = Field(None, description="test split for `rewardkit eval` (file)")
    prompt_column: str = Field("prompt", description="str or chat-messages column")
    reference_column: str = Field(
        "reference", description="ground truth column (becomes Sample.reference)"
    )
    system_prompt: str | None = Field(
        None, description="prepended as a system message (prompts become conversational)"
    )
    prompt_template: str = Field(
        "{{ content | trim }}",
        description="Jinja template applied to the prompt text (EasyR1 format_prompt file)",
    )


class LoRA(_Model):
    """LoRA adapters; ``quantize: 4bit`` makes it QLoRA."""

    r: int = Field(16, gt=0)
    alpha: int = Field(16, gt=0)
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: str | list[str] = Field("all-linear")
    quantize: Literal["4bit", "8bit"] | None = Field(None, description="QLoRA when set")


class VLLM(_Model):
    """Generation with vLLM (GPU only)."""

    enabled: bool | Literal["auto"] = Field(
        default="auto", description="auto: on when a GPU is visible and vllm is importable")
    mode: Literal["colocate", "server"] = Field(
        default="colocate", description="colocate: vLLM inside each training process; server: "
        "a vLLM server on the node's last tensor_parallel_size GPUs, started before the "
        "trainer and stopped after it (`trl vllm-serve` for trl, `swift rollout` for swift)")
    gpu_memory_utilization: float = Field(default=0.5, gt=0, le=1)
    tensor_parallel_size: int = Field(default=1, gt=0)
    server_port: int = Field(default=8000, gt=0, lt=65536, description="server mode: its port")


class TrainConfig(_Model):
    """The ``train:`` section: what ``rewardkit train CONFIG`` runs."""

    backend: Backend = Field(
        "trl", description="trl runs in-process; swift, easyr1 and verl as their commands")
    model: str | TinyModel = Field(description="hub id or local path, or a tiny model spec")
    dataset: DatasetSpec
    output_dir: str = Field("runs/rewardkit", description="relative to the config file")
    learning_rate: float = Field(1e-6, gt=0)
    lr_scheduler: str = Field("constant", description="constant | linear | cosine ... "
                              "(EasyR1 and verl: constant or cosine)")
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    num_generations: int = Field(8, ge=2, description="completions per prompt (group size)")
    batch_size: int = Field(
        8, gt=0, description="prompts per optimizer step (x num_generations completions), "
        "whatever the number of GPUs"
    )
    gradient_accumulation_steps: int = Field(
        1, gt=0, description="micro-steps each GPU splits its share of one optimizer step "
        "into (memory only: the step's batch stays batch_size prompts)")
    max_prompt_length: int = Field(512, gt=0, description="prompts longer than this, in "
                                   "tokens, are left out")
    max_completion_length: int = Field(256, gt=0)
    beta: float = Field(0.0, ge=0, description="KL coefficient (0 = no reference model)")
    epochs: float = Field(1.0, gt=0)
    max_steps: int | None = Field(None, gt=0, description="overrides epochs when set")
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    lora: LoRA | None = None
    vllm: VLLM = VLLM()
    bf16: bool = False
    seed: int = 42
    logging_steps: int = Field(1, gt=0)
    save_steps: int | None = Field(None, gt=0, description="checkpoint every N steps")
    stages: list[int] | Literal["auto"] = Field(
        "auto",
        description="step boundaries between successive jobs for backends that pass no step "
        "(EasyR1): auto = the until_step values of the reward stages",
    )
    resume: bool | str = Field(
        "auto",
        description="auto: continue from the newest checkpoint-* in output_dir when there is "
        "one (TRL; spot restarts); a path: resume from it (TRL, ms-swift); false: start over",
    )
    gpus: int = Field(
        0, ge=0, description="GPUs (processes) per node; 0 = every GPU visible, at least 1")
    nnodes: int = Field(1, gt=0)
    deepspeed: Literal["zero3", "zero2", "none"] = Field(
        "zero3", description="sharding on more than one GPU: DeepSpeed ZeRO stage for "
        "TRL (accelerate) and ms-swift (--deepspeed), FSDP full (zero3) or gradient and "
        "optimizer (zero2) sharding for EasyR1 and verl; none = DDP (TRL, ms-swift)")
    extra_args: dict[str, Any] = Field(
        default_factory=dict,
        description="passed through verbatim: GRPOConfig kwargs (trl), --flags (swift), "
        "dotted overrides (easyr1/verl)",
    )
    backend_args: dict[Backend, dict[str, Any]] = Field(
        default_factory=dict,
        description="extra_args for one backend only, by backend name: the chosen "
        "backend's are merged over extra_args (its keys win), the others' left out, so "
        "one config names each backend's own arguments (e.g. TRL's tools, verl's dotted "
        "tool path, ms-swift's scheduler flags)",
    )

    @field_validator("extra_args")
    @classmethod
    def _finite_extra_args(cls, value: dict[str, Any]) -> dict[str, Any]:
        return require_finite(value)

    @field_validator("backend_args")
    @classmethod
    def _finite_backend_args(cls, value: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return require_finite(value)

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if isinstance(self.model, TinyModel) and self.backend != "trl":
            raise ValueError("a tiny built model only works with backend trl")
        own = self.backend_args.get(self.backend)
        if own:  # every reader of extra_args sees the chosen backend's arguments
            self.extra_args = {**self.extra_args, **own}
        return self

    def for_hardware(self, gpus: int, vllm: bool) -> TrainConfig:
        """This config with the automatic choices made for a machine with ``gpus``
        visible GPUs and vLLM importable or not: ``gpus: 0`` becomes that count (at
        least 1) and ``vllm.enabled: auto`` becomes on exactly when both are there."""
        enabled = (gpus > 0 and vllm) if self.vllm.enabled == "auto" else self.vllm.enabled
        return self.model_copy(update={
            "gpus": self.gpus or max(1, gpus),
            "vllm": self.vllm.model_copy(update={"enabled": enabled}),
        })

    def total_batch(self) -> int:
        """Completions per optimizer step."""
        return self.batch_size * self.num_generations

    def batch_split(self, processes: int) -> BatchSplit:
        """How one optimizer step's ``batch_size x num_generations`` completions split
        over ``processes`` training processes (all nodes) and
        ``gradient_accumulation_steps`` micro-steps; ValueError, naming the keys and the
        values that split exactly, when they do not."""
        split = BatchSplit(self.batch_size, self.num_generations, processes,
                           self.gradient_accumulation_steps)
        parts = processes * self.gradient_accumulation_steps
        if self.total_batch() % parts == 0:
            return split
        step = parts // math.gcd(self.num_generations, parts)
        accumulation = [d for d in range(1, self.total_batch() // processes + 1)
                        if self.total_batch() % (processes * d) == 0]
        fix = f"batch_size a multiple of {step} ({', '.join(str(step * k) for k in (1, 2, 4))})"
        if accumulation:
            fix += f", or gradient_accumulation_steps one of {accumulation}"
        raise ValueError(
            f"{self.batch_size} prompts x {self.num_generations} generations = "
            f"{self.total_batch()} completions per optimizer step do not split evenly over "
            f"{processes} GPU process(es) x {self.gradient_accumulation_steps} gradient "
            f"accumulation step(s) ({parts} micro-batches); use {fix}")


@dataclass(frozen=True)
class BatchSplit:
    """One optimizer step of GRPO, the same on every backend: ``prompts`` prompts with
    ``generations`` completions each, spread over ``processes`` GPU processes, each
    running ``accumulation`` micro-batches of ``per_device`` completions."""

    prompts: int
    generations: int
    processes: int
    accumulation: int

    @property
    def completions(self) -> int:
        """Completions per optimizer step (all processes, all micro-steps)."""
        return self.prompts * self.generations

    @property
    def per_device(self) -> int:
        """Completions in one micro-batch of one process (TRL's and ms-swift's
        ``per_device_train_batch_size``)."""
        return self.completions // (self.processes * self.accumulation)


class Expected(_Model):
    """What measured runs of this config reached: ``rewardkit eval`` prints the range
    beside the trained model's figure and says whether it is in it, so a run that did
    not converge reads as one (``rewardkit eval --json``: ``expected``)."""

    accuracy: tuple[float, float] = Field(
        description="[low, high]: the accuracy (a share, 0-1) that measured runs reached")
    measured: str | None = Field(None, description="how and where the range was measured "
                                 "(printed with it)")

    @model_validator(mode="after")
    def _ordered(self) -> Expected:
        low, high = self.accuracy
        if not 0 <= low <= high <= 1:
            raise ValueError(f"accuracy [{low}, {high}]: want [low, high] with 0 <= low "
                             "<= high <= 1 (shares, not percents)")
        return self


class EvalConfig(_Model):
    """The ``eval:`` section: what ``rewardkit eval CONFIG`` measures."""

    model: str | None = Field(None, description="default: train.output_dir's final model")
    base_model: str | None = Field(None, description="compare against (default: train.model)")
    split: str | None = Field(None, description="test file (default: train.dataset.test)")
    limit: int | None = Field(100, gt=0, description="first N rows of the test split")
    accuracy_component: str | None = Field(
        None, description="component whose value == max counts as correct "
        "(default: 'accuracy'/'correctness' if present, else the total)",
    )
    max_new_tokens: int = Field(256, gt=0)
    temperature: float = Field(0.0, ge=0, description="0 = greedy")
    batch_size: int = Field(16, gt=0)
    seed: int = Field(0, description="sampling seed (temperature > 0)")
    samples: int = Field(1, ge=1, le=256, description="completions per prompt (sampled: "
                         "set temperature > 0); above 1 the report adds pass@k and maj@k "
                         "per component for k = 1, 2, 4, ... up to it")
    use_vllm: bool | Literal["auto"] = "auto"
    expected: Expected | None = Field(
        None, description="the range measured runs of this config reached: the report "
        "says whether the trained model is in it")


def parse_train(data: Any, source: str = "<config>") -> TrainConfig:
    """Validate a ``train:`` mapping; raise :class:`rewardkit.ConfigError` on problems."""
    if data is None:
        raise ConfigError(source, [("train", "missing: `rewardkit train` needs a train: section")])
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, validation_problems(exc, TrainConfig, "train")) from None


def parse_eval(data: Any, source: str = "<config>") -> EvalConfig:
    """Validate an ``eval:`` mapping (absent = defaults)."""
    try:
        return EvalConfig.model_validate(data or {})
    except ValidationError as exc:
        raise ConfigError(source, validation_problems(exc, EvalConfig, "eval")) from None


def resolve(path: str, config_file: str | Path | None) -> Path:
    """A path from the config, relative to the config file's folder (absolute stays)."""
    p = Path(path).expanduser()
    if p.is_absolute() or config_file is None:
        return p
    return (Path(config_file).resolve().parent / p).resolve()
