"""The reward config's models: one source of truth for validation, defaults, the JSON
Schema (``rewardkit schema``) and the config reference (:mod:`rewardkit.config.reference`).

A config file is read by :mod:`rewardkit.config.loading` and validated whole by
:mod:`rewardkit.config.validation`; plugin sections join the top level through
:mod:`rewardkit.config.sections`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from rewardkit.schedules import Weight
from rewardkit.types import MAX_ABS_VALUE, ExecutionMode


class ConfigModel(BaseModel):
    """Base of every config model, core and plugin sections alike: unknown keys are
    errors, and no float field takes NaN or infinity (check a free-form field with
    :func:`require_finite`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def require_finite(value: Any) -> Any:
    """``value`` unchanged, or ValueError naming the NaN/infinite number inside it (by
    key and index), for free-form config values passed through to other programs."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    if isinstance(value, Mapping):
        items = [(str(key), item) for key, item in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"[{i}]", item) for i, item in enumerate(value)]
    else:
        items = []
    for label, item in items:
        try:
            require_finite(item)
        except ValueError as exc:
            raise ValueError(f"{label}: {exc}") from None
    return value


#: longest per-sample timeout a config may ask for (a day): longer is a mistake, and the
#: operating system refuses waits past ~49 days
MAX_TIMEOUT = 86_400.0
#: most process-mode workers a config may ask for
MAX_WORKERS = 1024
#: turn indices whose per-turn metrics are logged one by one unless the config says
#: otherwise (``turn_metrics``); later turns share one bucket
TURN_METRICS = 8


def weight_not_text(value: Any, where: str = "") -> Any:
    """``value`` (a weight as written) unchanged, or ValueError when text or true/false
    stands where a number belongs: pydantic alone would read ``"0.2"`` as 0.2 and ``true``
    as 1 without a word, and a quoted number is a config mistake worth saying."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key != "schedule":
                weight_not_text(item, f"{key}: ")
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            weight_not_text(item, f"{where.removesuffix(': ')}[{i}]: " if where else "")
        return value
    if isinstance(value, bool):
        raise ValueError(f"{where}expected a number, not true/false")
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            expected = "a number" if where else "a number or a schedule ({schedule: linear, ...})"
            raise ValueError(f"{where}expected {expected}, not text") from None
        raise ValueError(f"{where}expected a number, not text: write it without quotes")
    return value


class Stage(ConfigModel):
    """Params and/or weight for a range of steps. Stages apply in order; a stage holds
    while ``step < until_step``; the last stage may omit ``until_step`` (holds forever)."""

    until_step: int | None = Field(None, gt=0, description="first step after this stage")
    params: dict[str, Any] = Field(
        default_factory=dict, description="merged over the component's params"
    )
    weight: Weight | None = Field(None, description="replaces the component's weight")

    _weight_not_text = field_validator("weight", mode="before")(
        lambda value: weight_not_text(value))


class Fallback(ConfigModel):
    """A second reward (typically ``llm_judge``) asked only where the component's own
    reward says no: rule-then-judge. The rule's verdict stands where it pays ``below`` or
    more, where it failed or was skipped; elsewhere the fallback is asked and its value
    replaces the rule's when it is higher (a flip). A fallback that fails leaves the
    rule's verdict, counted in the metrics (``fallback.errors``)."""

    reward: str = Field(description="name of a registered per-sample reward, e.g. llm_judge")
    params: dict[str, Any] = Field(
        default_factory=dict, description="its parameters, validated by the reward's model"
    )
    below: float = Field(
        1.0, description="ask the fallback where the rule's value is below this (default "
        "1: anything short of full marks)"
    )
    timeout: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT, description="hard timeout in seconds per sample asked"
    )
    mode: ExecutionMode | None = Field(
        None, description="override the fallback reward's declared execution mode"
    )


class Component(ConfigModel):
    """One named term of the composed reward."""

    reward: str = Field(description="name of a registered reward (`rewardkit rewards`)")
    params: dict[str, Any] = Field(
        default_factory=dict, description="parameters, validated by the reward's model"
    )
    weight: Weight = Field(
        1.0, description="a number or a schedule, finite and within +-1,000,000; 0 = logged "
        "metric only, not trained on"
    )
    stages: list[Stage] | None = Field(None, description="params/weight switched by step")
    when: dict[str, Any] | None = Field(
        None,
        description="routing: only samples whose metadata matches every key (a list value "
        "means membership) are scored; others get status skipped",
    )
    timeout: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT,
        description="hard timeout in seconds per sample (per group for group "
        "rewards), at most 86,400; an inline reward with a timeout runs in a worker process",
    )
    mode: ExecutionMode | None = Field(
        None, description="override the reward's declared execution mode"
    )
    on_truncated: Literal["keep", "zero", "mask"] = Field(
        "keep",
        description="on a truncated sample (finish_reason length, or a truncated column): "
        "keep the score, zero it (status ok, value 0), or mask it (status skipped and the "
        "sample's total null, so trainers drop it); a sample that says neither is an error "
        "unless keep",
    )
    turns: Literal["last", "sum", "mean", "discounted"] = Field(
        "last",
        description="how a per-turn reward's values (one per assistant turn) become the "
        "value that trains: the last turn's, their sum, their mean, or the discounted return "
        "sum(gamma^t * value_t) from the first turn",
    )
    gamma: float = Field(
        1.0, ge=0.0, le=1.0, description="discount per turn for turns: discounted"
    )
    fallback: Fallback | None = Field(
        None, description="rule-then-judge: a reward asked only where this one's value is "
        "below fallback.below; the share asked and the flips are in the metrics"
    )

    _weight_not_text = field_validator("weight", mode="before")(
        lambda value: weight_not_text(value))

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


class Limits(ConfigModel):
    """Input guards applied before any reward sees a sample."""

    max_completion_chars: int = Field(
        200_000, gt=0, description="completions longer than this are not parsed"
    )
    max_line_bytes: int = Field(
        16_000_000, gt=0, description="`rewardkit score` input lines longer than this many "
        "bytes are reported and skipped, read in pieces, never held whole"
    )
    oversize_value: float | None = Field(
        None, ge=-MAX_ABS_VALUE, le=MAX_ABS_VALUE,
        description="value given to oversize completions (status ok), within +-1e12; "
        "null = status error",
    )


class RaySettings(ConfigModel):
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


class RewardConfig(ConfigModel):
    """A composed reward."""

    aggregate: Literal["weighted_sum", "normalize_then_sum"] = Field(
        "weighted_sum",
        description="weighted_sum: sum of weight x value; normalize_then_sum: each component "
        "is standardised within its group (a `group` column or the trainer's prompt id, else the "
        "same prompt) before the weighted sum",
    )
    on_error: Literal["null", "ignore"] = Field(
        "null",
        description="total of a sample whose weighted component failed (error/timeout): "
        "null (masked by trainers) or ignore (sum of the others)",
    )
    rewards: dict[str, Component] = Field(min_length=1)
    limits: Limits = Field(default_factory=lambda: Limits.model_validate({}))
    workers: int | None = Field(
        None, gt=0, le=MAX_WORKERS,
        description="process-mode worker count (default: usable cores), at most 1,024",
    )
    executor: Literal["local", "ray", "auto"] = Field(
        "local",
        description="where process-mode and sandboxed rewards run: local worker processes, "
        "Ray actors, or auto (Ray when this process is connected to a Ray cluster or "
        "RAY_ADDRESS is set)",
    )
    ray: RaySettings = Field(default_factory=lambda: RaySettings.model_validate({}))
    turn_metrics: int = Field(
        TURN_METRICS, ge=0, le=64,
        description="per-turn rewards' metrics: turns 0 .. turn_metrics-1 each get a mean "
        "and a count, later turns one bucket `<turn_metrics>plus` (each sample's mean over "
        "them); the same keys on every batch (see docs/agents.md)",
    )

    _sections: dict[str, Any] = PrivateAttr(default_factory=dict)

    def section(self, name: str) -> Any:
        """The validated model of a plugin's config section (``train``, ``sagemaker``,
        ...), or None when the file has none. Sections come from the
        ``register_config_sections`` hook; see
        :func:`rewardkit.config.sections.config_model`."""
        return self._sections.get(name)
