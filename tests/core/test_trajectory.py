"""Trajectories in the core: messages read as turns, calls and results; bad shapes as a
problem, not a traceback; per-turn values reduced as configured; truncated samples zeroed
or masked per component."""

from __future__ import annotations

import pytest

from rewardkit import (
    RewardSet,
    Sample,
    Score,
    Status,
    completion_text,
    parse_config,
    registry,
    reward,
)
from rewardkit.trajectory import (
    Trajectory,
    reduce_turns,
    rollout_end,
    sample_truncated,
    turn_score,
)


def call(name: str, arguments: object, call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


def tool_sample(**metadata: object) -> Sample:
    return Sample(prompt=[{"role": "user", "content": "2+2?"}], completion=[
        {"role": "assistant", "content": "let me add",
         "tool_calls": [call("add", '{"a": 2, "b": 2}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "assistant", "content": "It is 4."},
    ], metadata=dict(metadata))


def test_final_answer_is_the_last_assistant_message_and_is_the_scored_text() -> None:
    sample = tool_sample()
    assert sample.text == "It is 4."
    assert Trajectory.of(sample).final_answer == completion_text(sample.completion)


def test_turns_calls_and_results_are_read_once() -> None:
    t = Trajectory.of(tool_sample())
    assert [turn.content for turn in t.turns] == ["let me add", "It is 4."]
    (only,) = t.calls
    assert (only.name, only.arguments, only.turn, only.id) == ("add", {"a": 2, "b": 2}, 0, "c1")
    assert only.result is not None and only.result.content == "4" and not only.result.error
    assert t.problem is None


def test_dict_arguments_and_results_without_ids_are_matched_in_order() -> None:
    sample = Sample(completion=[
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "a", "arguments": {"x": 1}}},
            {"function": {"name": "b", "arguments": {}}}]},
        {"role": "tool", "name": "b", "content": "B"},
        {"role": "tool", "content": "A"},
    ])
    calls = Trajectory.of(sample).calls
    assert [(c.name, c.result.content if c.result else None) for c in calls] == [
        ("a", "A"), ("b", "B")]


def test_arguments_that_are_not_json_are_the_calls_error() -> None:
    t = Trajectory.of(Sample(completion=[
        {"role": "assistant", "content": "", "tool_calls": [call("add", "{a: 2")]}]))
    assert t.calls[0].arguments is None
    assert "not JSON" in (t.calls[0].error or "")
    assert t.problem is None


#: arguments Python's json cannot read although they are JSON text: nested past the
#: interpreter's recursion limit (RecursionError), an integer over its 4,300 digits
#: (ValueError that is not a JSONDecodeError)
UNREADABLE_ARGUMENTS = {"nested 50,000 deep": '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}",
                        "a 5,000-digit number": '{"a": ' + "7" * 5_000 + "}"}


@pytest.mark.parametrize("what", sorted(UNREADABLE_ARGUMENTS))
def test_arguments_json_cannot_read_are_the_calls_error_not_a_traceback(what: str) -> None:
    t = Trajectory.of(Sample(completion=[
        {"role": "assistant", "content": "", "tool_calls": [
            call("add", UNREADABLE_ARGUMENTS[what])]},
        {"role": "assistant", "content": "done"}]))
    (only,) = t.calls
    assert only.arguments is None and only.error and "add: arguments" in only.error
    assert t.problem is None


def test_a_tool_result_nested_too_deep_to_read_is_its_text() -> None:
    deep = '{"error": ' + "[" * 25_000 + "]" * 25_000 + "}"
    t = Trajectory.of(Sample(completion=[
        {"role": "assistant", "content": "", "tool_calls": [call("add", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": deep},
        {"role": "assistant", "content": "done"}]))
    (only,) = t.calls
    assert only.result is not None and only.result.content == deep
    assert not only.result.error and t.problem is None


def test_a_tools_column_nested_too_deep_is_a_problem() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    assert "not JSON" in (Trajectory.of(tool_sample(tools=deep)).problem or "")


@pytest.mark.parametrize(("messages", "needle"), [
    ([{"role": "wizard", "content": "x"}], "unknown role 'wizard'"),
    ([{"role": "tool", "tool_call_id": "zz", "content": "4"},
      {"role": "assistant", "content": "4"}], "answers no call"),
    (["plain text in a list of messages", {"role": "assistant", "content": "4"}],
     "not a mapping"),
])
def test_bad_shapes_are_a_problem_not_a_traceback(messages: list, needle: str) -> None:
    assert needle in (Trajectory.of(Sample(completion=messages)).problem or "")


def test_tool_errors_and_timeouts_are_read_from_the_result() -> None:
    sample = Sample(completion=[
        {"role": "assistant", "content": "", "tool_calls": [call("a", "{}", "1"),
                                                           call("b", "{}", "2"),
                                                           call("c", "{}", "3")]},
        {"role": "tool", "tool_call_id": "1", "content": '{"error": "division by zero"}'},
        {"role": "tool", "tool_call_id": "2", "content": "", "status": "timeout"},
        {"role": "tool", "tool_call_id": "3", "content": '{"error": "none", "value": 1}'},
    ])
    results = [c.result for c in Trajectory.of(sample).calls]
    assert [(r.error, r.timed_out) for r in results if r] == [
        (True, False), (True, True), (False, False)]


def test_tools_column_may_be_json_text_and_bad_tools_are_a_problem() -> None:
    tools = '[{"type": "function", "function": {"name": "add", "parameters": {}}}]'
    t = Trajectory.of(tool_sample(tools=tools))
    assert t.tool_schema("add") == {"name": "add", "parameters": {}}
    assert Trajectory.of(tool_sample()).tools is None
    assert "not a list" in (Trajectory.of(tool_sample(tools=5)).problem or "")


@pytest.mark.parametrize(("metadata", "expected"), [
    ({"finish_reason": "length"}, True), ({"finish_reason": "stop"}, False),
    ({"finish_reason": "tool_calls"}, False), ({"truncated": True, "finish_reason": "stop"}, True),
    ({}, None),
])
def test_truncation_from_the_flag_or_the_finish_reason(metadata: dict, expected: object) -> None:
    assert sample_truncated(tool_sample(**metadata)) is expected


@pytest.mark.parametrize(("how", "gamma", "expected"), [
    ("last", 1.0, 1.0), ("sum", 1.0, 2.0), ("mean", 1.0, 2 / 3), ("discounted", 0.5, 1.25)])
def test_reduce_turns(how: str, gamma: float, expected: float) -> None:
    assert reduce_turns([1.0, 0.0, 1.0], how, gamma) == pytest.approx(expected)


def test_turn_score_without_turns_is_an_error() -> None:
    assert turn_score([]).status is Status.ERROR


@reward(name="test_each_turn_has_text")
def each_turn_has_text(sample: Sample) -> Score:
    return turn_score([1.0 if t.content else 0.0 for t in Trajectory.of(sample).turns])


@pytest.fixture
def per_turn_reward():
    if "test_each_turn_has_text" not in registry.names():
        registry.register(each_turn_has_text)
    yield
    registry.unregister("test_each_turn_has_text")


@pytest.mark.usefixtures("per_turn_reward")
@pytest.mark.parametrize(("turns", "expected"), [
    ({}, 1.0), ({"turns": "sum"}, 2.0), ({"turns": "mean"}, 1.0),
    ({"turns": "discounted", "gamma": 0.5}, 1.5)])
def test_config_chooses_how_turn_values_reach_the_trainer(turns: dict, expected: float) -> None:
    rs = RewardSet.from_dict({"rewards": {"t": {"reward": "test_each_turn_has_text", **turns}}})
    result = rs.score([tool_sample()])
    assert result.totals == [pytest.approx(expected)]
    assert result.scores("t")[0].details["turn_values"] == [1.0, 1.0]
    turns = result.metrics["components"]["t"]["turns"]  # tests/core/test_turn_metrics.py
    assert {k: turns[k] for k in ("0", "1")} == {
        "0": {"mean": 1.0, "count": 1}, "1": {"mean": 1.0, "count": 1}}
    assert result.flat_metrics()["rewards/t/turn_1/mean"] == 1.0


def config(on_truncated: str) -> dict:
    return {"rewards": {"fmt": {"reward": "answer_is_number", "on_truncated": on_truncated},
                        "other": {"reward": "answer_is_number", "weight": 0.5}}}


def answer(finish_reason: str | None) -> dict:
    row = {"prompt": "2+2?", "completion": "<answer>4</answer>"}
    return row if finish_reason is None else {**row, "finish_reason": finish_reason}


def test_on_truncated_zero_zeroes_only_truncated_samples() -> None:
    result = RewardSet.from_dict(config("zero")).score([answer("stop"), answer("length")])
    assert result.values("fmt") == [1.0, 0.0]
    assert result.totals == [1.5, 0.5]


def test_on_truncated_mask_drops_the_sample_whatever_on_error_says() -> None:
    cfg = {**config("mask"), "on_error": "ignore"}
    result = RewardSet.from_dict(cfg).score([answer("stop"), answer("length")])
    assert result.totals == [1.5, None]
    assert result.scores("fmt")[1].status is Status.SKIPPED


def test_on_truncated_without_a_finish_reason_is_an_error_not_a_guess() -> None:
    result = RewardSet.from_dict(config("zero")).score([answer(None)])
    score = result.scores("fmt")[0]
    assert score.status is Status.ERROR and "finish_reason" in score.reason
    assert RewardSet.from_dict(config("keep")).score([answer(None)]).totals == [1.5]


def test_the_report_shows_a_scored_trajectory_turn_by_turn(tmp_path) -> None:
    import json

    from rewardkit.report import write_report

    sample = tool_sample(finish_reason="stop")
    sample.completion.insert(2, {"role": "tool", "tool_call_id": "zz", "status": "timeout",
                                 "content": ""})
    row = {"prompt": sample.prompt, "completion": sample.completion, "reward": 1.0,
           "components": {"t": {"value": 1.0, "status": "ok"}}}
    (tmp_path / "scored.jsonl").write_text(json.dumps(row), encoding="utf-8")
    write_report(tmp_path / "scored.jsonl", tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    data = json.loads(page.split("id='sample-data'>")[1].split("</script>")[0])
    assert data["rows"][0]["tr"].splitlines() == [
        'assistant: let me add', '    -> add({"a": 2, "b": 2})', "tool: <- [c1] 4",
        "tool: <- [zz] (timeout) ", "assistant: It is 4."]
    assert data["rows"][0]["c"] == "It is 4."  # the scored text: the final answer


def test_the_size_guard_counts_every_turn_and_every_call_not_only_the_answer() -> None:
    huge = '{"a": "' + "x" * 300_000 + '"}'
    sample = Sample(completion=[
        {"role": "assistant", "content": "", "tool_calls": [call("add", huge)]},
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "assistant", "content": "<answer>4</answer>"}])
    assert sample.text == "<answer>4</answer>" and sample.size > 300_000
    result = RewardSet.from_dict({"rewards": {"n": {"reward": "answer_is_number"}}}).score([sample])
    assert result.scores("n")[0].status is Status.ERROR
    assert "too large" in result.scores("n")[0].reason


@reward(name="test_wrong_turn_count")
def wrong_turn_count(sample: Sample) -> Score:
    return turn_score([1.0, 1.0, 1.0])  # three values for a two-turn sample


@reward(name="test_bad_turn_values")
def bad_turn_values(sample: Sample) -> Score:
    return Score(1.0, Status.OK, "", {"turn_values": [1.0, True]})


@pytest.mark.parametrize(("name", "cls", "needle"), [
    ("test_wrong_turn_count", wrong_turn_count, "3 turn_values for 2 assistant turns"),
    ("test_bad_turn_values", bad_turn_values, "finite numbers")])
def test_per_turn_values_that_break_the_contract_are_the_rewards_error(
        name: str, cls: type, needle: str) -> None:
    registry.register(cls)
    try:
        result = RewardSet.from_dict({"rewards": {"t": {"reward": name}}}).score([tool_sample()])
    finally:
        registry.unregister(name)
    score = result.scores("t")[0]
    assert score.status is Status.ERROR and needle in score.reason
    assert result.totals == [None]


# -- rollout_end: how a rollout ended, one rule on every backend ---------------------------
_CALL = {"role": "assistant", "content": "12 km is 7.46 mi.",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}
_RESULT = {"role": "tool", "content": "7.456"}
_ANSWER = {"role": "assistant", "content": "12 km is 7.46 mi."}


@pytest.mark.parametrize(("messages", "cut", "tools_run", "expected"), [
    ([_CALL, _RESULT, _ANSWER], False, True, ("stop", False)),   # finished
    ([_ANSWER], True, True, ("length", True)),                    # cut mid-answer
    ([_CALL, _RESULT, _CALL], False, True, ("tool_calls", True)),  # cut after an unrun call
    ([_CALL, _RESULT], False, True, ("tool_calls", True)),        # cut after a tool result
    ([_CALL, _RESULT], True, True, ("length", True)),             # ... by the budget
    ([_CALL], True, True, ("length", True)),                      # a result dropped
    ([_CALL], False, False, ("tool_calls", False)),               # no tools to run it
    ([], False, True, ("stop", False)),
])
def test_rollout_end_is_one_rule(messages, cut, tools_run, expected):
    got = rollout_end(messages, cut, tools_run=tools_run)
    assert (got["finish_reason"], got["truncated"]) == expected


def test_an_answer_beside_an_unrun_call_is_not_paid_under_on_truncated_zero():
    """The same rollout, read by the rule, is zeroed and penalised: the answer beside a
    call the turn limit never ran is not an answer."""
    rs = RewardSet(parse_config({"on_error": "ignore", "rewards": {
        "answer": {"reward": "math_answer", "on_truncated": "zero"}}}))
    messages = [_CALL, _RESULT, _CALL]
    sample = Sample("q", messages, "7.46", metadata=rollout_end(messages, False))
    assert rs.score([sample]).values("answer") == [0.0]
