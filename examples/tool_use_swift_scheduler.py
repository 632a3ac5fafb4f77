"""examples/tool-use.yaml's tools for ms-swift: a ``MultiTurnScheduler`` that runs them.

``--external_plugins`` loads this file (``rewardkit train`` passes it after the rewards'
own plugin) and ``--multi_turn_scheduler tool_use`` picks the scheduler registered here.
Each turn, it runs the calls ms-swift's agent template parsed from the policy's text
(``response_choice.message.tool_calls``, the parse the rewards repeat) with
``tool_use_tools``' functions and answers each with a ``tool`` message; a failed call's
answer is ``{"error": "..."}`` (ms-swift's messages carry a role and content only), which
``tool_errors`` counts. A turn without calls ends the rollout; ``--max_turns`` bounds it.
"""

from __future__ import annotations

import json
from typing import Any

from swift.rollout import MultiTurnScheduler, multi_turns
from tool_use_tools import calculate, convert_units  # beside this file (on sys.path)

TOOLS = {"convert_units": convert_units, "calculate": calculate}


def answer(name: str, arguments: str) -> str:
    """The ``tool`` message content for one call: the tool's result, or its error."""
    tool = TOOLS.get(name)
    if tool is None:
        return json.dumps({"error": f"unknown tool {name!r}"})
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
        return tool(**args)
    except (ValueError, TypeError) as exc:  # bad JSON, a missing argument, a refused call
        return json.dumps({"error": str(exc)})


class ToolUseScheduler(MultiTurnScheduler):
    """Runs the parsed calls of each turn; ends the rollout on a turn without calls."""

    def check_finished(self, infer_request: Any, response_choice: Any,
                       current_turn: int) -> bool:
        if not response_choice.message.tool_calls:
            return True
        return super().check_finished(infer_request, response_choice, current_turn)

    def step(self, infer_request: Any, response_choice: Any, current_turn: int) -> dict:
        for call in response_choice.message.tool_calls:
            infer_request.messages.append({"role": "tool", "content": answer(
                call.function.name, call.function.arguments)})
        return {"infer_request": infer_request}


multi_turns["tool_use"] = ToolUseScheduler
