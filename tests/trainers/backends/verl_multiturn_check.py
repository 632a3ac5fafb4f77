"""Run inside .venv-verl: multi-turn tool rollouts through verl's own agent loop code.

verl's ``AgentLoopWorker.generate_sequences`` runs ``RewardkitToolAgentLoop`` (verl's
``ToolAgentLoop`` plus its record) with a real verl ``FunctionTool``; the policy is
scripted (a fixed text per turn from a stand-in LLM client, so no GPU or model), and the
tokenizer is a byte-level BPE trained here with a small chat template. Rewards are
scored in both of verl's paths: streamed (the worker's ``_compute_score`` hands each
finished rollout to a ``RewardLoopWorker``, as verl does when no reward model runs) and
batched (the reward manager's ``run_single`` on the worker's output DataProto, then
``assemble_rm_scores``). verl's ``compute_grpo_outcome_advantage`` then reads the token
rewards. Prints one JSON object.

    REWARDKIT_CONFIG=rewards.yaml python verl_multiturn_check.py AGENT_LOOP_YAML
"""

from __future__ import annotations

import asyncio
import json
import re
import sys

import numpy as np
import torch
from omegaconf import OmegaConf
from rewardkit_trainers.rewards.verl import MANAGER_OVERRIDES, TRAJECTORY
from rewardkit_trainers.rewards.verl_manager import rebuild_trajectory
from tokenizers import ByteLevelBPETokenizer
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.experimental.agent_loop import agent_loop as al
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.tools.function_tool import FunctionTool
from verl.tools.schemas import OpenAIFunctionToolSchema
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
from verl.trainer.ppo.reward import load_reward_manager
from verl.utils.rollout_trace import RolloutTraceConfig
from verl.workers.rollout.replica import TokenOutput

TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m.content }}\n"
    "</tool_response><|im_end|>\n"
    "{%- elif m.role == 'assistant' %}<|im_start|>assistant\n{{ m.content }}"
    "{%- for c in m.tool_calls or [] %}<tool_call>\n{{ c.function | tojson }}\n</tool_call>"
    "{%- endfor %}<|im_end|>\n"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
CALL = ('<tool_call>\n{"name": "convert_units", "arguments": {"value": 12, '
        '"from_unit": "km", "to_unit": "%s"}}\n</tool_call>')
ANSWER = "12 km is about 7.46 miles."
END = "<|im_end|>"
#: the scripted policy: each case's assistant turns, in order
SCRIPTS = {
    "honest": [CALL % "mi" + END, ANSWER + END],
    # a call the tool refuses, then a result the policy wrote itself, in its own tokens
    "fake_result": [CALL % "parsec" + "\n<tool_response>\n7.456\n</tool_response>" + END,
                    ANSWER + END],
    # the right call, then a call text hermes cannot parse (verl drops it silently)
    "garbage_call": [CALL % "mi" + "<tool_call>\nnot json\n</tool_call>" + END, ANSWER + END],
    # cut off by the response length before the answer ends
    "truncated": [CALL % "mi" + END, ANSWER + " and further" * 200 + END],
    # no call: the answer from memory
    "no_call": [ANSWER + END],
    # max_assistant_turns (3) ends the rollout on a call never run, the answer beside it
    "cut_call": [CALL % "mi" + END, CALL % "mi" + END, ANSWER + "\n" + CALL % "mi" + END],
    # no call, cut at the response length in the answer
    "rambles": [ANSWER + " and so on" * 200 + END],
}
SCHEMA = {"type": "function", "function": {
    "name": "convert_units", "description": "Convert a value between units.",
    "parameters": {"type": "object", "required": ["value", "from_unit", "to_unit"],
                   "properties": {"value": {"type": "number"},
                                  "from_unit": {"type": "string", "enum": ["km", "mi"]},
                                  "to_unit": {"type": "string", "enum": ["km", "mi"]}}}}}
RESPONSE_LENGTH = 320  # room for three turns of calls; the cut cases run past it


def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    factors = {("km", "mi"): 0.62137, ("mi", "km"): 1.60934}
    if (from_unit, to_unit) not in factors:
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    return f"{value * factors[(from_unit, to_unit)]:.3f}"


def build_tokenizer() -> PreTrainedTokenizerFast:
    corpus = [json.dumps(SCHEMA), TEMPLATE, *[t for s in SCRIPTS.values() for t in s],
              "What is 12 km in miles? 7.456 Error executing tool cannot convert"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus * 4, vocab_size=600,
                            special_tokens=["<|endoftext|>", "<|im_start|>", END])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token=END,
                                        pad_token="<|endoftext|>")
    tokenizer.chat_template = TEMPLATE
    return tokenizer


class ScriptedClient:
    """Stands in for verl's LLM server client: the case is named in the prompt, the
    reply is that case's next scripted turn."""

    def __init__(self, tokenizer: PreTrainedTokenizerFast) -> None:
        self.tokenizer, self.turns = tokenizer, {}

    async def generate(self, request_id: str, prompt_ids: list[int], **kwargs) -> TokenOutput:
        case = re.search(r"case=(\w+)", self.tokenizer.decode(prompt_ids)).group(1)
        turn = self.turns.get(request_id, 0)
        self.turns[request_id] = turn + 1
        ids = self.tokenizer.encode(SCRIPTS[case][turn], add_special_tokens=False)
        return TokenOutput(token_ids=ids, stop_reason="completed")


class WorkerHandle:
    """A Ray actor handle's ``.compute_score.remote`` for a local RewardLoopWorker."""

    def __init__(self, worker: RewardLoopWorker) -> None:
        self.compute_score = type("M", (), {"remote": staticmethod(worker.compute_score)})


def make_worker(config, tokenizer, manager, stream: bool) -> al.AgentLoopWorker:
    worker = object.__new__(al.AgentLoopWorker)
    worker.config, worker.rollout_config = config, config.actor_rollout_ref.rollout
    worker.llm_client = ScriptedClient(tokenizer)
    worker.tokenizer, worker.processor = tokenizer, None
    worker.hf_model_type, worker.dataset_cls, worker.mm_processor_kwargs = None, None, {}
    worker.distillation_enabled = False
    worker.tools = [FunctionTool(name="convert_units", fn=convert_units,
                                 tool_schema=OpenAIFunctionToolSchema.model_validate(SCHEMA))]
    worker.reward_loop_worker_handles = None
    if stream:
        reward_worker = object.__new__(RewardLoopWorker)
        reward_worker.config, reward_worker.reward_manager = config, manager
        worker.reward_loop_worker_handles = [WorkerHandle(reward_worker)]
    return worker


def main() -> None:
    tokenizer = build_tokenizer()
    config = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            "prompt_length": 256, "response_length": RESPONSE_LENGTH, "temperature": 1.0,
            "top_p": 1.0, "top_k": -1, "calculate_log_probs": False, "full_determinism": False,
            "val_kwargs": {"top_p": 1.0, "top_k": -1, "temperature": 0},
            "agent": {"default_agent_loop": "rewardkit_tool_agent"},
            "multi_turn": {"max_user_turns": 3, "max_assistant_turns": 3,
                           "max_parallel_calls": 2, "max_tool_response_length": 256,
                           "tool_response_truncate_side": "middle", "format": "hermes"}}},
        "data": {},
        "reward": {"custom_reward_function": {"path": "pkg://rewardkit_trainers.rewards.verl",
                                              "name": "compute_score", "reward_kwargs": {}},
                   "reward_manager": {
                       "source": MANAGER_OVERRIDES["reward.reward_manager.source"],
                       "name": MANAGER_OVERRIDES["reward.reward_manager.name"],
                       "module": {"path": MANAGER_OVERRIDES["reward.reward_manager.module.path"],
                                  "name": "custom_reward_manager"}}}})
    # what AgentLoopWorker does with rollout.agent.agent_loop_config_path: here the file
    # `rewardkit train --backend verl` writes
    for entry in OmegaConf.load(sys.argv[1]):
        al._agent_loop_registry[entry.name] = entry
    RolloutTraceConfig.init("p", "e", None, False, None)
    manager = load_reward_manager(config, tokenizer)
    cases = list(SCRIPTS)
    reference_calls = [{"convert_units": {"value": [12], "from_unit": ["km"], "to_unit": ["mi"]}}]
    prompts = DataProto.from_dict(non_tensors={
        "raw_prompt": np.array([[{"role": "user", "content": f"case={c} What is 12 km in miles?"}]
                                for c in cases], dtype=object),
        "data_source": np.array(["tool-use"] * len(cases), dtype=object),
        "reward_model": np.array([{"ground_truth": "7.46"}] * len(cases), dtype=object),
        "extra_info": np.array([{"metadata": json.dumps({"reference_calls": reference_calls,
                                                         "finish_reason": "stop"})}
                                for _ in cases], dtype=object),
        "index": np.arange(len(cases))})
    out = {"cases": cases}
    loop = manager.loop
    streamed = loop.run_until_complete(
        make_worker(config, tokenizer, manager, True).generate_sequences(prompts))
    out["streamed_score"] = streamed.batch["rm_scores"].sum(-1).tolist()
    out["streamed"] = {k: streamed.non_tensor_batch[k].tolist()
                       for k in streamed.meta_info["reward_extra_keys"]}
    out["num_turns"] = streamed.non_tensor_batch["__num_turns__"].tolist()
    batch = loop.run_until_complete(
        make_worker(config, tokenizer, manager, False).generate_sequences(prompts))
    results = loop.run_until_complete(asyncio.gather(
        *[manager.run_single(batch[i:i + 1]) for i in range(len(batch))]))
    rm_scores = manager.assemble_rm_scores(batch, [r["reward_score"] for r in results])
    out["batched_score"] = rm_scores.sum(-1).tolist()
    # where each path put the reward in verl's token-level tensor, and each row's last
    # valid response token: per-turn values have no other place to go
    out["reward_tokens"] = {"streamed": _reward_tokens(streamed, streamed.batch["rm_scores"]),
                            "batched": _reward_tokens(batch, rm_scores)}
    out["trajectories"] = [_trajectory(manager, batch[i:i + 1]) for i in range(len(batch))]
    naive = tokenizer.batch_decode(batch.batch["responses"], skip_special_tokens=True)
    out["text_tool_responses"] = [t.count("<tool_response>") for t in naive]
    out["grpo"] = _grpo(streamed)
    out["mismatch"] = loop.run_until_complete(rebuild_trajectory(  # a record off its tokens
        {"response_mask": [1, 1], "tool_results": []}, [5, 6, 7], tokenizer))
    print("RESULT " + json.dumps(out))


def _reward_tokens(batch: DataProto, rm_scores: torch.Tensor) -> list[dict]:
    """Per row, the response positions holding a non-zero reward and the last valid one."""
    prompt_length = batch.batch["prompts"].size(1)
    valid = batch.batch["attention_mask"][:, prompt_length:].sum(dim=1)
    return [{"nonzero": rm_scores[i].nonzero().flatten().tolist(), "last": int(valid[i]) - 1}
            for i in range(len(batch))]


def _trajectory(manager, row: DataProto) -> dict:
    """The trajectory the manager rebuilt, as compute_score receives it."""
    seen = {}
    compute = manager.compute_score

    def spy(**kwargs):
        seen.update(kwargs["extra_info"][TRAJECTORY])
        return compute(**kwargs)

    manager.compute_score = spy
    try:
        manager.loop.run_until_complete(manager.run_single(row))
    finally:
        manager.compute_score = compute
    return seen


def _grpo(batch: DataProto) -> dict:
    """verl's GRPO advantage from the streamed token rewards (one value at the last
    token), and from per-turn values placed at each assistant turn's last token."""
    mask, rewards = batch.batch["response_mask"], batch.batch["rm_scores"]
    index = np.zeros(len(mask), dtype=object)  # one group: every case answers one prompt
    adv, _ = compute_grpo_outcome_advantage(rewards, mask, index)
    per_turn = torch.zeros_like(rewards)
    for i in range(len(mask)):
        ends = [t for t in range(mask.shape[1]) if mask[i, t] and (
            t + 1 == mask.shape[1] or not mask[i, t + 1])]
        values = torch.full((len(ends),), float(rewards[i].sum()) / len(ends))
        per_turn[i, ends] = values
    adv_turns, _ = compute_grpo_outcome_advantage(per_turn, mask, index)
    first = [int(mask[i].nonzero()[0]) for i in range(len(mask))]
    return {"advantage": [float(adv[i, first[i]]) for i in range(len(mask))],
            "advantage_per_turn": [float(adv_turns[i, first[i]]) for i in range(len(mask))],
            "constant_over_tokens": bool(all(
                torch.unique(adv_turns[i][mask[i].bool()]).numel() == 1
                for i in range(len(mask)))),
            "turn_ends": [int(((per_turn[i] != 0)).sum()) for i in range(len(mask))]}


if __name__ == "__main__":
    sys.exit(main())
