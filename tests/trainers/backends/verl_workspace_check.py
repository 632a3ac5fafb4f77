"""Run inside .venv-verl: a tool's workspace reaches workspace_criteria through verl's own
agent loop and reward loop. Prints one JSON object.

    REWARDKIT_CONFIG=rewards.yaml python verl_workspace_check.py WORKDIR

What is verl's: ``AgentLoopWorker.generate_sequences`` runs rewardkit's tool agent loop
(verl's ``ToolAgentLoop`` plus its record) with a stateful ``BaseTool`` written as a user
would: ``execute`` writes into a folder of the trajectory's own and records it in
``agent_data.extra_fields["workspace"]``; the worker streams each finished rollout to a
``RewardLoopWorker`` (the manager rewardkit train selects, calling ``compute_score``),
which gets the loop's ``extra_fields`` merged into ``extra_info``. What is scripted: the
policy's text per turn (a stand-in LLM client, as verl_multiturn_check.py does it).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf
from tokenizers import ByteLevelBPETokenizer
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.experimental.agent_loop import agent_loop as al
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
from verl.trainer.ppo.reward import load_reward_manager
from verl.utils.rollout_trace import RolloutTraceConfig
from verl.workers.rollout.replica import TokenOutput

ROOT = Path(__file__).resolve().parents[3]
for where in ("sandbox", "plugins/rewardkit-workspace"):  # not installed in .venv-verl
    sys.path.insert(0, str(ROOT / where))
import rewardkit_workspace.plugin as workspace_plugin  # noqa: E402
from rewardkit_trainers.launch.verl import AGENT_LOOP, AGENT_LOOP_TARGET  # noqa: E402
from rewardkit_trainers.rewards.verl import MANAGER_OVERRIDES  # noqa: E402

from rewardkit import registry  # noqa: E402

if "workspace_criteria" not in registry.names():
    workspace_plugin.register_rewards(
        lambda cls: registry.register(cls, "rewardkit-workspace"))

WORK = Path(sys.argv[1])
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
END = "<|im_end|>"


def call(path: str, content: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "write_file", "arguments": {
        "path": path, "content": content}}) + "\n</tool_call>" + END


SCRIPTS = {
    "writes": [call("answer.txt", "42"), "Done." + END],
    "says": ["The answer is 42; I wrote it to answer.txt." + END],
    "wrong": [call("answer.txt", "41"), "Done." + END],
    "escapes": [call("../answer.txt", "42"), "Done." + END],
}
SCHEMA = {"type": "function", "function": {
    "name": "write_file", "description": "Write a text file into the workspace.",
    "parameters": {"type": "object", "required": ["path", "content"],
                   "properties": {"path": {"type": "string"},
                                  "content": {"type": "string"}}}}}


class FolderTool(BaseTool):
    """A stateful verl tool: writes into the trajectory's own folder (a path leading out
    is refused) and records the folder in the agent loop's ``extra_fields``."""

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
                      ) -> tuple[ToolResponse, float, dict]:
        agent_data = kwargs["agent_data"]
        root = (WORK / "workspaces" / agent_data.request_id).resolve()
        root.mkdir(parents=True, exist_ok=True)
        agent_data.extra_fields["workspace"] = str(root)
        target = (root / parameters["path"]).resolve()
        if root not in target.parents:
            return ToolResponse(text=f"{parameters['path']} is outside the workspace"), 0.0, {}
        target.write_text(parameters["content"])
        return ToolResponse(text="written"), 0.0, {}


def build_tokenizer() -> PreTrainedTokenizerFast:
    corpus = [json.dumps(SCHEMA), TEMPLATE, *[t for s in SCRIPTS.values() for t in s],
              "case=writes says wrong escapes written outside the workspace"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus * 4, vocab_size=500,
                            special_tokens=["<|endoftext|>", "<|im_start|>", END])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token=END,
                                        pad_token="<|endoftext|>")
    tokenizer.chat_template = TEMPLATE
    return tokenizer


class ScriptedClient:
    """Stands in for verl's LLM server client: the case named in the prompt, its next turn."""

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


def main() -> None:
    tokenizer = build_tokenizer()
    config = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            "prompt_length": 256, "response_length": 256, "temperature": 1.0,
            "top_p": 1.0, "top_k": -1, "calculate_log_probs": False, "full_determinism": False,
            "val_kwargs": {"top_p": 1.0, "top_k": -1, "temperature": 0},
            "agent": {"default_agent_loop": AGENT_LOOP},
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
    al._agent_loop_registry[AGENT_LOOP] = OmegaConf.create(
        {"name": AGENT_LOOP, "_target_": AGENT_LOOP_TARGET})
    RolloutTraceConfig.init("p", "e", None, False, None)
    manager = load_reward_manager(config, tokenizer)
    worker = object.__new__(al.AgentLoopWorker)
    worker.config, worker.rollout_config = config, config.actor_rollout_ref.rollout
    worker.llm_client = ScriptedClient(tokenizer)
    worker.tokenizer, worker.processor = tokenizer, None
    worker.hf_model_type, worker.dataset_cls, worker.mm_processor_kwargs = None, None, {}
    worker.distillation_enabled = False
    worker.tools = [FolderTool({}, OpenAIFunctionToolSchema.model_validate(SCHEMA))]
    reward_worker = object.__new__(RewardLoopWorker)
    reward_worker.config, reward_worker.reward_manager = config, manager
    worker.reward_loop_worker_handles = [WorkerHandle(reward_worker)]
    cases = list(SCRIPTS)
    prompts = DataProto.from_dict(non_tensors={
        "raw_prompt": np.array([[{"role": "user", "content": f"case={c} Write 6 times 7 "
                                  "into answer.txt."}] for c in cases], dtype=object),
        "data_source": np.array(["agent"] * len(cases), dtype=object),
        "reward_model": np.array([{"ground_truth": "42"}] * len(cases), dtype=object),
        "extra_info": np.array([{} for _ in cases], dtype=object),
        "index": np.arange(len(cases))})
    out = manager.loop.run_until_complete(worker.generate_sequences(prompts))
    print("RESULT " + json.dumps({
        "cases": cases, "score": out.batch["rm_scores"].sum(-1).tolist(),
        "extra": {k: out.non_tensor_batch[k].tolist()
                  for k in out.meta_info["reward_extra_keys"]},
        "workspaces": ([None if w is None else str(w)
                        for w in out.non_tensor_batch["workspace"].tolist()]
                       if "workspace" in out.non_tensor_batch else None),
        "outside": (WORK / "workspaces" / "answer.txt").exists()}))


if __name__ == "__main__":
    sys.exit(main())
