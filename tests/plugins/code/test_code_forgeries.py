"""code_execution's assert-test verdict cannot be forged from inside the candidate program.

The forgeries are the golden cases of tests/cases/code/code_execution_forgeries.cases.yaml
(run there in pass_fraction mode); here each is replayed in binary and partial mode, and
the honest programs that the judge/candidate split must keep paying (in-place mutation,
expected exceptions, generators, callbacks, objects, state between calls) are checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rewardkit_code import CodeExecution

from rewardkit import Sample, Score, Status

FORGERIES = Path(__file__).parents[2] / "cases" / "code" / "code_execution_forgeries.cases.yaml"
CASES = yaml.safe_load(FORGERIES.read_text())["cases"]
PARTIAL = {"mode": "partial", "compiles_value": 0.1, "runs_value": 0.2, "pass_value": 1.0}


def grade(program: str, tests: Any, **params: Any) -> Score:
    completion = f"```python\n{program}\n```"
    params.setdefault("timeout_s", 2)
    return CodeExecution(params).grade(Sample(completion=completion, reference=tests))


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_a_forgery_is_not_paid_in_binary_mode(case: dict[str, Any]) -> None:
    score = CodeExecution({"mode": "binary", "timeout_s": 2}).grade(
        Sample(completion=case["completion"], reference=case["reference"]))
    assert (score.status, score.value) == (Status.OK, 0.0), score.reason


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_a_forgery_earns_at_most_its_stage_in_partial_mode(case: dict[str, Any]) -> None:
    score = CodeExecution({**PARTIAL, "timeout_s": 2}).grade(
        Sample(completion=case["completion"], reference=case["reference"]))
    assert score.status is Status.OK
    assert score.value is not None and score.value <= PARTIAL["runs_value"], score.reason


def test_a_forgery_reason_says_what_the_judge_refused() -> None:
    always_equal = next(case for case in CASES if case["name"] == "an always-equal object")
    score = CodeExecution({"timeout_s": 2}).grade(
        Sample(completion=always_equal["completion"], reference=always_equal["reference"]))
    assert "not plain data" in score.reason


def test_a_fake_stage_token_with_a_syntax_error_earns_nothing() -> None:
    fake = "import sys\nprint('rewardkit-compiled-0123456789abcdef', file=sys.stderr)\ndef f(:"
    assert grade(fake, ["assert f() == 1"], **PARTIAL).value == 0.0


def test_a_fake_stage_token_from_a_wrong_program_earns_only_its_stage() -> None:
    fake = ("import sys\nprint('rewardkit-compiled-0123456789abcdef', file=sys.stderr)\n"
            "def f():\n    return 2\n")
    assert grade(fake, ["assert f() == 1"], **PARTIAL).value == 0.2


@pytest.mark.parametrize(
    ("program", "tests"),
    [
        pytest.param("def sort_in_place(xs):\n    xs.sort()",
                     ["xs = [3, 1, 2]\nassert sort_in_place(xs) is None\nassert xs == [1, 2, 3]"],
                     id="an argument mutated in place"),
        pytest.param("def fill(grid):\n    grid[0][0] = 9\n    grid.append([7])",
                     ["g = [[0, 1], [2]]\nrow = g[0]\nfill(g)\nassert g == [[9, 1], [2], [7]]\n"
                      "assert row is g[0]"],
                     id="a nested argument mutated in place keeps its identity"),
        pytest.param("def count(d, k):\n    d[k] = d.get(k, 0) + 1",
                     ["d = {}\ncount(d, 'a')\ncount(d, 'a')\nassert d == {'a': 2}"],
                     id="a dict argument updated"),
        pytest.param("def root(x):\n    if x < 0:\n        raise ValueError('negative')\n"
                     "    return x ** 0.5",
                     ["try:\n    root(-1)\nexcept ValueError as error:\n"
                      "    assert 'negative' in str(error)\nelse:\n    raise AssertionError",
                      "assert root(4) == 2.0"],
                     id="an expected exception"),
        pytest.param("class Empty(KeyError):\n    pass\n\ndef pop(d):\n    raise Empty('none')",
                     ["try:\n    pop({})\nexcept KeyError:\n    pass\nelse:\n    assert False"],
                     id="an exception subclass caught as its built-in base"),
        pytest.param("def evens(n):\n    for i in range(n):\n        if i % 2 == 0:\n"
                     "            yield i",
                     ["assert list(evens(7)) == [0, 2, 4, 6]", "assert sum(evens(5)) == 6",
                      "assert 4 in evens(10)"],
                     id="a generator"),
        pytest.param("def naturals():\n    n = 0\n    while True:\n        yield n\n        n += 1",
                     ["from itertools import islice\n"
                      "assert list(islice(naturals(), 3)) == [0, 1, 2]"],
                     id="an infinite generator read in part"),
        pytest.param("def apply(f, xs):\n    return [f(x) for x in xs]",
                     ["assert apply(lambda x: x * 2, [1, 2]) == [2, 4]",
                      "assert sorted([3, 1, 2], key=lambda x: apply(abs, [x])[0]) == [1, 2, 3]"],
                     id="a callable passed by the test"),
        pytest.param("def by_key(xs, key):\n    return sorted(xs, key=key)",
                     ["def neg(x):\n    return -x\nassert by_key([1, 3, 2], key=neg) == [3, 2, 1]"],
                     id="a keyword callable"),
        pytest.param("class Counter:\n    def __init__(self, start=0):\n        self.n = start\n"
                     "    def add(self, k=1):\n        self.n += k\n        return self.n",
                     ["c = Counter(5)\nc.add()\nassert c.add(2) == 8\nassert c.n == 8\n"
                      "c.n = 0\nassert c.add() == 1"],
                     id="an object of the program's class"),
        pytest.param("class Node:\n    def __init__(self, v, nxt=None):\n        self.v = v\n"
                     "        self.nxt = nxt\n\ndef length(node):\n    n = 0\n"
                     "    while node:\n        n += 1\n        node = node.nxt\n    return n",
                     ["assert length(Node(1, Node(2, Node(3)))) == 3"],
                     id="the program's objects passed back to it"),
        pytest.param("calls = 0\ndef tick():\n    global calls\n    calls += 1\n    return calls",
                     ["tick()\ntick()\nassert tick() == 3"],
                     id="global state between calls"),
        pytest.param("import math\ndef area(r):\n    return math.pi * r * r",
                     ["assert math.isclose(area(1), 3.14159, rel_tol=1e-4)"],
                     id="a module the program imported"),
        pytest.param("from collections import namedtuple, OrderedDict\n"
                     "P = namedtuple('P', 'x y')\n"
                     "def point():\n    return P(1, 2)\n"
                     "def table():\n    return OrderedDict(a=1)",
                     ["assert point() == (1, 2)", "assert table() == {'a': 1}"],
                     id="named tuples and ordered dicts arrive as plain data"),
        pytest.param("LIMIT = 10\ndef clamp(x):\n    return min(x, LIMIT)",
                     ["assert clamp(50) == LIMIT == 10"],
                     id="a plain value of the program"),
        pytest.param("def f():\n    return {1: [b'x', (2.5, 1j)], 'k': {frozenset({1})}}",
                     ["assert f() == {1: [b'x', (2.5, 1j)], 'k': {frozenset({1})}}"],
                     id="every plain type"),
        pytest.param("PRIMES = list(range(200_000))\ndef f():\n    return len(PRIMES)",
                     ["assert f() == 200_000\nassert 5 in PRIMES"],
                     id="a large global stays in the program and can still be read"),
        pytest.param("def f():\n    return None",
                     ["assert f() is None"],
                     id="None is None"),
    ],
)
def test_an_honest_program_is_paid(program: str, tests: list[str]) -> None:
    score = grade(program, tests, mode="binary")
    assert (score.status, score.value) == (Status.OK, 1.0), score.reason


@pytest.mark.parametrize(
    ("program", "tests", "reason"),
    [
        pytest.param("import os\ndef f():\n    os._exit(0)",
                     ["assert f() == 1"], "the program exited with code 0 during the test",
                     id="the candidate exits mid-call"),
        pytest.param("import os, signal\ndef f():\n    os.kill(os.getpid(), signal.SIGSEGV)",
                     ["try:\n    f()\nexcept BaseException:\n    pass"],
                     "the program was killed by SIGSEGV",
                     id="the candidate dies mid-call, even where the test catches everything"),
        pytest.param("def f():\n    while True:\n        pass",
                     ["assert f() == 1"], "timeout", id="the candidate hangs mid-call"),
        pytest.param("import os, signal\ndef f():\n    os.kill(-1, signal.SIGKILL)",
                     ["assert f() == 1"], "test 0 failed: AssertionError",
                     id="the candidate's kill(-1) does not reach the judge"),
        pytest.param("def f():\n    return object()",
                     ["assert f() == f()"], "not plain data", id="an object compared"),
        pytest.param("def f():\n    return [object()]",
                     ["assert f()"], "not plain data", id="an object in a list tested for truth"),
    ],
)
def test_a_candidate_that_fails_mid_call_fails_the_test(
    program: str, tests: list[str], reason: str
) -> None:
    score = grade(program, tests, mode="binary", timeout_s=1)
    assert (score.status, score.value) == (Status.OK, 0.0)
    assert reason in score.reason
