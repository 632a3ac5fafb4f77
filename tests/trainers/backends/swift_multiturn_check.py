"""Run inside .venv-swift: multi-turn tool rollouts through ms-swift's own code, scored by
an exported plugin through ms-swift's own GRPO reward path. Prints one JSON object.

    python swift_multiturn_check.py PLUGIN_FILE WORKDIR FUNC_NAME [FUNC_NAME ...]

What is ms-swift's: the rows become ``GRPOSample``s (``from_row``), the requests
``samples2requests``, the rollout is ``run_multi_turn`` (the colocate driver the GRPO
trainer calls) with a tool-using ``MultiTurnScheduler`` subclass written as a user would
(it acts on ``response_choice.message.tool_calls``), the outputs go back onto the samples
with ``_postprocess_rollout_outputs``, the ORMs come from ``import_external_file`` and
``resolve_reward_funcs``, the ``rewardkit_metrics`` callback is built by the trainer's
``_get_callbacks``, and ``compute_rewards_per_func`` calls the ORMs (before the callback
exists, once as they are and once registered with ``agent_template="hermes"``). The template is
ms-swift's ``qwen`` template with the ``hermes`` agent template, over a byte-level
tokenizer built here (no model is downloaded).

What is scripted: the policy. Each turn's text is fixed per rollout; the response is
made as ms-swift's engines make it: ``token_ids`` from the tokenizer and ``tool_calls``
from the engine's own ``InferEngine._get_toolcall`` (the agent template's parser).
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
from swift.trainers.mixin import SwiftMixin
from swift.utils import import_external_file
from transformers import TrainerState

ROOT = Path(__file__).resolve().parents[3]

try:  # the tool rewards: installed, or from the source tree
    import rewardkit_tools.plugin as tools_plugin
except ImportError:
    sys.path.insert(0, str(ROOT / "plugins" / "rewardkit-tools"))
    import rewardkit_tools.plugin as tools_plugin
from rewardkit import registry  # noqa: E402

if "tool_call_match" not in registry.names():
    tools_plugin.register_rewards(lambda cls: registry.register(cls, "rewardkit-tools"))

plugin, work, names = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]

CALL = ('<tool_call>\n{"name": "convert_units", "arguments": {"value": 12, '
        '"from_unit": "km", "to_unit": "mi"}}\n</tool_call>')
ANSWER = "12 km is about 7.46 miles."
# rollout -> the policy's text per turn (finish reason "stop" unless given)
SCRIPTS: dict[str, list[Any]] = {
    "honest": [CALL, ANSWER],
    "no_call": [ANSWER],
    # "parameters" for "arguments": hermes' parser finds no call, so nothing is executed
    "unparsed_format": [CALL.replace('"arguments"', '"parameters"') + "\n" + ANSWER],
    # the tool refuses the unit; the policy wrote its own success after the call
    "faked_result": [CALL.replace('"km"', '"kilometers"')
                     + "\n<tool_response>\n7.456\n</tool_response>\n" + ANSWER, ANSWER],
    # cut off after the number: zeroed by on_truncated, whatever the stale column says
    "truncated": [CALL, (ANSWER + " To", "length")],
    # ReAct text: hermes' parser falls back to it, the engine reports the call, it runs
    "react": ['Action: convert_units\nAction Input: {"value": 12, "from_unit": "km", '
              '"to_unit": "mi"}\n', ANSWER],
    # max_turns (3) ends the rollout on a call never run: ms-swift's finish reason says
    # "stop" (the turn ended on its end of sequence), the answer beside the call unpaid
    "cut_call": [CALL, CALL, ANSWER + "\n" + CALL],
    # no call, cut at the length budget in the answer
    "rambles": [(ANSWER + " and so on and so on", "length")],
}
TOOLS = [
    {"type": "function", "function": {
        "name": "convert_units", "description": "Convert a value between units.",
        "parameters": {"type": "object", "required": ["value", "from_unit", "to_unit"],
                       "properties": {"value": {"type": "number"},
                                      "from_unit": {"type": "string", "enum": ["km", "mi"]},
                                      "to_unit": {"type": "string", "enum": ["km", "mi"]},
                                      "precision": {"type": "integer"}}}}},
    {"type": "function", "function": {
        "name": "calculate", "description": "Evaluate an arithmetic expression.",
        "parameters": {"type": "object", "required": ["expression"],
                       "properties": {"expression": {"type": "string"}}}}},
]
REFERENCE_CALLS = [{"convert_units": {"value": [12], "from_unit": ["km"], "to_unit": ["mi"],
                                      "precision": ["", 2, 3]}}]


def convert_units(value: float, from_unit: str, to_unit: str, precision: int = 3) -> str:
    factors = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344}
    if (from_unit, to_unit) not in factors:
        return json.dumps({"error": f"cannot convert {from_unit} to {to_unit}"})
    return str(round(value * factors[from_unit, to_unit], precision))


class UnitsToolScheduler(MultiTurnScheduler):
    """A user's tool scheduler: runs the calls ms-swift's engine parsed, answers each
    with a ``tool`` message, and ends the rollout on a turn without calls."""

    def check_finished(self, infer_request, response_choice, current_turn) -> bool:
        if not response_choice.message.tool_calls:
            return True
        return super().check_finished(infer_request, response_choice, current_turn)

    def step(self, infer_request, response_choice, current_turn) -> dict:
        for call in response_choice.message.tool_calls:
            args = json.loads(call.function.arguments)
            result = convert_units(**args) if call.function.name == "convert_units" \
                else json.dumps({"error": f"unknown tool {call.function.name}"})
            infer_request.messages.append({"role": "tool", "content": result})
        return {"infer_request": infer_request}


class ToolCallRoleScheduler(UnitsToolScheduler):
    """Records each call the engine parsed as a ``tool_call`` message (ms-swift's dataset
    role for a call, which its template folds into the assistant turn) before its result."""

    def step(self, infer_request, response_choice, current_turn) -> dict:
        for call in response_choice.message.tool_calls:
            infer_request.messages.append({"role": "tool_call", "content": json.dumps(
                {"name": call.function.name,
                 "arguments": json.loads(call.function.arguments)})})
        return super().step(infer_request, response_choice, current_turn)


class InlineResultScheduler(UnitsToolScheduler):
    """The continuation style of ms-swift's example tool scheduler: the tool's result is
    appended to the assistant's own message, and the policy continues inside it."""

    def step(self, infer_request, response_choice, current_turn) -> dict:
        text = "\n" + convert_units(12, "km", "mi") + "\n"
        infer_request.messages[-1]["content"] += text
        ids = list(response_choice.token_ids) + self.tokenizer.encode(
            text, add_special_tokens=False)
        mask = [1] * len(response_choice.token_ids) + [0] * (len(ids) - len(
            response_choice.token_ids))
        return {"infer_request": infer_request, "response_token_ids": ids,
                "response_loss_mask": mask}


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


def scripted_rollout(template: Any, turns: dict[str, int], with_ids: bool = True):
    """``rollout_fn`` for run_multi_turn: the scripted text of each request's next turn,
    as an engine returns it (token ids unless ``with_ids`` is False, the engine's own
    tool-call parse)."""
    engine = SimpleNamespace(template=template)

    def rollout(requests: list, config: RequestConfig) -> list[RolloutOutput]:
        outputs = []
        for request in requests:
            script = SCRIPTS[request.uuid.split("#")[0]]
            step = script[turns.get(request.uuid, 0)]
            turns[request.uuid] = turns.get(request.uuid, 0) + 1
            text, finish = step if isinstance(step, tuple) else (step, "stop")
            choice = ChatCompletionResponseChoice(
                index=0, finish_reason=finish,
                message=ChatMessage(role="assistant", content=text,
                                    tool_calls=InferEngine._get_toolcall(engine, text)),
                token_ids=template.tokenizer.encode(text, add_special_tokens=False)
                if with_ids else None)
            outputs.append(RolloutOutput(response=ChatCompletionResponse(
                model="scripted", choices=[choice], usage=UsageInfo(0, 0, 0))))
        return outputs

    return rollout


#: a prompt that already holds the right call and its result (dataset history)
HISTORY = [{"role": "assistant", "content": CALL}, {"role": "tool", "content": "7.456"}]
#: the same history in ms-swift's dataset form: the call as a ``tool_call`` message
HISTORY_TOOL_CALL_ROLE = [
    {"role": "tool_call", "content": CALL.split("\n")[1]},
    {"role": "tool_response", "content": "7.456"}]


def rollout_samples(template: Any, scheduler_cls: type, rollouts: list[str],
                    history: list | None = None, with_ids: bool = True) -> list:
    rows = [{"messages": [{"role": "system", "content": "Answer with the tools."},
                          {"role": "user", "content": "What is 12 km in miles?"},
                          *[dict(m) for m in history or ()]],
             "tools": TOOLS, "solution": "7.46",
             "reference_calls": json.dumps(REFERENCE_CALLS),
             # a stale column from some recorded rollout: the run's own finish reason wins
             "truncated": False,
             # a column per batch: the shared scorer reuses the result of a batch whose
             # prompts and final texts are the same as the last one's
             "case": f"{scheduler_cls.__name__} {history is not None} {with_ids}",
             "prompt_id": "p0", "request_id": f"{name}#{scheduler_cls.__name__}"}
            for name in rollouts]
    samples = [GRPOSample.from_row(row) for row in rows]
    scheduler = scheduler_cls(max_turns=3, tokenizer=template.tokenizer, template=template)
    trainer = SimpleNamespace(args=SimpleNamespace(vllm_server_pass_dataset=False),
                              multi_turn_scheduler=scheduler, dynamic_num_samples=False,
                              async_generate=False)
    requests = RolloutTrainerMixin.samples2requests(trainer, samples)
    invoke_async_hook(scheduler.on_trajectory_start(requests))
    rollout = scripted_rollout(template, {}, with_ids)
    config = RequestConfig()
    outputs = run_multi_turn(requests, rollout(requests, config), scheduler, rollout, config,
                             max_turns=3)
    return RolloutTrainerMixin._postprocess_rollout_outputs(trainer, samples, outputs)


def score(samples: list, funcs: list) -> list[list[float | None]]:
    state = TrainerState()
    rewards = compute_rewards_per_func(samples, funcs, None, torch.device("cpu"),
                                       trainer_state=state)
    return [[None if v != v else round(v, 6) for v in row] for row in rewards.tolist()]


def passed(sample: Any) -> dict[str, Any]:
    """What ms-swift hands the ORMs for a row (messages with each content's type)."""
    row = sample.to_reward_row()
    return {"roles": [m["role"] for m in row["messages"]],
            "content_types": [type(m["content"]).__name__ for m in row["messages"]],
            "finish_reason": row["finish_reason"], "is_truncated": row["is_truncated"],
            "rollout_infos": row["rollout_infos"], "tools": bool(row.get("tools"))}


module = import_external_file(plugin)
funcs, func_names = resolve_reward_funcs(names, args=None)
# the same components with a parser named in the plugin file (no trainer template, so no
# tokenizer): instances of their own, made before the names are registered again
from rewardkit_trainers.rewards.swift import register_orms  # noqa: E402

named = [cls() for cls in register_orms(module.CONFIG, agent_template="hermes").values()]
template = build_template(work / "tokenizer")
rollouts = list(SCRIPTS)
tool_samples = rollout_samples(template, UnitsToolScheduler, rollouts)
inline = rollout_samples(template, InlineResultScheduler, ["honest"])
out: dict[str, Any] = {
    "func_names": func_names, "rollouts": rollouts, "inline_passed": passed(inline[0]),
    "passed": {n: passed(s) for n, s in zip(rollouts, tool_samples, strict=True)}}
out["without_callback"] = score(tool_samples, funcs)  # no trainer template handed over
out["agent_template_named"] = score(tool_samples, named)
trainer = SimpleNamespace(template=template)
SwiftMixin._get_callbacks(trainer, SimpleNamespace(callbacks=["rewardkit_metrics"]))
out["rewards"] = score(tool_samples, funcs)
out["inline"] = score(inline, funcs)
# prompts holding assistant history, with and without the engine's token ids
variants = {"ids": (HISTORY, True), "no_ids": (HISTORY, False), "plain_no_ids": (None, False),
            "tool_call_role_no_ids": (HISTORY_TOOL_CALL_ROLE, False)}
out["history_rollouts"] = ["no_call", "honest"]
for key, (history, with_ids) in variants.items():
    got = rollout_samples(template, UnitsToolScheduler, out["history_rollouts"], history,
                          with_ids)
    out["history_passed_" + key] = passed(got[0])
    out["history_" + key] = score(got, funcs)
# calls recorded as ``tool_call`` messages inside the generated turns
tool_call_role = rollout_samples(template, ToolCallRoleScheduler, rollouts)
out["tool_call_role_passed"] = passed(tool_call_role[0])
out["tool_call_role"] = score(tool_call_role, funcs)
print("RESULT " + json.dumps(out))
