"""Plugin config sections: the model of a whole config file is :class:`RewardConfig`
plus one optional top-level key per section a plugin registers
(``register_config_sections``: ``train``, ``sagemaker``, ...)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

from rewardkit.config.models import RewardConfig
from rewardkit.registry import RegistryError, registry

_MODELS: dict[tuple[tuple[str, type[BaseModel]], ...], type[RewardConfig]] = {}


def config_model() -> type[RewardConfig]:
    """The model of a whole config file: :class:`RewardConfig` plus one optional key per
    section that an installed plugin registers (``register_config_sections``)."""
    sections = registry.config_sections()
    key = tuple((s.name, s.model) for s in sections)
    model = _MODELS.get(key)
    if model is None:
        for s in sections:  # the config knows its keys; the registry checks the rest
            if s.name in RewardConfig.model_fields:
                raise RegistryError(
                    f"{s.distribution}: config section {s.name!r} is not a free top-level "
                    f"key (core keys: {', '.join(RewardConfig.model_fields)})")
        fields: dict[str, Any] = {
            s.name: (s.model | None, Field(None, description=s.description)) for s in sections
        }
        model = create_model("RewardConfig", __base__=RewardConfig, __doc__=RewardConfig.__doc__,
                             __module__=__name__, **fields)
        _MODELS[key] = model
    return model


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file, plugin sections included."""
    return config_model().model_json_schema()
