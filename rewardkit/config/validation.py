"""A config dict validated whole: its shape and plugin sections (the models), every
reward's name (the registry) and params (per stage), every problem reported in one pass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rewardkit.config.errors import ConfigError, top_level_hints, validation_problems
from rewardkit.config.models import RewardConfig
from rewardkit.config.sections import config_model
from rewardkit.registry import RegistryError, UnknownRewardError, registry


def parse_config(data: Mapping[str, Any], source: str = "<config>") -> RewardConfig:
    """Validate a config dict: shape and plugin sections, every reward name and its
    params (per stage).

    Every problem is reported in one pass: a shape error elsewhere does not hide an
    unknown reward or a misspelt param of another component.
    """
    model = config_model()
    problems: list[tuple[str, str]] = []
    whole: RewardConfig | None = None
    try:
        whole = model.model_validate(data)
    except ValidationError as exc:
        problems += top_level_hints(validation_problems(exc, model), model)
    rewards = data.get("rewards") if isinstance(data, Mapping) else None
    if isinstance(rewards, Mapping):
        for name, component in rewards.items():
            if isinstance(component, Mapping) and isinstance(component.get("reward"), str):
                problems += _component_problems(f"rewards.{name}", component)
    if problems or whole is None:
        raise ConfigError(source, list(dict.fromkeys(problems)) or [("", "invalid config")])
    # the core model, so configs pickle to worker processes whatever plugins are installed
    config = RewardConfig.model_validate({k: v for k, v in data.items()
                                          if k in RewardConfig.model_fields})
    config._sections = {name: value for name in model.model_fields
                        if name not in RewardConfig.model_fields
                        and (value := getattr(whole, name)) is not None}
    return config


def _component_problems(base: str, component: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The reward name and params of one component (given as the raw mapping)."""
    try:
        cls = registry.get(component["reward"])
    except (UnknownRewardError, RegistryError) as exc:
        return [(f"{base}.reward", str(exc))]
    params = component.get("params") or {}
    if not isinstance(params, Mapping):
        return []  # the shape check already said params must be a mapping
    problems: list[tuple[str, str]] = []
    try:
        cls.Params.model_validate(params)
    except ValidationError as exc:
        problems += validation_problems(exc, cls.Params, f"{base}.params")
    fallback = component.get("fallback")
    if isinstance(fallback, Mapping) and isinstance(fallback.get("reward"), str):
        problems += _fallback_problems(f"{base}.fallback", fallback)
    stages = component.get("stages")
    for i, stage in enumerate(stages if isinstance(stages, list) else []):
        stage_params = stage.get("params") if isinstance(stage, Mapping) else None
        if not isinstance(stage_params, Mapping):
            continue
        try:
            cls.Params.model_validate({**params, **stage_params})
        except ValidationError as exc:
            problems += validation_problems(exc, cls.Params, f"{base}.stages.{i}.params")
    return problems


def _fallback_problems(base: str, fallback: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A fallback's reward name (a per-sample reward) and params."""
    try:
        cls = registry.get(fallback["reward"])
    except (UnknownRewardError, RegistryError) as exc:
        return [(f"{base}.reward", str(exc))]
    if cls.group:
        return [(f"{base}.reward", f"{fallback['reward']} is a group reward; a fallback is "
                 "asked about single samples (the ones the rule said no to), so it must be "
                 "a per-sample reward such as llm_judge")]
    params = fallback.get("params") or {}
    if not isinstance(params, Mapping):
        return []
    try:
        cls.Params.model_validate(params)
    except ValidationError as exc:
        return validation_problems(exc, cls.Params, f"{base}.params")
    return []
