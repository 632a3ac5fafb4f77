"""The reward config: YAML or TOML -> pydantic models -> :class:`~rewardkit.RewardSet`.

- :mod:`~rewardkit.config.models`: the models, the single source of truth for
  validation, defaults, the JSON Schema (``rewardkit schema``) and the config reference;
- :mod:`~rewardkit.config.loading`: a file read safely (YAML/TOML, size and depth limits);
- :mod:`~rewardkit.config.validation`: a dict validated whole, rewards and params included;
- :mod:`~rewardkit.config.errors`: :class:`ConfigError`, naming the file, the key path and
  what was expected, for every problem at once;
- :mod:`~rewardkit.config.sections`: the top-level sections plugins register;
- :mod:`~rewardkit.config.reference`: docs/config-reference.md rendered from the models.

The names below are the ones to import (``from rewardkit.config import RewardConfig``).
"""

from rewardkit.config.errors import ConfigError, validation_problems
from rewardkit.config.loading import load_config, read_config_file
from rewardkit.config.models import (
    Component,
    ConfigModel,
    Limits,
    RaySettings,
    RewardConfig,
    Stage,
    require_finite,
)
from rewardkit.config.sections import config_model, config_schema
from rewardkit.config.validation import parse_config

__all__ = [
    "Component",
    "ConfigError",
    "ConfigModel",
    "Limits",
    "RaySettings",
    "RewardConfig",
    "Stage",
    "config_model",
    "config_schema",
    "load_config",
    "parse_config",
    "read_config_file",
    "require_finite",
    "validation_problems",
]
