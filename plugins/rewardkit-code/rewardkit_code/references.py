"""What a code answer is checked against: assert-style tests or stdin/stdout cases.

Accepted reference shapes (a JSON string of any of them is read first):

- ``{"tests": ["assert f(1) == 2", ...]}``, optionally with ``"setup": "import math"``
  run before each test (MBPP's ``test_setup_code``);
- ``["assert f(1) == 2", ...]``: a list of tests;
- ``{"cases": [{"stdin": "1 2\\n", "stdout": "3\\n"}, ...]}`` (``input``/``output``
  also accepted as keys), or a list of such mappings;
- ``{"inputs": [...], "outputs": [...]}``: the APPS / TACO ``input_output`` layout;
- a string that is not JSON: one test snippet.

>>> parse_reference({"tests": ["assert f() == 1"]}).tests
('assert f() == 1',)
>>> parse_reference('{"cases": [{"stdin": "2", "stdout": "4"}]}').cases[0].stdout
'4'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class ReferenceFormatError(ValueError):
    """The reference cannot be read as tests or cases: the grading cannot happen."""


@dataclass(frozen=True)
class IOCase:
    """One stdin/stdout case: feed ``stdin``, expect ``stdout``."""

    stdin: str
    stdout: str


@dataclass(frozen=True)
class TestSuite:
    """The checks of one reference: ``tests`` (assert snippets) or ``cases``, never both.

    ``setup`` (MBPP's ``test_setup_code``) already starts each test; the program needs it
    too, since the test statements and the program run in different processes.
    """

    __test__ = False  # not a pytest test class

    tests: tuple[str, ...] = ()
    cases: tuple[IOCase, ...] = ()
    setup: str = ""

    def __len__(self) -> int:
        return len(self.tests) + len(self.cases)


def parse_reference(reference: Any) -> TestSuite:
    """Read ``reference`` into a :class:`TestSuite`; :class:`ReferenceFormatError` says why not."""
    if isinstance(reference, str):
        stripped = reference.strip()
        if stripped[:1] in ("{", "["):
            try:
                reference = json.loads(stripped)
            except ValueError as error:
                raise ReferenceFormatError(
                    f"reference looks like JSON but is not: {error}"
                ) from None
        elif stripped:
            return TestSuite(tests=(reference,))
        else:
            raise ReferenceFormatError("reference is empty: no tests or cases to run")
    if isinstance(reference, Mapping):
        suite = _from_mapping(reference)
    elif isinstance(reference, Sequence) and not isinstance(reference, bytes | bytearray):
        suite = _from_list(list(reference))
    else:
        raise ReferenceFormatError(
            f"reference is {type(reference).__name__}; expected {{'tests': [...]}}, "
            "{'cases': [...]} or a list of asserts"
        )
    if not len(suite):
        raise ReferenceFormatError("reference has no tests or cases to run")
    return suite


def _from_mapping(reference: Mapping[str, Any]) -> TestSuite:
    kinds = [key for key in ("tests", "cases", "inputs") if key in reference]
    if len(kinds) != 1:
        found = ", ".join(sorted(map(str, reference))) or "nothing"
        raise ReferenceFormatError(
            "reference needs exactly one of 'tests', 'cases' or 'inputs'/'outputs' "
            f"(found keys: {found})"
        )
    if kinds == ["tests"]:
        tests = reference["tests"]
        if isinstance(tests, str):
            tests = [tests]
        setup = reference.get("setup") or ""
        if not isinstance(setup, str):
            raise ReferenceFormatError("reference 'setup' must be a string of code")
        return TestSuite(tests=tuple(_test_list(tests, prefix=setup)), setup=setup)
    if kinds == ["cases"]:
        cases = reference["cases"]
        if not isinstance(cases, list):
            raise ReferenceFormatError("reference 'cases' must be a list of {stdin, stdout}")
        return TestSuite(cases=tuple(_case(item, i) for i, item in enumerate(cases)))
    inputs, outputs = reference.get("inputs"), reference.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(
        outputs
    ):
        raise ReferenceFormatError("reference 'inputs' and 'outputs' must be lists of equal length")
    return TestSuite(
        cases=tuple(
            _case({"stdin": given, "stdout": wanted}, i)
            for i, (given, wanted) in enumerate(zip(inputs, outputs, strict=True))
        )
    )


def _from_list(items: list[Any]) -> TestSuite:
    if all(isinstance(item, str) for item in items):
        return TestSuite(tests=tuple(_test_list(items)))
    if all(isinstance(item, Mapping) for item in items):
        return TestSuite(cases=tuple(_case(item, i) for i, item in enumerate(items)))
    raise ReferenceFormatError(
        "a reference list holds either assert strings or {stdin, stdout} cases"
    )


def _test_list(tests: Any, prefix: str = "") -> list[str]:
    if not isinstance(tests, list) or not all(isinstance(test, str) for test in tests):
        raise ReferenceFormatError("reference 'tests' must be a list of strings of code")
    if prefix:
        return [f"{prefix}\n{test}" for test in tests]
    return list(tests)


def _text(value: Any, what: str, index: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value) + "\n"  # some datasets store lines
    raise ReferenceFormatError(f"case {index}: {what} must be a string, got {type(value).__name__}")


def _case(item: Any, index: int) -> IOCase:
    if not isinstance(item, Mapping):
        raise ReferenceFormatError(f"case {index} must be a mapping with stdin and stdout")
    given = item.get("stdin", item.get("input", ""))
    wanted = item.get("stdout", item.get("output"))
    if wanted is None:
        raise ReferenceFormatError(f"case {index} has no 'stdout' (or 'output')")
    return IOCase(_text(given, "stdin", index), _text(wanted, "stdout", index))
