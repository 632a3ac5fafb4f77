"""Reference shapes of code_execution: tests, cases, APPS inputs/outputs, JSON text."""

from __future__ import annotations

import pytest
from rewardkit_code import IOCase, ReferenceFormatError, TestSuite, parse_reference


def test_a_mapping_of_tests() -> None:
    assert parse_reference({"tests": ["assert f() == 1"]}) == TestSuite(tests=("assert f() == 1",))


def test_setup_runs_before_each_test() -> None:
    suite = parse_reference({"tests": ["assert f()", "assert g()"], "setup": "import math"})
    assert suite.tests == ("import math\nassert f()", "import math\nassert g()")


def test_a_list_of_asserts() -> None:
    assert parse_reference(["assert 1", "assert 2"]).tests == ("assert 1", "assert 2")


def test_cases_with_stdin_stdout_or_input_output_keys() -> None:
    cases = [{"stdin": "1", "stdout": "2"}, {"input": "3", "output": "4"}]
    suite = parse_reference({"cases": cases})
    assert suite.cases == (IOCase("1", "2"), IOCase("3", "4"))


def test_a_list_of_cases() -> None:
    assert parse_reference([{"stdin": "1", "stdout": "2"}]).cases == (IOCase("1", "2"),)


def test_apps_inputs_and_outputs() -> None:
    suite = parse_reference({"inputs": ["1 2\n"], "outputs": [["3"]]})
    assert suite.cases == (IOCase("1 2\n", "3\n"),)


def test_json_text_is_read_first() -> None:
    assert parse_reference('{"tests": ["assert 1"]}').tests == ("assert 1",)
    assert parse_reference('["assert 1"]').tests == ("assert 1",)


def test_plain_text_is_one_test() -> None:
    assert parse_reference("assert f(1) == 2\nassert f(2) == 3").tests == (
        "assert f(1) == 2\nassert f(2) == 3",
    )


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        (None, "expected"),
        (5, "expected"),
        ("", "empty"),
        ("{not json", "looks like JSON"),
        ({}, "exactly one of"),
        ({"tests": ["assert 1"], "cases": []}, "exactly one of"),
        ({"tests": []}, "no tests"),
        ({"tests": [1]}, "list of strings"),
        ({"cases": [{"stdin": "1"}]}, "no 'stdout'"),
        ({"inputs": ["1"], "outputs": []}, "equal length"),
        (["assert 1", {"stdin": ""}], "either"),
    ],
)
def test_unreadable_references_say_why(reference: object, message: str) -> None:
    with pytest.raises(ReferenceFormatError, match=message):
        parse_reference(reference)
