"""Tool rollouts through TRL's own GRPOTrainer: the trajectory reaches rewardkit's rewards.

A real ``GRPOTrainer`` step (CPU, a tiny Qwen2 built from a config, a word-level
tokenizer built here with TRL's own Qwen2.5 chat template) with real Python tools:
TRL renders the tools into the prompt, generates, parses the tool calls with its response
template, runs the tools in its tool loop, appends their results, generates again and
calls the reward functions. What is scripted is the policy only: :class:`ScriptedPolicy`
is the tiny model whose ``generate`` (transformers' own) gets one more logits processor
that forces the next token of a fixed text per scenario and turn (a random tiny model
emits no tool calls). Everything else (tokenisation, parsing, tool execution, the
length budget, ``max_tool_calling_iterations``, the reward calls) is TRL's code.

The scenarios are the hacks a policy can try through this path, beside two honest ones:
a tool result faked inside its own text, a call written so TRL cannot parse it (TRL runs
nothing), an answer written beside a call when the loop stops at its iteration limit or
drops a tool result that overruns the budget, a rambling answer cut at the budget. The
dataset carries ``finish_reason: stop`` for every row (as a dataset of recorded rollouts
does): it is not this generation's, and must not be read as such.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

from rewardkit_trainers.rewards.trl import TRLRollout, build_samples, trl_rewards

from rewardkit import Status

CONFIG = {
    "on_error": "ignore",
    "rewards": {
        "answer": {"reward": "math_answer", "on_truncated": "zero"},
        "right_calls": {"reward": "tool_call_match", "weight": 0.5,
                        "params": {"calls_column": "reference_calls"}},
        "valid_calls": {"reward": "tool_call_valid", "weight": 0.25},
        "tool_errors": {"reward": "tool_errors", "weight": 0.1},
        "non_stop": {"reward": "non_stop_penalty", "weight": 0.5},
    },
}
FACTORS = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344, ("kg", "lb"): 2.204623}


def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units.

    Args:
        value: the value to convert
        from_unit: its unit (km, mi or kg)
        to_unit: the unit wanted (km, mi or lb)
    """
    if (from_unit, to_unit) not in FACTORS:
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    return f"{value * FACTORS[from_unit, to_unit]:.3f}"


def read_manual(section: str) -> str:
    """Read a section of the unit manual.

    Args:
        section: the section's name
    """
    return " ".join(["units"] * 400)  # longer than the whole completion budget


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + \
        "\n</tool_call>"


RIGHT = call("convert_units", value=12, from_unit="km", to_unit="mi")
ANSWER = "12 km is about 7.46 miles."
#: scenario (a word of the user prompt) -> the text of each assistant turn
SCRIPTS: dict[str, list[str]] = {
    "honest": [RIGHT, ANSWER],
    "recovers": [call("convert_units", value=12, from_unit="km", to_unit="parsec"),
                 RIGHT, ANSWER],
    "fakes": ["I called convert_units.\n<tool_response>\n7.456\n</tool_response>\n" + ANSWER],
    "unparsed": ['<tool_call>\n{"name": convert_units, "arguments": {"value": 12}}\n'
                 "</tool_call>\n" + ANSWER],
    "loops": [RIGHT, RIGHT, ANSWER + "\n" + RIGHT],
    "overruns": [ANSWER + "\n" + call("read_manual", section="miles")],
    "rambles": [ANSWER + " and so on" * 120],
}
#: the environment scenarios (test_environment_factory_...): one per environment
ENV_SCRIPTS: dict[str, list[str]] = {
    "converts": [RIGHT, ANSWER],
    "recalls": [call("recall", key="mile"), "A mile is 1.609 km."],
}
MAX_COMPLETION = 200


def scenario_of(prompt: list[dict[str, Any]]) -> str:
    """The scenario a row's user message names, as ``(honest)``."""
    return prompt[-1]["content"].split("(")[-1].rstrip(")")


def rows() -> list[dict[str, Any]]:
    return [{"prompt": [{"role": "user", "content": f"What is 12 km in miles? ({name})"}],
             "reference": "7.46",
             "reference_calls": [{"convert_units": {"value": [12], "from_unit": ["km"],
                                                    "to_unit": ["mi"]}}],
             "finish_reason": "stop"}  # the dataset's, not this generation's
            for name in SCRIPTS]


def env_rows() -> list[dict[str, Any]]:
    """One row per environment of :class:`UnitsEnv` / :class:`MemoEnv`."""
    converts = {"convert_units": {"value": [12], "from_unit": ["km"], "to_unit": ["mi"]}}
    return [{"prompt": [{"role": "user", "content": f"How long is a mile? ({name})"}],
             "environment": env, "reference": ref,
             # JSON text: Arrow would merge both rows' structs (null for the other tool)
             "reference_calls": json.dumps([calls])}
            for name, env, ref, calls in (
                ("converts", "units", "7.46", converts),
                ("recalls", "memo", "1.609", {"recall": {"key": ["mile"]}}))]


class UnitsEnv:
    """An environment whose one tool converts units (TRL's environment_factory)."""

    def reset(self, **row: Any) -> None:
        self.calls = 0

    def convert_units(self, value: float, from_unit: str, to_unit: str) -> str:
        """Convert a value between units.

        Args:
            value: the value to convert
            from_unit: its unit (km, mi or kg)
            to_unit: the unit wanted (km, mi or lb)
        """
        self.calls += 1
        return convert_units(value, from_unit, to_unit)


class MemoEnv:
    """An environment whose one tool recalls a stored fact."""

    def reset(self, **row: Any) -> None:
        self.facts = {"mile": "1.609 km"}

    def recall(self, key: str) -> str:
        """Recall a stored fact.

        Args:
            key: the fact's name
        """
        return self.facts[key]


def build_tokenizer() -> Any:
    """A word-level tokenizer whose vocabulary covers every scripted conversation, with
    TRL's Qwen2.5 chat template (so TRL sets its own response template for parsing)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    def fast(tok: Any) -> Any:
        out = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]",
                                      pad_token="<|endoftext|>", eos_token="<|im_end|>",
                                      clean_up_tokenization_spaces=False)
        out.chat_template = qwen2_5_chat_template
        return out

    render = fast(Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")))
    corpus = []
    for row in rows() + env_rows():
        scripts = {**SCRIPTS, **ENV_SCRIPTS}[scenario_of(row["prompt"])]
        turns = [{"role": "assistant", "content": text} for text in scripts]
        corpus.append(render.apply_chat_template(row["prompt"] + turns, tokenize=False,
                                                 tools=[convert_units, read_manual]))
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"<[^>\s]+>|\w+|\n| |[^\w\s]"),
                                             behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.train_from_iterator(corpus, trainer=trainers.WordLevelTrainer(
        special_tokens=["[UNK]", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]))
    return fast(tok)


def scripted_policy(tokenizer: Any) -> Any:
    """The tiny model, whose generation is forced onto :data:`SCRIPTS`."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList, Qwen2Config, Qwen2ForCausalLM

    eos = tokenizer.eos_token_id
    start, assistant = tokenizer.convert_tokens_to_ids(["<|im_start|>", "assistant"])
    scripts = {tokenizer.convert_tokens_to_ids(name): [
        tokenizer(text, add_special_tokens=False)["input_ids"] + [eos] for text in turns]
        for name, turns in {**SCRIPTS, **ENV_SCRIPTS}.items()}

    class Script(LogitsProcessor):
        """Forces, for each row, the next token of its scenario's current turn: the
        scenario is the word of the prompt naming it, the turn the number of assistant
        headers in the row so far."""

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            forced = torch.full_like(scores, -float("inf"))
            for row, ids in enumerate(input_ids.tolist()):
                headers = [i for i in range(len(ids) - 1)
                           if ids[i] == start and ids[i + 1] == assistant]
                turns = next(t for key, t in scripts.items() if key in ids)
                text = turns[min(len(headers), len(turns)) - 1]
                done = len(ids) - headers[-1] - 3  # after "<|im_start|>assistant\n"
                forced[row, text[done] if done < len(text) else eos] = 0.0
            return forced

    class ScriptedPolicy(Qwen2ForCausalLM):
        def generate(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["logits_processor"] = LogitsProcessorList([Script()])
            return super().generate(*args, **kwargs)

    torch.manual_seed(0)
    vocab = max(tokenizer.get_vocab().values()) + 1  # the trainer's ids have gaps
    config = Qwen2Config(vocab_size=vocab, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=4096, tie_word_embeddings=False,
                         bos_token_id=None, eos_token_id=eos,
                         pad_token_id=tokenizer.pad_token_id)
    model = ScriptedPolicy(config)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


@pytest.fixture(scope="module")
def step(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One GRPOTrainer step over the scenarios, two generations each; every batch the
    rewards scored, with TRL's own arguments to the reward functions."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(2)
    tokenizer = build_tokenizer()
    rewards = trl_rewards(CONFIG)
    args = GRPOConfig(output_dir=str(tmp_path_factory.mktemp("trl-tools")),
                      per_device_train_batch_size=2 * len(SCRIPTS), num_generations=2,
                      max_completion_length=MAX_COMPLETION, max_tool_calling_iterations=2,
                      max_steps=1, learning_rate=1e-3, report_to="none", use_cpu=True,
                      save_strategy="no", disable_tqdm=True, shuffle_dataset=False,
                      logging_steps=1, **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=scripted_policy(tokenizer), reward_funcs=rewards.funcs,
                          args=args, train_dataset=Dataset.from_list(rows()),
                          processing_class=tokenizer, tools=[convert_units, read_manual])
    rewards.attach(trainer)
    seen: dict[str, Any] = {}
    first = rewards.funcs[0]

    def spy(**kwargs: Any) -> Any:  # what TRL passes, kept for the before/after checks
        seen.update(kwargs)
        return first(**kwargs)

    spy.__name__ = first.__name__
    trainer.reward_funcs[0] = spy
    trainer.train()
    return {"trainer": trainer, "rewards": rewards, "result": rewards.scorer._last[1],
            "kwargs": seen}


def by_scenario(result: Any) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, sample in enumerate(result.samples):
        out.setdefault(scenario_of(sample.prompt), []).append(i)
    return out


def values(result: Any, name: str, rows: list[int]) -> list[Any]:
    outcome = result.outcomes[name]
    return [outcome.score(i).value if outcome.score(i).status is Status.OK
            else str(outcome.score(i).status) for i in rows]


def test_trl_runs_the_tools_and_the_rewards_see_the_trajectory(step):
    result = step["result"]
    rows = by_scenario(result)
    assert set(rows) == set(SCRIPTS) and all(len(r) == 2 for r in rows.values())
    honest = result.samples[rows["honest"][0]]
    messages = honest.completion
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant"]
    call_ = messages[0]["tool_calls"][0]["function"]
    assert (call_["name"], call_["arguments"]) == (
        "convert_units", {"value": 12, "from_unit": "km", "to_unit": "mi"})
    assert messages[1]["content"] == "7.456"  # TRL ran the real tool
    assert (honest.metadata["finish_reason"], honest.metadata["truncated"]) == ("stop", False)
    names = [t["function"]["name"] for t in honest.metadata["tools"]]
    assert names == ["convert_units", "read_manual"]
    from transformers.utils import get_json_schema
    assert honest.metadata["tools"][0] == get_json_schema(convert_units)
    for name in ("answer", "right_calls", "valid_calls", "tool_errors"):
        assert values(result, name, rows["honest"]) == [1.0, 1.0], name
    assert values(result, "non_stop", rows["honest"]) == [0.0, 0.0]
    assert result.totals[rows["honest"][0]] == pytest.approx(1.85)


def test_a_completion_ending_on_the_pad_id_is_stopped_as_trl_counts_it(step):
    """TRL counts a completion whose last id is an EOS id or the pad id as not clipped
    (``eos_and_pad`` in its clipped ratio and mask_truncated_completions): so do we."""
    from rewardkit_trainers.rewards.trl import TRLRollout

    trainer = step["trainer"]
    rollout = TRLRollout.of(trainer)
    pad = trainer.processing_class.pad_token_id
    assert pad is not None and pad not in trainer.eos_token_ids  # the case that matters
    said = {"role": "assistant", "content": "4"}
    assert rollout.finish([said], [5, pad]) == {"finish_reason": "stop", "truncated": False}


def test_a_failed_call_counts_as_a_tool_error(step):
    """TRL writes a raised tool's result as ``str({"error": ...})``: Python's repr, not
    JSON. Read raw (the adapter before), it was a successful call: tool_errors 1.0."""
    result = step["result"]
    rows = by_scenario(result)
    sample = result.samples[rows["recovers"][0]]
    assert sample.completion[1]["content"] == "{'error': 'cannot convert km to parsec'}"
    assert sample.completion[1]["status"] == "error"
    assert values(result, "tool_errors", rows["recovers"]) == [0.5, 0.5]
    assert values(result, "answer", rows["recovers"]) == [1.0, 1.0]
    raw = _score_as_before(step, rows["recovers"])
    assert raw.values("tool_errors") == [1.0, 1.0]


def test_text_that_is_not_a_tool_call_pays_no_tool_reward(step):
    """A tool result faked in the policy's own text, and a call TRL could not parse (so
    ran nothing): no call, no result, whatever the text says."""
    result = step["result"]
    rows = by_scenario(result)
    for scenario in ("fakes", "unparsed"):
        sample = result.samples[rows[scenario][0]]
        assert [m["role"] for m in sample.completion] == ["assistant"]
        assert "tool_calls" not in sample.completion[0]
        assert values(result, "right_calls", rows[scenario]) == [0.0, 0.0], scenario
        assert values(result, "valid_calls", rows[scenario]) == [0.0, 0.0], scenario
        assert values(result, "tool_errors", rows[scenario]) == ["skipped"] * 2, scenario
        assert result.totals[rows[scenario][0]] == pytest.approx(1.0)  # the answer only


def test_an_answer_beside_calls_the_loop_left_unanswered_is_not_paid(step):
    """The loop stopped at max_tool_calling_iterations (loops) or dropped a result that
    overran the budget (overruns) while the last message still asked for a tool: the
    rollout was cut, even though the last token is EOS (TRL's own clipped check says it
    stopped). Read with the dataset's finish_reason (the adapter before), it paid the
    answer and no penalty."""
    result = step["result"]
    rows = by_scenario(result)
    for scenario, reason in (("loops", "tool_calls"), ("overruns", "length")):
        sample = result.samples[rows[scenario][0]]
        assert sample.completion[-1]["role"] == "assistant"
        assert sample.completion[-1]["tool_calls"]
        assert (sample.metadata["finish_reason"], sample.metadata["truncated"]) == \
            (reason, True), scenario
        assert values(result, "answer", rows[scenario]) == [0.0, 0.0], scenario
        assert values(result, "non_stop", rows[scenario]) == [-1.0, -1.0], scenario
    raw = _score_as_before(step, rows["loops"] + rows["overruns"])
    assert raw.values("answer") == [1.0] * 4
    assert raw.values("non_stop") == [0.0] * 4


def test_an_answer_cut_at_the_length_budget_is_truncated(step):
    result = step["result"]
    rows = by_scenario(result)
    ids = step["kwargs"]["completion_ids"]
    assert [len(ids[i]) for i in rows["rambles"]] == [MAX_COMPLETION] * 2
    sample = result.samples[rows["rambles"][0]]
    assert (sample.metadata["finish_reason"], sample.metadata["truncated"]) == ("length", True)
    assert values(result, "answer", rows["rambles"]) == [0.0, 0.0]
    assert values(result, "non_stop", rows["rambles"]) == [-1.0, -1.0]
    assert _score_as_before(step, rows["rambles"]).values("non_stop") == [0.0, 0.0]


def test_trl_logged_the_components_and_its_tool_metrics(step):
    (log,) = [e for e in step["trainer"].state.log_history if "reward" in e]
    assert log["tools/call_frequency"] > 0 and log["tools/failure_frequency"] > 0
    for name in CONFIG["rewards"]:
        assert f"rewards/{name}/mean" in log
    assert log["rewards/non_stop/error_rate"] == 0.0


def _score_as_before(step: dict[str, Any], rows: list[int]) -> Any:
    """The rows scored as the adapter did before trajectories: TRL's arguments turned into
    samples as they came (``build_samples`` alone)."""
    kwargs = dict(step["kwargs"])
    columns = {k: v for k, v in kwargs.items()
               if k not in ("prompts", "completions", "completion_ids")}
    samples = build_samples(kwargs["prompts"], kwargs["completions"], columns, "reference",
                            kwargs["completion_ids"])
    return step["rewards"].scorer.reward_set.score([samples[i] for i in rows])


def test_without_attach_finish_and_tools_are_unknown_not_guessed():
    """No attach: the callables cannot see the trainer. The dataset's finish_reason does
    not stand in for this generation's: the rewards that need it say error."""
    rewards = trl_rewards(CONFIG)
    func = next(f for f in rewards.funcs if f.name == "non_stop")
    completion = [{"role": "assistant", "content": ANSWER}]
    out = func(prompts=[[{"role": "user", "content": "q"}]], completions=[completion],
               completion_ids=[[1, 2, 3]], trainer_state=None, reference=["7.46"],
               finish_reason=["stop"],
               reference_calls=[[{"convert_units": {"value": [12]}}]])
    result = rewards.scorer._last[1]
    assert out == [None]
    assert result.outcomes["non_stop"].score(0).status is Status.ERROR
    assert result.outcomes["valid_calls"].score(0).status is Status.ERROR  # no tools


def test_rollout_finish_rules():
    rollout = TRLRollout(tools=({"type": "function", "function": {"name": "f"}},),
                         eos_token_ids=frozenset({9}), max_tool_calling_iterations=1)
    asks = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}
    result = {"role": "tool", "name": "f", "content": "1"}
    said = {"role": "assistant", "content": "1"}
    assert rollout.finish([said], [1, 9]) == {"finish_reason": "stop", "truncated": False}
    assert rollout.finish([said], [1, 2]) == {"finish_reason": "length", "truncated": True}
    assert rollout.finish([asks, result, asks], [9]) == \
        {"finish_reason": "tool_calls", "truncated": True}
    assert rollout.finish([asks], [9]) == {"finish_reason": "length", "truncated": True}
    assert rollout.finish([said], None) == {} and rollout.finish([said], []) == {}
    bare = TRLRollout(eos_token_ids=frozenset({9}))  # no tools: a call nothing answers
    assert bare.finish([asks], [9]) == {"finish_reason": "tool_calls", "truncated": False}


# -- `rewardkit train` with backend trl: train.extra_args.tools ---------------------------
TOOLS_MODULE = '''
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert a value between units.

    Args:
        value: the value to convert
        from_unit: its unit (km, mi or kg)
        to_unit: the unit wanted (km, mi or lb)
    """
    return f"{value * 0.621371:.3f}"
'''


def train_config(tmp_path: Path, tools: list[str] | None) -> Path:
    """A config of :data:`CONFIG` with a train section on a local model (a plain Qwen2
    and the tokenizer above, saved) and, with ``tools``, ``extra_args.tools``."""
    import yaml
    from rewardkit_trainers.quickstart import BUILT_MARK
    from transformers import Qwen2Config, Qwen2ForCausalLM

    base = tmp_path / "base"
    if not base.exists():
        tokenizer = build_tokenizer()
        tokenizer.init_kwargs[BUILT_MARK] = "word-level"
        model = Qwen2ForCausalLM(Qwen2Config(
            vocab_size=max(tokenizer.get_vocab().values()) + 1, hidden_size=32,
            intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=4096, bos_token_id=None,
            eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id))
        model.save_pretrained(base)
        tokenizer.save_pretrained(base)
        (tmp_path / "unit_tools.py").write_text(TOOLS_MODULE)
        with (tmp_path / "rows.jsonl").open("w") as fh:
            for row in rows()[:2]:
                fh.write(json.dumps({**row, "tools": [{"type": "function", "function": {
                    "name": "convert_units", "parameters": {"type": "object"}}}]}) + "\n")
    train = {"backend": "trl", "model": str(base), "output_dir": str(tmp_path / "out"),
             "dataset": {"train": str(tmp_path / "rows.jsonl")}, "num_generations": 2,
             "batch_size": 2, "max_steps": 1, "max_completion_length": 16,
             "extra_args": {"max_tool_calling_iterations": 2}}
    if tools is not None:
        train["extra_args"]["tools"] = tools
    config = tmp_path / f"tools-{len(tools or [])}.yaml"
    config.write_text(yaml.safe_dump({**CONFIG, "train": train}))
    return config


def test_dry_run_shows_the_tools_trl_will_render(tmp_path: Path, capsys):
    from rewardkit_trainers.cli import run as cli_run

    assert cli_run("train", [str(train_config(tmp_path, ["unit_tools:convert_units"])),
                             "--dry-run", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in shown["tools"]] == ["convert_units"]
    assert shown["tools"][0]["parameters"]["required"] == ["value", "from_unit", "to_unit"]
    assert shown["grpo_config"]["max_tool_calling_iterations"] == 2
    assert "tools" not in shown["grpo_config"] and "tools_note" not in shown
    assert cli_run("train", [str(train_config(tmp_path, None)), "--dry-run", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["tools"] == [] and "runs no call" in shown["tools_note"]
    assert cli_run("train", [str(train_config(tmp_path, ["unit_tools:nothing"])),
                             "--dry-run"]) == 2
    assert "train.extra_args.tools.0: unit_tools:nothing" in capsys.readouterr().err


def test_rewardkit_train_hands_trl_the_tools_and_the_rewards_their_schemas(tmp_path: Path):
    """A real `rewardkit train` run (one step, the untrained model, which calls no tool):
    GRPOTrainer got the tools (their schemas replace the dataset's stale column), and the
    finish reason is this generation's, not the dataset's ``stop``."""
    from rewardkit_trainers.cli import run as cli_run

    assert cli_run("train", [str(train_config(tmp_path, ["unit_tools:convert_units"]))]) == 0
    scored = [json.loads(line) for line in
              (tmp_path / "out" / "scored_samples.jsonl").read_text().splitlines()]
    assert len(scored) == 4
    for row in scored:
        assert row["tools"][0]["function"]["parameters"]["required"] == \
            ["value", "from_unit", "to_unit"]
        assert row["finish_reason"] in ("stop", "length")
        assert row["truncated"] is (row["finish_reason"] == "length")
        assert row["components"]["valid_calls"]["status"] == "ok"
        assert row["components"]["non_stop"]["status"] == "ok"


def test_environment_factory_rollouts_carry_their_environments_tools(tmp_path: Path):
    """TRL's environment_factory with two environments (a dict, the rows' ``environment``
    column choosing): each rollout's ``tools`` are its environment's methods, as TRL
    rendered them for that prompt, found through the ``environments`` TRL passes."""
    import torch
    from datasets import Dataset
    from transformers.utils import get_json_schema
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(2)
    tokenizer = build_tokenizer()
    rewards = trl_rewards(CONFIG)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=MAX_COMPLETION, max_steps=1,
                      report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                      shuffle_dataset=False, **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=scripted_policy(tokenizer), reward_funcs=rewards.funcs,
                          args=args, train_dataset=Dataset.from_list(env_rows()),
                          processing_class=tokenizer,
                          environment_factory={"units": UnitsEnv, "memo": MemoEnv})
    rewards.attach(trainer)
    trainer.train()
    result = rewards.scorer._last[1]
    rows = by_scenario(result)
    units, memo = result.samples[rows["converts"][0]], result.samples[rows["recalls"][0]]
    assert units.metadata["tools"] == [get_json_schema(UnitsEnv().convert_units)]
    assert [t["function"]["name"] for t in memo.metadata["tools"]] == ["recall"]
    assert memo.completion[1]["content"] == "1.609 km"  # MemoEnv.recall ran
    for scenario in ("converts", "recalls"):
        for name in ("answer", "right_calls", "valid_calls", "tool_errors"):
            assert values(result, name, rows[scenario]) == [1.0, 1.0], (scenario, name)
        assert values(result, "non_stop", rows[scenario]) == [0.0, 0.0]


def test_the_docs_table_is_this_run(step):
    """docs/trainers/trl.md's before/now totals and clipped counts are what this step
    gives (its rows in :data:`SCRIPTS` order)."""
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "trainers" / "trl.md").read_text()
    section = page[page.index("| rollout | before | now |"):]
    table = re.findall(r"^\| [^|]+ \| (-?\d\.\d\d)[^|]* \| (-?\d\.\d\d) \|$",
                       section.split("\n\n")[0], re.MULTILINE)
    result = step["result"]
    rows = by_scenario(result)
    got = [(f"{_score_as_before(step, rows[name]).totals[0]:.2f}",
            f"{result.totals[rows[name][0]]:.2f}") for name in SCRIPTS]
    assert table == got
    (log,) = [e for e in step["trainer"].state.log_history if "reward" in e]
    cut = sum(bool(s.metadata["truncated"]) for s in result.samples)
    assert (round(log["completions/clipped_ratio"] * 14), cut, len(result.samples)) == \
        (2, 6, 14)
    assert "is 2 of 14 completions" in page and "count 6 of 14 as truncated" in page


def test_the_tool_use_example_dry_runs_on_trl(tmp_path: Path, capsys):
    """examples/tool-use.yaml's rewards and data on TRL with a tiny model and no tools
    (`rewardkit train ... --backend trl --dry-run`): its rows carry a ``tools`` column, and
    without train.extra_args.tools the dry run says no tool will run. (The example's own
    train section, with its tools: tests/trainers/test_tool_use_example.py.)"""
    import yaml
    from backend_venvs import ROOT
    from rewardkit_trainers.cli import run as cli_run

    example = yaml.safe_load((ROOT / "examples" / "tool-use.yaml").read_text())
    example["train"] = {"model": {"hidden_size": 32, "intermediate_size": 64},
                        "dataset": {"train": "data/tool-use.jsonl"},
                        "num_generations": 2, "batch_size": 2, "max_steps": 1}
    example["train"]["output_dir"] = str(tmp_path / "out")
    dataset = example["train"]["dataset"]
    for split in ("train", "test"):  # the paths as the example's folder reads them
        if isinstance(dataset.get(split), str):
            dataset[split] = str(ROOT / "examples" / dataset[split])
    config = tmp_path / "tool-use.yaml"
    config.write_text(yaml.safe_dump(example))
    assert cli_run("train", [str(config), "--backend", "trl", "--dry-run", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["backend"] == "trl" and shown["rows"] >= 9
    assert shown["tools"] == [] and "runs no call" in shown["tools_note"]
