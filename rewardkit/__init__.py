"""rewardkit: reward functions for GRPO / RLVR training, written once as plugins,
composed in a config, tested against golden cases, and fed to any trainer."""

from rewardkit import registry  # the module: registry.register(cls), registry.names(), ...
from rewardkit.authoring import NoParams, Params, Reward, reward
from rewardkit.config import ConfigError, RewardConfig, load_config, parse_config
from rewardkit.execution.budget import BudgetWaitTimeout, ExecutionBudget, node_budget
from rewardkit.hookspecs import EXIT_FAIL, EXIT_OK, EXIT_USAGE, Subcommands, UsageError, hookimpl
from rewardkit.registry import RegistryError, UnknownRewardError, get_reward
from rewardkit.reward_set import RewardSet, SampleScores, ScoreResult
from rewardkit.text.graded import after_reasoning, graded_text
from rewardkit.text.prompt import prompt_text
from rewardkit.text.visible import visible_length, visible_text
from rewardkit.trajectory import ToolCall, ToolResult, Trajectory, Turn, turn_score
from rewardkit.types import ExecutionMode, Sample, Score, Status, completion_text

__version__ = "0.1.0"

__all__ = [
    "EXIT_FAIL",
    "EXIT_OK",
    "EXIT_USAGE",
    "BudgetWaitTimeout",
    "ConfigError",
    "ExecutionBudget",
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
    "Subcommands",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "Turn",
    "UnknownRewardError",
    "UsageError",
    "__version__",
    "after_reasoning",
    "completion_text",
    "get_reward",
    "graded_text",
    "hookimpl",
    "load_config",
    "node_budget",
    "parse_config",
    "prompt_text",
    "registry",
    "reward",
    "turn_score",
    "visible_length",
    "visible_text",
]

# another distribution (PyPI's harbor-rewardkit) sharing our package or script: say so
from rewardkit.install_clash import warn_at_import

warn_at_import()
del warn_at_import
