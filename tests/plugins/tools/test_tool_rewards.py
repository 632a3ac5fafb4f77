"""rewardkit-tools: what the golden cases (tests/cases/tools) cannot hold: the parameters'
effect on one trajectory, per-turn values through a config, the details, and the BFCL
matching rules one by one."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("rewardkit_tools")

from rewardkit_tools.matching import assign, mismatch, parse_reference

from rewardkit import RewardSet, Sample, Status, get_reward

TOOLS = [{"type": "function", "function": {
    "name": "convert_units",
    "parameters": {"type": "object", "required": ["value", "from_unit", "to_unit"],
                   "properties": {"value": {"type": "number"},
                                  "from_unit": {"type": "string", "enum": ["km", "mi", "kg"]},
                                  "to_unit": {"type": "string", "enum": ["km", "mi", "kg"]},
                                  "tags": {"type": "array", "items": {"type": "string"}},
                                  "options": {"type": "object"}}}}}]


def call(args: dict, call_id: str = "a", name: str = "convert_units") -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


KM = {"value": 12, "from_unit": "km", "to_unit": "mi"}
MI = {"value": 3, "from_unit": "mi", "to_unit": "km"}


def sample(*turns: list[dict], reference: object = None, **metadata: object) -> Sample:
    messages = [{"role": "assistant", "content": "", "tool_calls": calls} for calls in turns]
    messages.append({"role": "assistant", "content": "done"})
    return Sample(prompt="q", completion=messages, reference=reference,
                  metadata={"tools": TOOLS, **metadata})


def score(name: str, s: Sample, **params: object):
    return get_reward(name)(params).score(s)


def test_valid_fraction_credit_pays_the_share_of_valid_calls() -> None:
    s = sample([call(KM), call({"value": 1}, "b")])
    assert score("tool_call_valid", s).value == 0.0
    graded = score("tool_call_valid", s, credit="fraction")
    assert graded.value == 0.5
    assert graded.details["invalid"] == ["convert_units: required argument 'from_unit' is "
                                         "missing"]


def test_valid_checks_nested_items() -> None:
    assert score("tool_call_valid", sample([call({**KM, "tags": ["a", 3]})])).value == 0.0
    assert score("tool_call_valid", sample([call({**KM, "tags": ["a", "b"]})])).value == 1.0


@pytest.mark.parametrize(("arguments", "why"), [
    ('{"value": NaN, "from_unit": "km", "to_unit": "mi"}', "NaN is not JSON"),
    ('{"value": Infinity, "from_unit": "km", "to_unit": "mi"}', "Infinity is not JSON"),
    ('{"value": 1e999, "from_unit": "km", "to_unit": "mi"}', "1e999 is out of the range"),
    ('{"value": 12, "from_unit": "km", "to_unit": "mi", "to_unit": "kg"}',
     "key 'to_unit' appears twice"),
    ('{"value": 12, "from_unit": "km", "to_unit": "mi", "options": {"a": 1, "a": 2}}',
     "key 'a' appears twice"),
])
def test_valid_refuses_what_only_pythons_json_reads(arguments: str, why: str) -> None:
    """Strict JSON: NaN / Infinity and a key twice are refused with the reason, in
    each reading (all, fraction, per turn); the same call in strict JSON is valid."""
    bad = {"id": "a", "type": "function",
           "function": {"name": "convert_units", "arguments": arguments}}
    graded = score("tool_call_valid", sample([bad], [call(KM, "b")]), credit="fraction")
    assert graded.value == 0.5
    (invalid,) = graded.details["invalid"]
    assert invalid.startswith("convert_units: arguments are not strict JSON: ")
    assert why in graded.reason
    per_turn = score("tool_call_valid", sample([bad], [call(KM, "b")]), per_turn=True)
    assert per_turn.details["turn_values"] == [0.0, 1.0, 1.0]
    assert score("tool_call_valid", sample([call(KM)])).value == 1.0


@pytest.mark.parametrize("arguments", [
    '{"value": ' + "[" * 50_000 + "]" * 50_000 + ', "from_unit": "km", "to_unit": "mi"}',
    '{"value": ' + "7" * 5_000 + ', "from_unit": "km", "to_unit": "mi"}',
], ids=["nested 50,000 deep", "a 5,000-digit number"])
def test_arguments_pythons_json_cannot_read_are_a_wrong_call_through_a_config(
        arguments: str) -> None:
    """Arguments nested past the recursion limit or holding an integer over Python's
    4,300 digits: an invalid call (status ok, 0) in every tool reward, never an error
    score or a traceback; a deep tool result is text, not a failure to read."""
    bad = {"id": "a", "type": "function",
           "function": {"name": "convert_units", "arguments": arguments}}
    deep_result = '{"error": ' + "[" * 25_000 + "]" * 25_000 + "}"
    row = sample([bad], [call(KM, "b")])
    row = Sample(prompt=row.prompt, completion=[
        *row.completion[:1], {"role": "tool", "tool_call_id": "a", "content": deep_result},
        *row.completion[1:]], metadata=row.metadata)
    rs = RewardSet.from_dict({"rewards": {
        "valid": {"reward": "tool_call_valid"},
        "fraction": {"reward": "tool_call_valid", "params": {"credit": "fraction"}},
        "errors": {"reward": "tool_errors", "params": {"unanswered": "ignored"}}}})
    scores = rs.score([row])[0].scores
    assert (scores["valid"].status, scores["valid"].value) == (Status.OK, 0.0)
    assert (scores["fraction"].status, scores["fraction"].value) == (Status.OK, 0.5)
    assert "convert_units: arguments" in scores["valid"].reason
    assert (scores["errors"].status, scores["errors"].value) == (Status.OK, 1.0)


def test_valid_refuses_a_non_finite_number_passed_already_parsed() -> None:
    parsed = {"id": "a", "type": "function", "function": {
        "name": "convert_units", "arguments": {**KM, "value": float("nan")}}}
    graded = score("tool_call_valid", sample([parsed]))
    assert graded.value == 0.0 and "nan is not a JSON number" in graded.reason


def test_allow_extra_accepts_arguments_the_schema_does_not_name() -> None:
    s = sample([call({**KM, "note": "x"})])
    assert score("tool_call_valid", s).value == 0.0
    assert score("tool_call_valid", s, allow_extra=True).value == 1.0


def test_valid_per_turn_gives_one_value_per_assistant_turn_reduced_by_the_config() -> None:
    s = sample([call(KM)], [call({"value": "x"}, "b")])
    rs = RewardSet.from_dict({"rewards": {"v": {"reward": "tool_call_valid", "turns": "mean",
                                                "params": {"per_turn": True}}}})
    result = rs.score([s])
    assert result.scores("v")[0].details["turn_values"] == [1.0, 0.0, 1.0]
    assert result.totals == [pytest.approx(2 / 3)]
    assert result.metrics["components"]["v"]["turns"]["1"]["mean"] == 0.0


def test_match_fraction_credit_charges_extra_calls() -> None:
    ref = [{"name": "convert_units", "arguments": KM}]
    s = sample([call(KM), call(MI, "b")], reference=ref)
    assert score("tool_call_match", s).value == 0.0
    assert score("tool_call_match", s, credit="fraction").value == 0.5
    assert score("tool_call_match", s).details["mismatches"][0] == "2 calls made, 1 expected"


def test_match_strict_order_refuses_parallel_calls_swapped() -> None:
    ref = [{"name": "convert_units", "arguments": KM}, {"name": "convert_units", "arguments": MI}]
    swapped = sample([call(MI), call(KM, "b")], reference=ref)
    assert score("tool_call_match", swapped).value == 1.0
    assert score("tool_call_match", swapped, order="strict").value == 0.0


def test_match_reads_a_calls_column_and_a_calls_key() -> None:
    ref = [{"convert_units": {"value": [12], "from_unit": ["km"], "to_unit": ["mi"]}}]
    by_column = sample([call(KM)], reference="7.46", reference_calls=json.dumps(ref))
    assert score("tool_call_match", by_column, calls_column="reference_calls").value == 1.0
    by_key = sample([call(KM)], reference={"calls": ref, "answer": "7.46"})
    assert score("tool_call_match", by_key).value == 1.0


def test_match_without_schema_still_keeps_true_apart_from_one() -> None:
    ref = [{"f": {"flag": [1]}}]
    s = Sample(completion=[{"role": "assistant", "tool_calls": [call({"flag": True},
                                                                     name="f")]}],
               reference=ref)
    assert score("tool_call_match", s).value == 0.0


@pytest.mark.parametrize(("arguments", "allowed", "ok"), [
    ({"d": "April 1, 2024"}, {"d": ["april 1 2024"]}, True),        # standardised text
    ({"d": "April 2, 2024"}, {"d": ["april 1 2024"]}, False),
    ({"x": 2.0}, {"x": [2]}, True),                                  # numbers by value
    ({"xs": ["A", "b"]}, {"xs": [["a", "b"]]}, True),                # lists item by item
    ({"xs": ["b", "a"]}, {"xs": [["a", "b"]]}, False),               # ... in order
    ({"o": {"k": "V"}}, {"o": [{"k": ["v"], "j": ["", 1]}]}, True),  # objects key by key
    ({"o": {"k": "v", "z": 1}}, {"o": [{"k": ["v"]}]}, False),       # no extra key
    ({}, {"opt": ["", 3]}, True),                                    # "" = may be left out
    ({}, {"req": [3]}, False),
])
def test_bfcl_value_rules(arguments: dict, allowed: dict, ok: bool) -> None:
    (ref,) = parse_reference([{"f": allowed}])
    assert (mismatch("f", arguments, ref, None) is None) is ok


def test_a_value_of_the_references_type_stands_for_a_variable() -> None:
    schema = {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}}
    (ref,) = parse_reference([{"f": {"n": ["count"]}}])  # BFCL: a variable name as text
    assert mismatch("f", {"n": "count"}, ref, schema) is None
    assert mismatch("f", {"n": "other"}, ref, schema) is not None


def test_one_to_one_assignment_finds_what_greedy_matching_misses() -> None:
    # call 0 fits both references, call 1 only the first: greedy (first fit) gives
    # reference 0 to call 0 and leaves reference 1 without a call
    fits = {(0, 0), (0, 1), (1, 0)}
    assert len(assign(2, 2, lambda c, r: (c, r) in fits)) == 2


@pytest.mark.parametrize("raw", ["not json", 7, [3], [{"f": {"x": 1}}], [{"a": 1, "b": 2}]])
def test_a_reference_in_neither_shape_is_an_error(raw: object) -> None:
    got = score("tool_call_match", sample([call(KM)], reference=raw))
    assert got.status is Status.ERROR


def test_tool_errors_can_leave_unanswered_calls_out() -> None:
    s = Sample(completion=[
        {"role": "assistant", "tool_calls": [call(KM), call(MI, "b")]},
        {"role": "tool", "tool_call_id": "a", "content": "7.4"}])
    assert score("tool_errors", s).value == 0.5
    assert score("tool_errors", s, unanswered="ignored").value == 1.0


def test_non_stop_penalty_value_and_stop_reasons_are_parameters() -> None:
    s = Sample(completion="4", metadata={"finish_reason": "end_turn"})
    assert score("non_stop_penalty", s).value == 0.0
    assert score("non_stop_penalty", s, stop_reasons=["stop"], penalty=-0.5).value == -0.5


def test_bfcl_text_rule_is_blind_to_operators_and_spaces_rule_is_not() -> None:
    tools = [{"type": "function", "function": {"name": "calculate", "parameters": {
        "type": "object", "properties": {"expression": {"type": "string"}}}}}]
    ref = [{"name": "calculate", "arguments": {"expression": "12*0.6214"}}]

    def made(expression: str) -> Sample:
        return Sample(completion=[{"role": "assistant", "tool_calls": [
            call({"expression": expression}, name="calculate")]}],
            reference=ref, metadata={"tools": tools})

    swapped, spaced = made("12/0.6214"), made("12 * 0.6214")
    assert score("tool_call_match", swapped).value == 1.0  # BFCL drops * and /
    assert score("tool_call_match", swapped, texts="spaces").value == 0.0
    assert score("tool_call_match", spaced, texts="spaces").value == 1.0
    assert score("tool_call_match", spaced, texts="exact").value == 0.0


@pytest.mark.parametrize("name", ["tool_call_valid", "tool_call_match", "tool_errors",
                                  "tool_efficiency"])
def test_an_adapters_rollout_problem_is_the_error_a_text_completion_gets(name: str) -> None:
    """A backend adapter that had a rollout but could not rebuild its messages says why
    (``rollout_problem``); the trajectory rewards' error carries that reason, not the
    generic "the completion is text" (which stays for a plain text completion)."""
    from rewardkit.trajectory import ROLLOUT_PROBLEM

    reward = get_reward(name)()
    told = reward(Sample(completion="the answer is 4", reference={"calls": []},
                         metadata={ROLLOUT_PROBLEM: "the response mask does not fit"}))
    plain = reward(Sample(completion="the answer is 4", reference={"calls": []}))
    assert told.status is Status.ERROR and "the response mask does not fit" in told.reason
    assert plain.status is Status.ERROR and "the completion is text" in plain.reason
