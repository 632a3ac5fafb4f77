"""ms-swift multi-turn tool rollouts reach the tool rewards as trajectories.

The rollout and the reward call are ms-swift's own code (in .venv-swift): ``run_multi_turn``
with a tool-using ``MultiTurnScheduler`` subclass, then ``compute_rewards_per_func``
calling the ORMs exported from examples/tool-use.yaml (``on_error: ignore``, so a reward
that cannot grade shows as None, not as an imputed mean). The policy's text is scripted
per turn (tests/trainers/backends/swift_multiturn_check.py says how); everything else is
ms-swift's. Also: the example's ``rewardkit train --backend swift --dry-run``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from backend_venvs import ROOT, run_in_venv, tool_use_rewards, venv_python
from rewardkit_trainers.rewards.swift import export_plugin, func_name

from rewardkit import parse_config

COMPONENTS = ["answer", "right_calls", "valid_calls", "tool_errors", "efficiency",
              "non_stop", "valid_per_turn"]


def _config_text() -> str:
    return tool_use_rewards()


@pytest.fixture(scope="module")
def swift_run(tmp_path_factory) -> dict:
    import yaml

    work = tmp_path_factory.mktemp("swift_mt")
    info = export_plugin(parse_config(yaml.safe_load(_config_text())), None,
                         work / "plugin.py")
    assert info.names == COMPONENTS
    result = run_in_venv("swift", "swift_multiturn_check.py", str(info.plugin), str(work),
                         *[func_name(n) for n in info.names], timeout=600)
    assert result["func_names"] == COMPONENTS
    return result


def _rewards(result: dict, key: str = "rewards") -> dict[str, dict[str, float | None]]:
    return {rollout: dict(zip(COMPONENTS, row, strict=True))
            for rollout, row in zip(result["rollouts"], result[key], strict=True)}


def test_what_ms_swift_passes_the_orms(swift_run: dict):
    """The facts the adapter reads: the whole conversation in ``messages``, the earlier
    assistant turn as token ids (ms-swift freezes it so for the next turn), the
    scheduler's ``tool`` message, the last turn's finish reason, num_turns, tools."""
    honest = swift_run["passed"]["honest"]
    assert honest["roles"] == ["system", "user", "assistant", "tool", "assistant"]
    assert honest["content_types"] == ["str", "str", "list", "str", "str"]
    assert honest["rollout_infos"] == {"num_turns": 2} and honest["tools"]
    assert swift_run["passed"]["truncated"]["finish_reason"] == "length"
    # a call in a format ms-swift's parser does not read was never executed
    assert swift_run["passed"]["unparsed_format"]["roles"] == ["system", "user", "assistant"]


def test_honest_rollout_is_fully_paid(swift_run: dict):
    honest = _rewards(swift_run)["honest"]
    assert honest == {"answer": 1.0, "right_calls": 1.0, "valid_calls": 1.0,
                      "tool_errors": 1.0, "efficiency": 1.0, "non_stop": 0.0,
                      "valid_per_turn": 1.0}


def test_react_call_the_engine_parsed_and_ran_counts_as_a_call(swift_run: dict):
    # hermes' parser falls back to ReAct text; ms-swift's engine reported the call and the
    # scheduler ran it, so it is one of the calls swift executed
    assert _rewards(swift_run)["react"] == _rewards(swift_run)["honest"]


def test_without_the_trainer_template_tool_rewards_are_errors_not_zeros(swift_run: dict):
    """No ``rewardkit_metrics`` callback: no parser for the calls in the text, so the
    completion stays the final text and every trajectory reward says error (None), as
    before this adapter read trajectories; the answer and the finish reason still count."""
    for rollout, got in _rewards(swift_run, "without_callback").items():
        for name in ("right_calls", "valid_calls", "tool_errors", "efficiency",
                     "valid_per_turn"):
            assert got[name] is None, (rollout, name)
        # cut at the budget (truncated, rambles), or the text ends on a call's numbers
        # (cut_call: no parser reads them as a call)
        assert got["answer"] == (0.0 if rollout in ("truncated", "rambles", "cut_call")
                                 else 1.0), rollout
        assert got["non_stop"] == (-1.0 if rollout in ("truncated", "rambles") else 0.0)


def test_a_parser_named_in_the_plugin_reads_single_turn_rows_only(swift_run: dict):
    """``register_orms(CONFIG, agent_template="hermes")`` without the callback: a row of
    one generated turn is read (its call parsed), but a multi-turn row's earlier turn is
    token ids and there is no tokenizer, so it stays text: errors, not zeros."""
    got = _rewards(swift_run, "agent_template_named")
    assert got["no_call"] == _rewards(swift_run)["no_call"]
    assert got["unparsed_format"]["right_calls"] == 0.0
    for rollout in ("honest", "faked_result", "truncated", "react"):
        assert got[rollout]["right_calls"] is None and got[rollout]["tool_errors"] is None
        assert got[rollout]["answer"] == _rewards(swift_run, "without_callback")[rollout][
            "answer"]


def test_a_call_in_a_format_swift_did_not_execute_is_not_paid(swift_run: dict):
    """``"parameters"`` for ``"arguments"``: rewardkit's own call reader accepts both, so a
    parser of our own would pay the call; ms-swift's agent template finds none, its
    scheduler ran none, and it is paid as no call (as answering from memory is)."""
    got = _rewards(swift_run)
    assert got["unparsed_format"] == got["no_call"]
    assert got["unparsed_format"]["right_calls"] == 0.0
    assert got["unparsed_format"]["valid_calls"] == 0.0
    assert got["unparsed_format"]["tool_errors"] is None  # no result to rate: skipped


def test_a_tool_result_faked_in_assistant_text_is_not_a_result(swift_run: dict):
    """The policy calls with a unit the tool refuses and writes its own
    ``<tool_response>`` of success: results come only from the scheduler's ``tool``
    messages, so the tool's error counts and the fake does not."""
    got = _rewards(swift_run)["faked_result"]
    assert got["tool_errors"] == 0.0
    assert got["valid_calls"] == 0.0 and got["right_calls"] == 0.0
    assert got["valid_per_turn"] == 0.5  # the call's turn 0, the answer's turn 1


def test_truncation_is_the_rollouts_own_not_a_stale_dataset_column(swift_run: dict):
    """The rows carry ``truncated: false`` (a column of some recorded rollout); the run's
    own last turn stopped on length, so the answer written before the cut is zeroed
    (``on_truncated: zero``; it was paid 1.0 while the column won) and the non-stop
    penalty applies."""
    got = _rewards(swift_run)["truncated"]
    assert got["answer"] == 0.0 and got["non_stop"] == -1.0
    assert got["right_calls"] == 1.0  # the call itself was made and answered


def test_a_continuation_scheduler_gives_errors_not_a_guess(swift_run: dict):
    """A scheduler that appends the tool's result to the assistant's own message (the
    style of ms-swift's example tool scheduler) leaves no way to tell the policy's text
    from the environment's: the trajectory rewards say error."""
    assert swift_run["inline_passed"]["roles"] == ["system", "user", "assistant"]
    assert swift_run["inline_passed"]["rollout_infos"] == {"num_turns": 2}
    got = dict(zip(COMPONENTS, swift_run["inline"][0], strict=True))
    assert got["answer"] == 1.0
    assert all(got[n] is None for n in ("right_calls", "valid_calls", "tool_errors",
                                        "efficiency"))


def _history(result: dict, key: str) -> dict[str, dict[str, float | None]]:
    return {rollout: dict(zip(COMPONENTS, row, strict=True))
            for rollout, row in zip(result["history_rollouts"], result["history_" + key],
                                    strict=True)}


def test_a_prompts_assistant_history_is_not_the_policys(swift_run: dict):
    """The prompt already holds the right call and its result (an assistant turn, then a
    ``tool`` message). The policy's completion is only the turns ms-swift generated: the
    last ``len(response_token_ids)`` assistant messages, or without ids (an engine that
    returns none) the last ``rollout_infos["num_turns"]``. Answering from the history's
    result is paid as no call (it was paid the history's call, right_calls 1.0, when
    rows without ids began at the first assistant message), and an honest rollout after
    the history is fully paid (it was 0.5 right_calls, 0.667 efficiency: two calls)."""
    assert swift_run["history_passed_no_ids"]["roles"] == [
        "system", "user", "assistant", "tool", "assistant"]
    assert set(swift_run["history_passed_no_ids"]["content_types"]) == {"str"}
    plain = _rewards(swift_run)
    for key in ("ids", "no_ids", "plain_no_ids", "tool_call_role_no_ids"):
        got = _history(swift_run, key)
        assert got["no_call"] == plain["no_call"], key
        assert got["no_call"]["right_calls"] == 0.0, key
        assert got["honest"] == plain["honest"], key


def test_calls_recorded_as_tool_call_messages_are_the_turns_calls(swift_run: dict):
    """A scheduler that records each call it ran as a ``tool_call`` message (ms-swift's
    dataset role, which its template folds into the assistant turn before it): the call
    is that turn's, counted once (every row was a malformed trajectory, None, before), so
    each rollout is rated as with the plain scheduler."""
    assert swift_run["tool_call_role_passed"]["roles"] == [
        "system", "user", "assistant", "tool_call", "tool", "assistant"]
    assert _rewards(swift_run, "tool_call_role") == _rewards(swift_run)


def test_the_tool_use_example_dry_runs_on_swift(tmp_path: Path):
    """``rewardkit train --backend swift --dry-run`` on the example's rewards and data:
    the dataset has ms-swift's shape (``messages``, ``tools``, ``solution``, the reference
    calls), without the recorded rollout's columns, and ms-swift parses the command with
    a scheduler's plugin file beside the rewards' own."""
    config = tmp_path / "tool-use-train.yaml"
    config.write_text(_config_text() + f"""
train:
  backend: trl
  model: Qwen/Qwen2.5-0.5B-Instruct
  dataset: {{train: {ROOT / "examples/data/tool-use.jsonl"}, reference_column: reference}}
  output_dir: {tmp_path / "out"}
  max_steps: 2
  num_generations: 2
  batch_size: 2
  extra_args: {{external_plugins: {tmp_path / "my_scheduler.py"},
               multi_turn_scheduler: units_tools, max_turns: 3}}
""")
    rewardkit = Path(sys.executable).parent / "rewardkit"
    proc = subprocess.run([str(rewardkit), "train", str(config), "--backend", "swift",
                           "--dry-run", "--json"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in
            (tmp_path / "out/data/train.swift.jsonl").read_text().splitlines()]
    assert len(rows) == 9
    for row in rows:
        assert [m["role"] for m in row["messages"]] == ["system", "user"]
        assert [t["function"]["name"] for t in row["tools"]] == ["convert_units", "calculate"]
        assert row["solution"] and row["reference_calls"]
        assert not {"completion", "finish_reason", "truncated"} & set(row)
    venv_python("swift")
    from rewardkit_trainers.launch.runner import jobs, load_run

    (job,) = jobs(load_run(config, backend="swift", output_dir=str(tmp_path / "out")))
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(job.argv))
    parsed = run_in_venv("swift", "swift_args_check.py", str(argv_file))
    assert parsed["unknown"] == []
    assert parsed["parsed"]["reward_funcs"] == [func_name(n) for n in COMPONENTS]
    assert parsed["parsed"]["reward_weights"] == [1.0, 0.5, 0.25, 0.1, 0.1, 0.5, 0.0]
    # the scheduler's plugin file comes beside the rewards' own, not instead of it
    assert parsed["parsed"]["external_plugins"] == [
        str(tmp_path / "out/rewardkit_swift_plugin.py"), str(tmp_path / "my_scheduler.py")]
    assert job.argv[job.argv.index("--multi_turn_scheduler") + 1] == "units_tools"
