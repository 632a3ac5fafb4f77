"""rewardkit-tools: rewards for tool-calling agents (``tool_call_valid``, ``tool_call_match``,
``tool_errors``, ``tool_efficiency``, ``non_stop_penalty``)."""
