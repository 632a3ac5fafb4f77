"""examples/tool-use.yaml's tools for verl: ``tool_use_tools``' two functions registered
with verl's ``@function_tool`` (verl infers their schemas with transformers'
``get_json_schema``, as TRL does).

verl's tool agent loop loads this file by path
(``actor_rollout_ref.rollout.multi_turn.function_tool_path``, which ``rewardkit train``
resolves next to the config); a raised ``ValueError`` reaches the policy as verl's
``Error executing tool ...`` answer, a tool error for the rewards.
"""

from __future__ import annotations

import sys
from pathlib import Path

from verl.tools.function_tool import function_tool

sys.path.insert(0, str(Path(__file__).resolve().parent))  # verl loads this file by path

from tool_use_tools import calculate, convert_units

function_tool(convert_units)
function_tool(calculate)
