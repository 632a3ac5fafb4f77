"""rewardkit-code: rewards that execute code in the sandbox.

Rewards (registered through the ``rewardkit`` entry point):

- ``code_execution``: the model's program, run against assert tests or stdin/stdout
  cases (``binary``, ``pass_fraction`` or ``partial`` credit);
- ``python``: a reward function written in the config (``params.source``), compiled
  with RestrictedPython and run inside the sandbox.

See docs/plugins/code.md.
"""

from rewardkit_code.code_execution import CodeExecution, CodeExecutionParams
from rewardkit_code.custom_python import PythonReward, PythonRewardParams
from rewardkit_code.extraction import CodeBlock, code_blocks, extract_code
from rewardkit_code.references import IOCase, ReferenceFormatError, TestSuite, parse_reference
from rewardkit_code.restricted import RewardSourceError, compile_reward_source

__all__ = [
    "CodeBlock",
    "CodeExecution",
    "CodeExecutionParams",
    "IOCase",
    "PythonReward",
    "PythonRewardParams",
    "ReferenceFormatError",
    "RewardSourceError",
    "TestSuite",
    "code_blocks",
    "compile_reward_source",
    "extract_code",
    "parse_reference",
]
