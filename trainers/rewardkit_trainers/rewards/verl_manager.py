"""The verl reward manager (and tool agent loop) that hand rewardkit what the policy did.

verl's ``naive`` manager decodes each response and calls ``compute_score`` with the text
only. :class:`RewardkitRewardManager` is that manager, plus the response's valid token ids
(the ``responses`` row cut at the attention mask's length) in
``extra_info["response_ids"]``, which
:func:`rewardkit_trainers.rewards.verl.compute_score` turns into
``metadata["completion_ids"]``: ``unit: tokens`` then counts the policy's tokens. verl
loads it with::

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=pkg://rewardkit_trainers.rewards.verl_manager
    reward.reward_manager.name=RewardkitRewardManager

Multi-turn, tool-using rollouts: verl 0.9.1's ``tool_agent`` loop keeps its messages to
itself, and the reward manager it streams each finished rollout to gets no
``response_mask`` (``AgentLoopWorker._compute_score`` builds that batch from the token
ids alone). :class:`RewardkitToolAgentLoop` is verl's ``ToolAgentLoop`` that also records,
in its output's ``extra_fields`` (:data:`ROLLOUT`), the response mask, the tool schemas it
offered, its tool parser and the tool results it merged. From those the manager rebuilds
the trajectory (:func:`rebuild_trajectory`): each run of mask-1 tokens is an assistant
turn, parsed by the loop's own tool parser; each run of mask-0 tokens is one step of tool
results. Text the policy wrote is never read as a tool result, whatever it looks like.

Imported by verl only (it imports verl); ``pkg://rewardkit_trainers.rewards.verl_manager`` is
the same class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from rewardkit.trajectory import rollout_end
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import ToolParser
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
from verl.tools.schemas import OpenAIFunctionToolSchema

from rewardkit_trainers.rewards.verl import RESPONSE_IDS, ROLLOUT, TRAJECTORY

#: what verl's ToolAgentLoop answers when a call could not run (``_call_tool``): such a
#: result is a tool error
VERL_TOOL_ERRORS = ("Error executing tool '", "Invalid JSON in arguments for '",
                    "Unknown function '")


class RewardkitToolAgentLoop(ToolAgentLoop):
    """verl's ``tool_agent`` loop, recording what rewardkit needs to rebuild the
    trajectory in ``extra_fields[ROLLOUT]``; it rolls out exactly as verl's does. verl
    creates one loop per sample, so the state kept on ``self`` is that sample's."""

    async def _handle_pending_state(self, agent_data: AgentData,
                                    sampling_params: dict[str, Any]) -> AgentState:
        self._rewardkit_data = agent_data
        self._rewardkit_results: list[list[dict[str, Any]]] = []
        state: AgentState = await super()._handle_pending_state(agent_data, sampling_params)
        return state

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        messages, tokens = len(agent_data.messages), len(agent_data.response_mask)
        state: AgentState = await super()._handle_processing_tools_state(agent_data)
        if len(agent_data.response_mask) > tokens:  # the results were merged into the tokens
            self._rewardkit_results.append(
                [{"content": m.get("content"), "tool_call_id": m.get("tool_call_id")}
                 for m in agent_data.messages[messages:] if m.get("role") == "tool"])
        return state

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        output = await super().run(sampling_params, **kwargs)
        data = self._rewardkit_data
        output.extra_fields[ROLLOUT] = {
            "response_mask": list(output.response_mask),
            "tools": list(getattr(data, "_active_tool_schemas", self.tool_schemas) or ()),
            "tool_results": self._rewardkit_results,
            "tool_parser": self.tool_parser_name,
            "response_length": self.response_length,
        }
        return output


def _segments(mask: Sequence[int]) -> list[tuple[int, int, int]]:
    """(mask value, start, end) of each run of equal mask values."""
    runs: list[tuple[int, int, int]] = []
    for i, bit in enumerate(mask):
        if runs and runs[-1][0] == int(bit):
            runs[-1] = (runs[-1][0], runs[-1][1], i + 1)
        else:
            runs.append((int(bit), i, i + 1))
    return runs


async def _assistant_message(parser: ToolParser, tokenizer: Any, ids: list[int],
                             tools: list[Any] | None) -> dict[str, Any]:
    """One assistant turn as the loop's parser read it; a call text it could not parse
    (hermes drops those silently) stays as an invalid call, not as nothing."""
    content, calls = await parser.extract_tool_calls(ids, tools)
    raw_calls: list[Any] = [{"type": "function", "id": c.tool_call_id,
                             "function": {"name": c.name, "arguments": c.arguments}}
                            for c in calls]
    pattern = getattr(parser, "tool_call_regex", None)
    if pattern is not None:
        found = pattern.findall(tokenizer.decode(ids))
        raw_calls.extend(str(text) for text in found[len(calls):])
    for special in getattr(tokenizer, "all_special_tokens", []):
        content = content.replace(special, "")
    message: dict[str, Any] = {"role": "assistant", "content": content.strip()}
    if raw_calls:
        message["tool_calls"] = raw_calls
    return message


def _tool_message(result: Mapping[str, Any]) -> dict[str, Any]:
    message = {"role": "tool", "content": result.get("content") or ""}
    if result.get("tool_call_id") is not None:
        message["tool_call_id"] = result["tool_call_id"]
    content = message["content"]
    if isinstance(content, str) and content.startswith(VERL_TOOL_ERRORS):
        message["status"] = "error"
    return message


async def rebuild_trajectory(rollout: Mapping[str, Any], response_ids: list[int],
                             tokenizer: Any) -> dict[str, Any]:
    """The trajectory of one rollout of :class:`RewardkitToolAgentLoop`: ``messages``
    (assistant turns and tool results), ``tools``, ``finish_reason`` and ``truncated``;
    or ``problem`` when the recorded rollout does not fit its tokens."""
    mask = list(rollout.get("response_mask") or [])
    if len(mask) != len(response_ids):
        return {"problem": f"response_mask has {len(mask)} tokens, the response "
                           f"{len(response_ids)}"}
    parser = ToolParser.get_tool_parser(rollout.get("tool_parser") or "hermes", tokenizer)
    schemas = list(rollout.get("tools") or [])
    try:
        tools: list[Any] | None = [OpenAIFunctionToolSchema.model_validate(t) for t in schemas]
    except ValueError:
        tools = None
    results = list(rollout.get("tool_results") or [])
    messages: list[dict[str, Any]] = []
    runs = _segments(mask)
    if sum(1 for bit, _, _ in runs if bit == 0) != len(results):
        return {"problem": f"{len(results)} recorded tool steps for "
                           f"{sum(1 for bit, _, _ in runs if bit == 0)} tool segments"}
    step = 0
    for bit, start, end in runs:
        if bit:
            messages.append(await _assistant_message(parser, tokenizer,
                                                     response_ids[start:end], tools))
        else:
            messages.extend(_tool_message(r) for r in results[step])
            step += 1
    stops = {tokenizer.eos_token_id, *parser.stop_token_ids} - {None}
    limit = rollout.get("response_length")
    cut = isinstance(limit, int) and len(response_ids) >= limit
    if runs and runs[-1][0] == 1 and response_ids and response_ids[-1] not in stops:
        cut = True  # the last turn never reached its end of sequence
    # the one rule of every backend (rewardkit.trajectory.rollout_end): a last turn whose
    # calls never ran (max_assistant_turns / max_user_turns, or a result dropped for
    # want of room) was cut before its answer
    return {"messages": messages, "tools": schemas, **rollout_end(messages, cut)}


class RewardkitRewardManager(NaiveRewardManager):
    """verl's naive reward manager, with the response's token ids in ``extra_info`` and,
    for a :class:`RewardkitToolAgentLoop` rollout, its trajectory."""

    async def run_single(self, data: Any) -> dict[str, Any]:
        data = data[-1:]  # as the naive manager: the last sequence is the one scored
        item = data[0]
        responses = item.batch["responses"]
        valid = int(item.batch["attention_mask"][-responses.shape[-1]:].sum())
        info = dict(item.non_tensor_batch.get("extra_info") or {})
        info[RESPONSE_IDS] = responses[:valid].tolist()
        fields = item.non_tensor_batch.get("tool_extra_fields")  # the streaming path
        rollout = (fields or {}).get(ROLLOUT) if isinstance(fields, Mapping) \
            else item.non_tensor_batch.get(ROLLOUT)  # a batch from AgentLoopWorker
        if isinstance(rollout, Mapping):
            info[TRAJECTORY] = await rebuild_trajectory(rollout, info[RESPONSE_IDS],
                                                        self.tokenizer)
        # a new array in this one-row slice: the caller's batch keeps its extra_info
        data.non_tensor_batch["extra_info"] = np.array([info], dtype=object)
        result: dict[str, Any] = await super().run_single(data)
        return result
