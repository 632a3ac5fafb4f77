"""verl multi-turn: tool rollouts of verl's own agent loop reach rewardkit as trajectories.

``backends/verl_multiturn_check.py`` runs verl's ``AgentLoopWorker.generate_sequences``
with ``RewardkitToolAgentLoop`` (verl's ToolAgentLoop plus its record), a real verl
``FunctionTool`` and a scripted policy (fixed turns from a stand-in LLM client: no model,
no GPU), scores through verl's streaming and batch reward paths with
``RewardkitRewardManager``, and hands the token rewards to verl's GRPO advantage. The
rewards are examples/tool-use.yaml's (with ``on_error: ignore``, which verl needs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from backend_venvs import ROOT, run_in_venv, tool_use_rewards
from rewardkit_trainers import verl

GOLDEN = {"honest": 1.95, "fake_result": 1.10, "garbage_call": 1.40, "truncated": 0.45,
          "no_call": 1.00}


TRAIN = """
train:
  model: Qwen/Qwen2.5-0.5B-Instruct
  dataset: {{train: {data}}}
  max_steps: 10
  num_generations: 4
  batch_size: 4
"""
TOOLS = "  extra_args: {actor_rollout_ref.rollout.multi_turn.function_tool_path: tools.py}\n"


def tool_use_config(folder: Path, tools: bool) -> Path:
    """examples/tool-use.yaml with ``on_error: ignore`` (what verl needs) and a train
    section over its own rollouts' prompts; with ``tools`` the verl tools named."""
    config = folder / "tool-use.yaml"
    config.write_text(tool_use_rewards()
                      + TRAIN.format(data=ROOT / "examples/data/tool-use.jsonl")
                      + (TOOLS if tools else ""))
    return config


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The config and the first job's argv of `rewardkit train --backend verl`."""
    from rewardkit_trainers.launch.runner import jobs, load_run

    folder = tmp_path_factory.mktemp("verl_mt")
    config = tool_use_config(folder, tools=True)
    plan = load_run(config, backend="verl", output_dir=str(folder / "run"))
    return config, jobs(plan)[0].argv


@pytest.fixture(scope="module")
def result(planned: tuple[Path, list[str]]) -> dict:
    config, argv = planned
    registry = next(a.split("=", 1)[1] for a in argv if ".agent_loop_config_path=" in a)
    return run_in_venv("verl", "verl_multiturn_check.py", registry,
                       env={"REWARDKIT_CONFIG": str(config)})


def test_streamed_and_batched_paths_pay_the_examples_golden_totals(result: dict):
    """The honest rollout gets the example's honest total (1.95) in both of verl's reward
    paths; the no-call, garbage-call and truncated rollouts their golden totals too."""
    streamed = dict(zip(result["cases"], result["streamed_score"], strict=True))
    batched = dict(zip(result["cases"], result["batched_score"], strict=True))
    for case, total in GOLDEN.items():
        assert streamed[case] == pytest.approx(total, abs=1e-6), case
        assert batched[case] == pytest.approx(total, abs=1e-6), case
    # verl's __num_turns__: user+assistant+tool (cut_call: three assistant turns, two results)
    assert result["num_turns"] == [4, 4, 4, 4, 2, 6, 2]


def test_the_trajectory_is_rebuilt_from_the_response_mask_and_verls_parser(result: dict):
    honest = result["trajectories"][0]
    assert [m["role"] for m in honest["messages"]] == ["assistant", "tool", "assistant"]
    call = honest["messages"][0]["tool_calls"][0]["function"]
    assert call["name"] == "convert_units" and '"to_unit": "mi"' in call["arguments"]
    assert honest["messages"][1]["content"] == "7.456"  # what the verl FunctionTool returned
    assert honest["messages"][2]["content"] == "12 km is about 7.46 miles."
    assert [t["function"]["name"] for t in honest["tools"]] == ["convert_units"]
    assert (honest["finish_reason"], honest["truncated"]) == ("stop", False)


def test_a_tool_response_the_policy_wrote_itself_is_not_a_tool_result(result: dict):
    """Hack: a call the tool refuses, then ``<tool_response>7.456</tool_response>`` in the
    policy's own tokens. The decoded text verl's naive manager scores holds two
    tool responses for one call; the mask keeps the fake in the assistant's content, the
    real (error) result counts: tool_errors 0 and the call invalid, 1.10 not 1.95."""
    i = result["cases"].index("fake_result")
    assert result["text_tool_responses"][i] == 2
    messages = result["trajectories"][i]["messages"]
    assert "<tool_response>" in messages[0]["content"]
    assert [m for m in messages if m["role"] == "tool"] == [
        {"role": "tool", "status": "error",
         "content": "Error executing tool 'convert_units': cannot convert km to parsec"}]
    assert result["streamed"]["tool_errors"][i] == 0.0
    assert result["streamed"]["valid_calls"][i] == 0.0


def test_a_call_text_verls_parser_drops_stays_an_invalid_call(result: dict):
    """Hack: the right call then ``<tool_call>not json</tool_call>``; verl's hermes
    parser logs and drops it, so the loop runs one call. The trajectory keeps it as an
    invalid call: tool_call_valid 0, match 1/2 (1.40, the example's golden garbage case)."""
    i = result["cases"].index("garbage_call")
    calls = result["trajectories"][i]["messages"][0]["tool_calls"]
    assert len(calls) == 2 and calls[1].strip() == "not json"
    assert (result["streamed"]["valid_calls"][i], result["streamed"]["right_calls"][i]) == (
        0.0, 0.5)


def test_truncation_comes_from_the_response_length_not_the_dataset_row(result: dict):
    """The dataset row says ``finish_reason: stop`` (a recorded completion's); the cut-off
    rollout is truncated: answer zeroed (on_truncated: zero), non_stop -1."""
    i = result["cases"].index("truncated")
    assert (result["trajectories"][i]["finish_reason"],
            result["trajectories"][i]["truncated"]) == ("length", True)
    assert (result["streamed"]["answer"][i], result["streamed"]["non_stop"][i]) == (0.0, -1.0)


def test_grpo_sums_token_rewards_so_per_turn_placement_changes_nothing(result: dict):
    """verl puts a reward function's score at the last valid token (both paths). Placing
    the same total split over each assistant turn's last token instead gives verl's
    compute_grpo_outcome_advantage identical advantages, the same at every token: GRPO
    sums the token rewards, so ``turns: sum`` is what per-turn values would train."""
    grpo = result["grpo"]
    assert grpo["turn_ends"] == [2, 2, 2, 2, 1, 3, 1]
    assert grpo["advantage_per_turn"] == pytest.approx(grpo["advantage"], abs=1e-6)
    assert grpo["constant_over_tokens"]
    assert grpo["advantage"][0] > 0 > grpo["advantage"][3]  # honest above, truncated below


def test_both_reward_paths_put_one_number_at_the_last_valid_token(result: dict):
    """What docs/agents.md says verl takes (per-turn values on each backend): its
    token-level reward tensor gets the reward function's one float at the last valid
    response token, in the streamed path (AgentLoopOutput.reward_score) and the batch path
    (assemble_rm_scores), multi-turn rows included; no other token carries a reward."""
    assert max(result["grpo"]["turn_ends"]) > 1  # rollouts of several assistant turns
    for path in ("streamed", "batched"):
        for row in result["reward_tokens"][path]:
            assert row["nonzero"] == [row["last"]], (path, row)


def test_the_datasets_finish_reason_never_stands_for_the_rollouts(tmp_path: Path):
    """Before: compute_score put the packed row's ``finish_reason: stop`` into the
    sample, so non_stop_penalty paid 0 for any rollout, cut off or not. Now only the
    rollout says how it ended: without a trajectory the penalty is status error."""
    config = tmp_path / "c.yaml"
    config.write_text("on_error: ignore\nrewards:\n  non_stop: {reward: non_stop_penalty}\n")
    info = {"metadata": '{"finish_reason": "stop", "truncated": false}'}
    out = verl.compute_score("s", "cut off mid", "7", info, config=str(config))
    assert out["non_stop_failed"] == 1.0


def test_train_dry_run_rolls_out_with_rewardkits_tool_agent_loop(
        planned: tuple[Path, list[str]], tmp_path: Path, tiny_tokenizer_dir: Path):
    """With tools named, the jobs select RewardkitToolAgentLoop (the registry file the
    check above loads) and verl's own Hydra config composes the overrides."""
    import json

    _, argv = planned
    assert "actor_rollout_ref.rollout.multi_turn.enable=true" in argv
    assert "actor_rollout_ref.rollout.agent.default_agent_loop=rewardkit_tool_agent" in argv
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(argv))
    composed = run_in_venv("verl", "verl_args_check.py", str(argv_file),
                           str(tiny_tokenizer_dir))
    rows = (ROOT / "examples/data/tool-use.jsonl").read_text().strip().splitlines()
    assert composed["rows"] == len(rows) and composed["raw_prompt"][0]["role"] == "system"


def test_train_refuses_trajectory_rewards_without_verl_tools(tmp_path: Path, capsys):
    from rewardkit_trainers.cli import run as cli_run

    config = tool_use_config(tmp_path, tools=False)
    assert cli_run("train", [str(config), "--backend", "verl", "--dry-run"]) == 2
    err = capsys.readouterr().err
    for name in ("answer", "right_calls", "valid_calls", "tool_errors", "non_stop"):
        assert f"rewards.{name}: needs a multi-turn trajectory" in err
    assert "function_tool_path" in err


def test_a_record_that_does_not_fit_its_tokens_is_an_error_not_a_guess(
        result: dict, tmp_path: Path):
    """A mask whose length is not the response's: no trajectory is made up; the tool
    rewards say status error, the problem is in the sample's metadata."""
    assert result["mismatch"] == {"problem": "response_mask has 2 tokens, the response 3"}
    config = tmp_path / "c.yaml"
    config.write_text("on_error: ignore\nrewards:\n  valid: {reward: tool_call_valid}\n"
                      "  fmt: {reward: soft_format}\n")
    from rewardkit_trainers.rewards.verl import TRAJECTORY

    info = {TRAJECTORY: result["mismatch"]}
    out = verl.compute_score("s", "<think>a</think><answer>1</answer>", "1", info,
                             config=str(config))
    assert (out["valid_failed"], out["fmt"]) == (1.0, 1.0)


def test_export_selects_rewardkits_tool_agent_loop(tmp_path: Path):
    """Before: `rewardkit export verl examples/tool-use.yaml` printed the reward overrides
    only, so verl rolled out with its single-turn loop and every trajectory reward failed
    on every row. Now the overrides select RewardkitToolAgentLoop and the config's verl
    tools and turn limit, loaded here as verl's AgentLoopWorker loads them."""
    from rewardkit_trainers.cli import run as cli_run

    args = tmp_path / "verl.args"
    assert cli_run("export", ["verl", str(ROOT / "examples/tool-use.yaml"),
                              "-o", str(args)]) == 0
    composed = run_in_venv("verl", "verl_export_check.py", str(args))
    assert composed["multi_turn_enable"] is True
    assert composed["default_agent_loop"] == "rewardkit_tool_agent"
    assert composed["loop_target"] == \
        "rewardkit_trainers.rewards.verl_manager.RewardkitToolAgentLoop"
    assert composed["is_tool_agent_loop"]
    assert composed["tools"] == ["calculate", "convert_units"]
    assert composed["max_assistant_turns"] == 3  # the same limit as train --backend verl
    assert composed["reward_manager"] == "RewardkitRewardManager"


def test_export_refuses_trajectory_rewards_without_verl_tools(tmp_path: Path, capsys):
    """As `rewardkit train --backend verl` refuses it: exit 2, each component named, the
    two tool keys said, no file written."""
    from rewardkit_trainers.cli import run as cli_run

    config = tool_use_config(tmp_path, tools=False)
    out = tmp_path / "verl.args"
    assert cli_run("export", ["verl", str(config), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    for name in ("answer", "right_calls", "valid_calls", "tool_errors", "non_stop"):
        assert f"rewards.{name}: needs a multi-turn trajectory" in err
    assert "function_tool_path" in err and "tool_config_path" in err
    assert not out.exists()


def test_export_without_a_dataset_refuses_tool_call_valid_without_verl_tools(
        tmp_path: Path, capsys):
    """A config with no train section (the probe row made up, no ``tools`` column):
    tool_call_valid was not refused and verl's text-only rollout would err on every row."""
    from rewardkit_trainers.cli import run as cli_run

    config = tmp_path / "tools.yaml"
    config.write_text("on_error: ignore\nrewards:\n  valid: {reward: tool_call_valid}\n")
    out = tmp_path / "overrides.txt"
    assert cli_run("export", ["verl", str(config), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "rewards.valid: needs a multi-turn trajectory" in err and not out.exists()
