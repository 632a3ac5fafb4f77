"""tool_call_match on BFCL's Java and JavaScript categories: every argument value is a
string of Java/JavaScript source (``"3"``, ``"true"``, ``"new ArrayList<>(Arrays.asList(
101L, 202L))"``) that BFCL's checker reads by the declared type before comparing. Before
issue 36 the reward type-checked the raw string and paid 0 to right calls, status ok.

Rows shaped as BFCL's simple_java / simple_javascript rows (their schemas' type names,
their possible answers' shape); the agreement on every row of those categories is
benchmarks/bench_bfcl.py's job (docs/agents.md)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

pytest.importorskip("rewardkit_tools")

from rewardkit_tools.source_values import UndecodableError, decode

from rewardkit import Sample, Status, get_reward

UPDATE = {"name": "PmsProductServiceImpl.updateNewStatus", "parameters": {
    "type": "dict", "required": ["ids", "newStatus"],
    "properties": {"ids": {"type": "ArrayList", "items": {"type": "long"}},
                   "newStatus": {"type": "integer"}}}}
UPDATE_REF = [{"PmsProductServiceImpl.updateNewStatus": {"ids": [[101, 202, 303]],
                                                          "newStatus": [2]}}]
#: a Java row whose type names are all Python's too: only ``language: java`` says so
REFRESH = {"name": "SpreadsheetPresentation.refreshData", "parameters": {
    "type": "dict", "required": ["refreshMetadata", "limit"],
    "properties": {"refreshMetadata": {"type": "boolean"}, "limit": {"type": "integer"},
                   "monitor": {"type": "any"}}}}
REFRESH_REF = [{"SpreadsheetPresentation.refreshData": {
    "refreshMetadata": [True], "limit": [50], "monitor": ["progressMonitor", ""]}}]
ENTRIES = {"name": "getActiveDataEntries", "parameters": {
    "type": "dict", "required": ["listElement", "tags", "options"],
    "properties": {"listElement": {"type": "any"}, "value": {"type": "Boolean"},
                   "tags": {"type": "array", "items": {"type": "String"}},
                   "options": {"type": "dict"}, "ratio": {"type": "float"}}}}
ENTRIES_REF = [{"getActiveDataEntries": {
    "listElement": ["listElement"], "value": [True, ""], "tags": [["completed", "failed"]],
    "options": [{"limit": [50], "mode": ["fast"]}], "ratio": [0.5, ""]}}]


def row(function: dict[str, Any], arguments: dict[str, Any], reference: Any) -> Sample:
    call = {"id": "a", "type": "function",
            "function": {"name": function["name"], "arguments": json.dumps(arguments)}}
    return Sample(prompt="q", completion=[{"role": "assistant", "content": "",
                                           "tool_calls": [call]}],
                  reference=reference, metadata={"tools": [{"type": "function",
                                                            "function": function}]})


def match(sample: Sample, **params: Any):
    return get_reward("tool_call_match")(params).score(sample)


@pytest.mark.parametrize("arguments", [
    {"ids": "new ArrayList<>(Arrays.asList(101L, 202L, 303L))", "newStatus": "2"},
    {"ids": "new ArrayList<Long>() {{ add(101L); add(202L); add(303L); }}", "newStatus": "2"},
])
def test_a_right_java_call_is_paid(arguments: dict[str, str]) -> None:
    sample = row(UPDATE, arguments, UPDATE_REF)
    assert match(sample).value == 1.0  # auto: ArrayList and long are Java's names
    assert match(sample, language="java").value == 1.0


@pytest.mark.parametrize(("arguments", "why"), [
    ({"ids": "new ArrayList<>(Arrays.asList(101L, 202L))", "newStatus": "2"}, "ids"),
    ({"ids": "new ArrayList<>(Arrays.asList(101L, 202L, 303L))", "newStatus": "3"},
     "newStatus"),
    ({"ids": "new ArrayList<>(Arrays.asList(101, 202, 303))", "newStatus": "2"}, "ids"),
    ({"ids": "new ArrayList<>(Arrays.asList(101L, 202L, 303L))", "newStatus": 2},
     "Java source text"),  # BFCL refuses a value that is not a string
])
def test_a_wrong_java_call_is_a_wrong_answer_with_the_reason(
        arguments: dict[str, Any], why: str) -> None:
    got = match(row(UPDATE, arguments, UPDATE_REF), language="java")
    assert (got.status, got.value) == (Status.OK, 0.0)
    assert why in got.reason


def test_java_names_shared_with_python_need_the_language_param() -> None:
    right = row(REFRESH, {"refreshMetadata": "true", "limit": "50"}, REFRESH_REF)
    assert match(right, language="java").value == 1.0
    wrong = row(REFRESH, {"refreshMetadata": "false", "limit": "50"}, REFRESH_REF)
    assert match(wrong, language="java").value == 0.0
    # read as JSON values (the Python categories), the texts are of the wrong type
    assert match(right).value == 0.0


def test_a_right_javascript_call_is_paid() -> None:
    arguments = {"listElement": "listElement", "value": "true",
                 "tags": '["completed", "failed"]', "options": "{limit: 50, mode: 'fast'}",
                 "ratio": "0.5"}
    sample = row(ENTRIES, arguments, ENTRIES_REF)
    assert match(sample).value == 1.0  # auto: Boolean is JavaScript's name
    assert match(sample, language="javascript").value == 1.0
    wrong = row(ENTRIES, {**arguments, "options": "{limit: 51, mode: 'fast'}"}, ENTRIES_REF)
    assert match(wrong, language="javascript").value == 0.0


@pytest.mark.parametrize(("schema_type", "language"), [
    ("Set", "java"),        # a Java type BFCL's checker does not decode
    ("Stack", "java"),
    ("Boolean", "java"),    # JavaScript's name where Java is asked for
    (None, "javascript"),   # no declared type
])
def test_an_argument_that_cannot_be_decoded_is_an_error_not_a_zero(
        schema_type: str | None, language: str) -> None:
    function = {"name": "f", "parameters": {"type": "dict", "required": ["x"],
                                            "properties": {"x": {} if schema_type is None
                                                           else {"type": schema_type}}}}
    got = match(row(function, {"x": "true"}, [{"f": {"x": [True]}}]), language=language)
    assert got.status is Status.ERROR and got.value is None
    assert "'x'" in got.reason


def test_java_and_javascript_names_in_one_schema_are_an_error_in_auto() -> None:
    function = {"name": "f", "parameters": {"type": "dict", "required": ["a", "b"],
                                            "properties": {"a": {"type": "long"},
                                                           "b": {"type": "Boolean"}}}}
    got = match(row(function, {"a": "1L", "b": "true"}, [{"f": {"a": [1], "b": [True]}}]))
    assert got.status is Status.ERROR and "language" in got.reason


def test_a_string_only_schema_is_read_both_ways_and_an_error_only_where_they_differ() -> None:
    function = {"name": "f", "parameters": {"type": "dict", "required": ["s"],
                                            "properties": {"s": {"type": "String"}}}}
    plain = row(function, {"s": "Paris"}, [{"f": {"s": ["Paris"]}}])
    assert match(plain).value == 1.0  # Java and JavaScript read it the same
    quoted = row(function, {"s": "'Paris'"}, [{"f": {"s": ["Paris"]}}])
    assert match(quoted, language="javascript").value == 1.0  # quotes dropped
    assert match(quoted, language="java").value == 0.0       # Java keeps the text
    got = match(quoted)
    assert got.status is Status.ERROR and "language" in got.reason


def test_python_rows_are_read_as_json_values_as_before() -> None:
    function = {"name": "f", "parameters": {"type": "dict", "required": ["n"],
                                            "properties": {"n": {"type": "integer"}}}}
    assert match(row(function, {"n": 3}, [{"f": {"n": [3]}}])).value == 1.0
    assert match(row(function, {"n": "3"}, [{"f": {"n": [3]}}])).value == 0.0
    assert match(row(function, {"n": 3}, [{"f": {"n": [3]}}]), language="python").value == 1.0


def test_java_source_needs_the_offered_schemas() -> None:
    sample = row(REFRESH, {"refreshMetadata": "true", "limit": "50"}, REFRESH_REF)
    got = match(sample, language="java", use_schema=False)
    assert got.status is Status.ERROR and "schema" in got.reason


@pytest.mark.parametrize(("text", "type_name", "item", "language", "value"), [
    ("-12", "integer", None, "java", -12),
    ("3.5f", "float", None, "java", 3.5),
    ("3.5", "float", None, "java", "3.5"),  # a Java float needs its f: else a text
    ("2e3", "double", None, "java", 2000.0),
    ("7L", "long", None, "java", 7),
    ("new int[]{1, 2, 3}", "Array", "integer", "java", [1, 2, 3]),
    ('new HashMap<String, Object>() {{ put("k", 1); put("s", "v"); }}', "HashMap", None,
     "java", {"k": 1, "s": "v"}),
    ("new HashMap<>()", "HashMap", None, "java", {}),
    ("12n", "Bigint", None, "javascript", 12),
    ('"quoted"', "String", None, "javascript", "quoted"),
    ("[[1, 2], [3, 4]]", "array", "array", "javascript", [[1, 2], [3, 4]]),
    ("new Array(1.5, 2)", "array", "float", "javascript", [1.5, 2.0]),
    ("{a: [1, 2], b: 'x'}", "dict", None, "javascript", {"a": [1, 2], "b": "x"}),
    ("not an array", "array", "integer", "javascript", "not an array"),  # stays text
])
def test_decode_reads_source_as_bfcl_does(text: str, type_name: str, item: str | None,
                                          language: str, value: Any) -> None:
    assert decode(text, type_name, language, item) == value


def test_decode_refuses_a_type_bfcl_does_not_decode() -> None:
    with pytest.raises(UndecodableError, match="Queue"):
        decode("new LinkedList<>()", "Queue", "java", None)


def test_an_unclosed_array_of_arrays_is_read_without_bfcls_exponential_search() -> None:
    """BFCL's pattern for an array of arrays backtracks exponentially on rows that never
    close (two dozen rows: seconds; sixty: far longer than a run): no array of arrays, so
    the flat reading BFCL falls back to, its first ``[...]``, whose one item stays text."""
    text = "[" + "[1]," * 60
    started = time.perf_counter()
    assert decode(text, "array", "javascript", "array") == ["[1"]
    assert decode("[[1, 2], [3]]", "array", "javascript", "array") == [[1, 2], [3]]
    assert time.perf_counter() - started < 10.0  # generous: it takes about a millisecond


def test_a_collection_longer_than_the_cap_is_an_error_score() -> None:
    function = {"name": "f", "parameters": {"type": "dict", "required": ["xs"], "properties": {
        "xs": {"type": "array", "items": {"type": "integer"}}}}}
    text = "[" + ", ".join(["1"] * 600) + "]"
    got = match(row(function, {"xs": text}, [{"f": {"xs": [[1] * 600]}}]), language="javascript")
    assert got.status is Status.ERROR and "1,000" in got.reason
