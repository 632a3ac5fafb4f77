"""The reward config: YAML or TOML -> pydantic models -> :class:`RewardSet`.

The models are the single source of truth for validation, defaults, the JSON Schema
(``rewardkit schema``) and the config reference in the docs. Every failure is a
:class:`ConfigError` naming the file, the key path and what was expected.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rewardkit.registry import RegistryError, UnknownRewardError, registry
from rewardkit.schedules import Weight
from rewardkit.types import ExecutionMode


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Stage(_Model):
    """Params and/or weight for a range of steps. Stages apply in order; a stage holds
    while ``step < until_step``; the last stage may omit ``until_step`` (holds forever)."""

    until_step: int | None = Field(None, gt=0, description="first step after this stage")
    params: dict[str, Any] = Field(
        default_factory=dict, description="merged over the component's params"
    )
    weight: Weight | None = Field(None, description="replaces the component's weight")


class Component(_Model):
    """One named term of the composed reward."""

    reward: str = Field(description="name of a registered reward (`rewardkit rewards`)")
    params: dict[str, Any] = Field(
        default_factory=dict, description="parameters, validated by the reward's model"
    )
    weight: Weight = Field(
        1.0, description="a number or a schedule; 0 = logged metric only, not trained on"
    )
    stages: list[Stage] | None = Field(None, description="params/weight switched by step")
    when: dict[str, Any] | None = Field(
        None,
        description="routing: only samples whose metadata matches every key (a list value "
        "means membership) are scored; others get status skipped",
    )
    timeout: float | None = Field(
        None, gt=0, description="hard timeout in seconds per sample (per group for group "
        "rewards); an inline reward with a timeout runs in a worker process",
    )
    mode: ExecutionMode | None = Field(
        None, description="override the reward's declared execution mode"
    )

    @field_validator("stages")
    @classmethod
    def _check_stages(cls, stages: list[Stage] | None) -> list[Stage] | None:
        last = 0
        for i, stage in enumerate(stages or []):
            if stage.until_step is None and i != len(stages or []) - 1:
                raise ValueError(f"stage {i} has no until_step but is not the last stage")
            if stage.until_step is not None:
                if stage.until_step <= last:
                    raise ValueError("stage until_step values must be strictly increasing")
                last = stage.until_step
        return stages


class Limits(_Model):
    """Input guards applied before any reward sees a sample."""

    max_completion_chars: int = Field(
        200_000, gt=0, description="completions longer than this are not parsed"
    )
    oversize_value: float | None = Field(
        None,
        description="value given to oversize completions (status ok); null = status error",
    )


class RaySettings(_Model):
    """Where and how wide process-mode and sandboxed rewards run when ``executor`` is ray."""

    address: str | None = Field(
        None, description="Ray cluster address (default: RAY_ADDRESS, a running cluster, "
        "else a local one)"
    )
    actors: int | None = Field(
        None, gt=0, description="scoring actors (default: the cluster's CPUs / cpus_per_actor)"
    )
    cpus_per_actor: float = Field(
        1.0, gt=0, description="CPUs reserved by each actor; its worker pool has that many "
        "processes (at least one)"
    )
    max_in_flight: int = Field(
        2, ge=1, description="chunks queued per actor at a time (backpressure)"
    )


class RewardConfig(_Model):
    """A composed reward."""

    aggregate: Literal["weighted_sum", "normalize_then_sum"] = Field(
        "weighted_sum",
        description="weighted_sum: sum of weight x value; normalize_then_sum: each component "
        "is standardised within its group (same prompt) before the weighted sum",
    )
    on_error: Literal["null", "ignore"] = Field(
        "null",
        description="total of a sample whose weighted component failed (error/timeout): "
        "null (masked by trainers) or ignore (sum of the others)",
    )
    rewards: dict[str, Component] = Field(min_length=1)
    limits: Limits = Field(default_factory=lambda: Limits.model_validate({}))
    workers: int | None = Field(
        None, gt=0, description="process-mode worker count (default: usable cores)"
    )
    executor: Literal["local", "ray", "auto"] = Field(
        "local",
        description="where process-mode and sandboxed rewards run: local worker processes, "
        "Ray actors, or auto (Ray when this process is connected to a Ray cluster or "
        "RAY_ADDRESS is set)",
    )
    ray: RaySettings = Field(default_factory=lambda: RaySettings.model_validate({}))
    train: dict[str, Any] | None = Field(None, description="training run (rewardkit train)")
    eval: dict[str, Any] | None = Field(None, description="evaluation (rewardkit eval)")
    sagemaker: dict[str, Any] | None = Field(
        None, description="SageMaker job (rewardkit launch sagemaker)"
    )


class ConfigError(Exception):
    """An invalid config: each problem as (key path, reason), with the file."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.source}: invalid reward config"]
        for path, reason in self.problems:
            lines.append(f"  {path or '(top level)'}: {reason}")
        return "\n".join(lines)


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML or TOML file into a dict, as a ConfigError on any problem."""
    path = Path(path)
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(source, [("", f"cannot read file: {exc.strerror or exc}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, [("", f"not UTF-8 text ({exc.reason})")]) from None
    if path.suffix.lower() == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(source, [("", f"TOML syntax error: {exc}")]) from None
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            raise ConfigError(source, [("", f"YAML syntax error at {where}{exc.problem}")]) \
                from None
        except yaml.YAMLError as exc:
            raise ConfigError(source, [("", f"YAML error: {exc}")]) from None
    if not isinstance(data, dict):
        raise ConfigError(source, [("", f"expected a mapping, got {type(data).__name__}")])
    return data


def parse_config(data: Mapping[str, Any], source: str = "<config>") -> RewardConfig:
    """Validate a config dict: shape, then every reward name and its params (per stage)."""
    try:
        config = RewardConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, _problems(exc)) from None
    problems: list[tuple[str, str]] = []
    for name, component in config.rewards.items():
        base = f"rewards.{name}"
        try:
            cls = registry.get(component.reward)
        except UnknownRewardError as exc:
            problems.append((f"{base}.reward", str(exc)))
            continue
        except RegistryError as exc:
            problems.append((f"{base}.reward", str(exc)))
            continue
        try:
            cls.Params.model_validate(component.params)
        except ValidationError as exc:
            problems += _problems(exc, f"{base}.params")
        for i, stage in enumerate(component.stages or []):
            try:
                cls.Params.model_validate({**component.params, **stage.params})
            except ValidationError as exc:
                problems += _problems(exc, f"{base}.stages.{i}.params")
    if problems:
        raise ConfigError(source, problems)
    return config


def load_config(path: str | Path) -> RewardConfig:
    """Read and validate a reward config file (``.yaml``, ``.yml`` or ``.toml``)."""
    return parse_config(read_config_file(path), str(path))


def _problems(exc: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    errors = exc.errors(include_url=False)
    in_union = any(str(p).startswith("tagged-union[") for e in errors for p in e["loc"])
    out: list[tuple[str, str]] = []
    for err in errors:
        # drop pydantic's union-branch labels ("float", "tagged-union[...]") from the path
        loc = _key_path(err["loc"])
        path = ".".join([prefix, *loc] if prefix else loc)
        kind = err["type"]
        given = err.get("input")
        if kind in ("float_type", "float_parsing") and isinstance(given, dict):
            continue  # a mapping given for a number-or-schedule: the schedule errors tell more
        if kind in ("model_attributes_type", "model_type") and not isinstance(given, dict) \
                and any(p == path for p, _ in out):
            continue  # a scalar that is not a number: the number error already says so
        message = err["msg"]
        if kind == "extra_forbidden":
            message = "unknown key"
        elif kind in ("float_type", "float_parsing") and in_union:
            message = "expected a number or a schedule ({schedule: linear, ...})"
        if "input" in err and kind not in ("missing", "extra_forbidden"):
            shown = json.dumps(given, default=str)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            message = f"{message} (got {shown})"
        out.append((path, message))
    return out


def _key_path(loc: tuple[int | str, ...]) -> list[str]:
    """The user's key path from a pydantic error location, without union-branch labels
    ("float", "tagged-union[...]" and the discriminator value after it)."""
    parts: list[str] = []
    skip_tag = False
    for raw in loc:
        part = str(raw)
        if skip_tag:
            skip_tag = False
            continue
        if part.startswith("tagged-union["):
            skip_tag = True
            continue
        if part in ("float", "int", "str", "bool") or part.startswith(("function-", "union[")):
            continue
        parts.append(part)
    return parts


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file."""
    return RewardConfig.model_json_schema()
