"""rewardkit: reward functions for GRPO / RLVR training, written once as plugins,
composed in a config, tested against golden cases, and fed to any trainer."""

from rewardkit.authoring import NoParams, Params, Reward, reward
from rewardkit.composition import RewardSet
from rewardkit.config import ConfigError, RewardConfig, load_config, parse_config
from rewardkit.hookspecs import hookimpl
from rewardkit.registry import RegistryError, UnknownRewardError, get_reward, registry
from rewardkit.score_result import SampleScores, ScoreResult
from rewardkit.types import ExecutionMode, Sample, Score, Status, completion_text
from rewardkit.visible import visible_length, visible_text

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "ExecutionMode",
    "NoParams",
    "Params",
    "RegistryError",
    "Reward",
    "RewardConfig",
    "RewardSet",
    "Sample",
    "SampleScores",
    "Score",
    "ScoreResult",
    "Status",
    "UnknownRewardError",
    "__version__",
    "completion_text",
    "get_reward",
    "hookimpl",
    "load_config",
    "parse_config",
    "registry",
    "reward",
    "visible_length",
    "visible_text",
]
