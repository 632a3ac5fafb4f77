"""Run inside .venv-swift: a multi-turn scheduler's workspace reaches workspace_criteria
through ms-swift's own rollout and reward code. Prints one JSON object.

    python swift_workspace_check.py PLUGIN_FILE WORKDIR FUNC_NAME

What is ms-swift's: ``GRPOSample.from_row``, ``samples2requests``, ``run_multi_turn`` with a
``MultiTurnScheduler`` subclass written as a user would (``step`` runs the parsed
``write_file`` calls in a folder of the rollout's own; ``on_turn_end`` reports the folder
as ``rollout_infos``), ``_postprocess_rollout_outputs``, ``import_external_file`` /
``resolve_reward_funcs`` for the exported ORM and ``compute_rewards_per_func`` calling it.
What is scripted: the policy's text per turn (as swift_multiturn_check.py does it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from swift.infer_engine import InferEngine
from swift.infer_engine.protocol import (
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatMessage,
    RequestConfig,
    RolloutOutput,
    UsageInfo,
)
from swift.rl_core.data import GRPOSample
from swift.rl_core.grpo_algorithm import compute_rewards_per_func
from swift.rlhf_trainers.rollout_mixin import RolloutTrainerMixin
from swift.rlhf_trainers.utils import resolve_reward_funcs
from swift.rollout import MultiTurnScheduler, invoke_async_hook, run_multi_turn
from swift.utils import import_external_file
from transformers import TrainerState

ROOT = Path(__file__).resolve().parents[3]
for where in ("sandbox", "plugins/rewardkit-workspace"):  # not installed in .venv-swift
    sys.path.insert(0, str(ROOT / where))
import rewardkit_workspace.plugin as workspace_plugin  # noqa: E402

from rewardkit import registry  # noqa: E402

if "workspace_criteria" not in registry.names():
    workspace_plugin.register_rewards(
        lambda cls: registry.register(cls, "rewardkit-workspace"))

plugin, work, names = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + \
        "\n</tool_call>"


#: rollout -> the policy's text per turn
SCRIPTS: dict[str, list[str]] = {
    "writes": [call("write_file", path="answer.txt", content="42"), "Done."],
    "says": ["The answer is 42; I wrote it to answer.txt."],
    "wrong": [call("write_file", path="answer.txt", content="41"), "Done."],
    "escapes": [call("write_file", path="../answer.txt", content="42"), "Done."],
}
TOOLS = [{"type": "function", "function": {
    "name": "write_file", "description": "Write a text file into the workspace.",
    "parameters": {"type": "object", "required": ["path", "content"],
                   "properties": {"path": {"type": "string"},
                                  "content": {"type": "string"}}}}}]
ROOTDIR = work / "workspaces"


class FolderScheduler(MultiTurnScheduler):
    """A user's scheduler: each trajectory works in its own folder; ``write_file`` calls
    write into it (a path leading out is refused), and every turn reports the folder."""

    def folder(self, infer_request: Any) -> Path:
        path = ROOTDIR / infer_request.uuid.split("#")[0]
        path.mkdir(parents=True, exist_ok=True)
        return path

    def check_finished(self, infer_request, response_choice, current_turn) -> bool:
        if not response_choice.message.tool_calls:
            return True
        return super().check_finished(infer_request, response_choice, current_turn)

    async def on_turn_end(self, infer_request, response_choice, current_turn) -> dict:
        return {"rollout_infos": {"workspace": str(self.folder(infer_request))}}

    def step(self, infer_request, response_choice, current_turn) -> dict:
        root = self.folder(infer_request).resolve()
        for tool_call in response_choice.message.tool_calls:
            args = json.loads(tool_call.function.arguments)
            target = (root / args["path"]).resolve()
            if root not in target.parents:
                result = json.dumps({"error": f"{args['path']} is outside the workspace"})
            else:
                target.write_text(args["content"])
                result = "written"
            infer_request.messages.append({"role": "tool", "content": result})
        return {"infer_request": infer_request}


def build_template(where: Path) -> Any:
    """ms-swift's qwen template (hermes tool calls) over a byte-level tokenizer."""
    import transformers
    from swift.model import get_processor
    from swift.template import get_template
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                                pad_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": [
        "<|endoftext|>", "<|im_start|>", "<|im_end|>"]})
    fast.save_pretrained(where)
    transformers.Qwen2Config(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                             num_attention_heads=2, num_key_value_heads=1,
                             vocab_size=len(fast)).save_pretrained(where)
    processor = get_processor(str(where), model_type="qwen2", download_model=False)
    return get_template(processor, template_type="qwen", agent_template="hermes")


def scripted_rollout(template: Any) -> Any:
    engine = SimpleNamespace(template=template)
    turns: dict[str, int] = {}

    def rollout(requests: list, config: RequestConfig) -> list[RolloutOutput]:
        outputs = []
        for request in requests:
            script = SCRIPTS[request.uuid.split("#")[0]]
            text = script[turns.get(request.uuid, 0)]
            turns[request.uuid] = turns.get(request.uuid, 0) + 1
            choice = ChatCompletionResponseChoice(
                index=0, finish_reason="stop",
                message=ChatMessage(role="assistant", content=text,
                                    tool_calls=InferEngine._get_toolcall(engine, text)),
                token_ids=template.tokenizer.encode(text, add_special_tokens=False))
            outputs.append(RolloutOutput(response=ChatCompletionResponse(
                model="scripted", choices=[choice], usage=UsageInfo(0, 0, 0))))
        return outputs

    return rollout


template = build_template(work / "tokenizer")
rows = [{"messages": [{"role": "user", "content": "Write the answer to 6 times 7 into "
                                                  "answer.txt."}],
         "tools": TOOLS, "solution": "42", "prompt_id": "p0", "request_id": f"{name}#0"}
        for name in SCRIPTS]
samples = [GRPOSample.from_row(row) for row in rows]
scheduler = FolderScheduler(max_turns=3, tokenizer=template.tokenizer, template=template)
trainer = SimpleNamespace(args=SimpleNamespace(vllm_server_pass_dataset=False),
                          multi_turn_scheduler=scheduler, dynamic_num_samples=False,
                          async_generate=False)
requests = RolloutTrainerMixin.samples2requests(trainer, samples)
invoke_async_hook(scheduler.on_trajectory_start(requests))
rollout = scripted_rollout(template)
config = RequestConfig()
outputs = run_multi_turn(requests, rollout(requests, config), scheduler, rollout, config,
                         max_turns=3)
samples = RolloutTrainerMixin._postprocess_rollout_outputs(trainer, samples, outputs)
import_external_file(plugin)
funcs, func_names = resolve_reward_funcs(names, args=None)
rewards = compute_rewards_per_func(samples, funcs, None, torch.device("cpu"),
                                   trainer_state=TrainerState())
print("RESULT " + json.dumps({
    "rollouts": list(SCRIPTS), "func_names": func_names,
    "rollout_infos": [s.to_reward_row()["rollout_infos"] for s in samples],
    "rewards": [[None if v != v else v for v in row] for row in rewards.tolist()],
    "outside": (ROOTDIR / "answer.txt").exists()}))
