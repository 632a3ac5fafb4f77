"""math_answer's exact fast path for symbolic answers (rewardkit.builtin.math.fast_path):
the same verdicts as the math-verify path, exact where exact values differ by a hair,
and each distinct answer of a batch graded once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import rewardkit.builtin.math.reward as builtin_math
from rewardkit import Sample, get_reward
from rewardkit.builtin.math import fast_path as _math_fast
from rewardkit.builtin.math import references as _references

math_verify = pytest.importorskip("math_verify")


def _boxed(answer: str) -> str:
    return f"We simplify and check both cases.\n\nThe final answer is $\\boxed{{{answer}}}$."


#: (reference, answer, right) over the shapes of competition answers
PAIRS = [
    ("2\\sqrt{5}", "\\sqrt{20}", True),
    ("2\\sqrt{5}", "4\\sqrt{5}", False),
    ("2\\sqrt{5}", "4.47", False),
    ("\\frac{1+\\sqrt{5}}{2}", "\\frac{\\sqrt5+1}{2}", True),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{3}{2\\sqrt{3}}", True),
    ("\\sqrt{2}", "\\sqrt{2}+10^{-20}", False),
    ("\\frac{2^{1009}}{2^{1009}+1009}", "\\frac{2^{1009}}{2^{1009}+2018}", False),
    ("2x^2+x-1", "(2x-1)(x+1)", True),
    ("2x^2+x-1", "2x^2-x-1", False),
    ("12\\pi", "\\pi \\cdot 12", True),
    ("12\\pi", "37.7", False),
    ("\\frac{x+1}{2}", "(x+1)/2", True),
    ("y = -5x - 3", "y=-3-5x", True),
    ("y = -5x - 3", "y = 5x - 3", False),
    ("x^2+y^2=25", "y^2+x^2=25", True),
    ("x^2+y^2=25", "x^2-y^2=25", False),
    ("x^2+y^2=25", "x^2+y^2=5", False),
    ("(-\\infty, 3]", "\\left(-\\infty, 3\\right]", True),
    ("(-\\infty, 3]", "(-\\infty, 3)", False),
    ("[2, 5)", "[2, 5]", False),
    ("\\{1, 2, 5\\}", "\\{5, 2, 1\\}", True),
    ("\\{1, 2, 5\\}", "\\{1, 2\\}", False),
    ("(3, -1)", "(-1, 3)", False),
    ("(3, -1)", "\\left(3,-1\\right)", True),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
     "\\begin{pmatrix}1&2\\\\3&2+2\\end{pmatrix}", True),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
     "\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}", False),
    ("e^{2}", "e^2", True),
    ("e^{2}", "2e", False),
    ("e^{2}", "7.389", False),
    ("\\sin(x)", "\\sin(x)", True),  # outside the exact language: math-verify, once
]


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """math-verify's parse calls (the real parse, counted), with every cache emptied."""
    calls: list[str] = []
    real = math_verify.parse

    def counted(text: str, *args: object, **kwargs: object) -> object:
        calls.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(math_verify, "parse", counted)
    for fn in (_math_fast.exact_value, _math_fast.exact_compare, _math_fast.parse_gold_once,
               _math_fast.math_verify_verdict, _references._parsed_reference):
        fn.cache_clear()
    yield calls


@pytest.mark.parametrize(("gold", "answer", "right"), PAIRS)
def test_symbolic_answers_are_graded_exactly(gold: str, answer: str, right: bool) -> None:
    score = get_reward("math_answer")().score(Sample(completion=_boxed(answer), reference=gold))
    assert score.value == (1.0 if right else 0.0), score


@pytest.mark.parametrize(("gold", "answer", "right"), PAIRS)
def test_fast_path_gives_the_symbolic_paths_verdict(
        gold: str, answer: str, right: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    sample = Sample(completion=_boxed(answer), reference=gold)
    reward = get_reward("math_answer")()
    fast = reward.score(sample)
    monkeypatch.setattr(builtin_math, "fast_verdict", lambda sample, params: None)
    assert reward.score(sample).value == fast.value


def test_exact_answers_never_reach_math_verify(parse_calls: list[str]) -> None:
    reward = get_reward("math_answer")()
    for answer in ("\\frac{\\sqrt5+1}{2}", "1+\\sqrt{5}", "\\frac{1}{2}+\\frac{\\sqrt{5}}{2}"):
        reward.score(Sample(completion=_boxed(answer), reference="\\frac{1+\\sqrt{5}}{2}"))
    assert parse_calls == []


def test_each_distinct_answer_of_a_group_is_parsed_once(parse_calls: list[str]) -> None:
    """A group of 16 completions giving two answers outside the exact language: the
    reference and the other answer are parsed once, not once per completion (the answer
    written as the reference is equal to it unparsed)."""
    reward = get_reward("math_answer")()
    answers = ["\\sin(x)", "\\cos(x)"] * 8
    got = [reward.score(Sample(completion=f"Step {i}.\n\n" + _boxed(a),
                               reference="\\sin(x)")).value
           for i, a in enumerate(answers)]
    assert got == [1.0, 0.0] * 8
    assert parse_calls == ["$\\sin(x)$", "$\\cos(x)$"]  # the reference once, cos x once


def test_equations_with_other_solutions_are_told_apart_exactly() -> None:
    """A point on one curve and off the other, found in Q(sqrt): no sympy solve."""
    assert _math_fast.exact_compare("x^2+y^2=25", "x^2-y^2=25") is False
    assert _math_fast.exact_compare("x^2+y^2=25", "2x^2+2y^2=50") is True
    assert _math_fast.exact_compare("y=x^2", "y=x^3") is False
    # the same zero set, not proportional: left to math-verify
    assert _math_fast.exact_compare("x^2=0", "x=0") is None


def test_commitment_rules_still_decide() -> None:
    """Several boxes, a hedge, or a second final statement leave the exact path: the
    commitment rules refuse them as before."""
    reward = get_reward("math_answer")()
    two_boxes = "It is $\\boxed{\\sqrt{20}}$ or maybe $\\boxed{\\sqrt{5}}$."
    assert reward.score(Sample(completion=two_boxes, reference="2\\sqrt{5}")).value == 0.0
    hedge = "The final answer is $\\boxed{\\sqrt{20} \\text{ or } \\sqrt{5}}$."
    assert reward.score(Sample(completion=hedge, reference="2\\sqrt{5}")).value == 0.0


def test_costly_answers_are_refused_not_computed() -> None:
    reward = get_reward("math_answer")()
    score = reward.score(Sample(completion=_boxed("2^{2^{30}}"), reference="2\\sqrt{5}"))
    assert score.value == 0.0 and "power tower" in score.reason
    # past the exact language's bounds (a degree-40 power): math-verify decides
    assert _math_fast.exact_value("(x+1)^{40}") is None
    assert _math_fast.exact_value("\\sqrt{123456789012}") is None
    assert _math_fast.exact_value("(x+y+z)^{24}" * 5) is None  # too many terms


@pytest.mark.parametrize("text", ["ex", "x_1", "\\sin x", "1,000", "3 \\pm 1", "ab",
                                  "\\sqrt[3]{2}", "50\\%", "(1, 2) \\cup (3, 4)", ""])
def test_outside_the_exact_language_is_left_to_math_verify(text: str) -> None:
    assert _math_fast.exact_value(text) is None


def test_an_answer_written_as_the_reference_up_to_layout_is_equal_without_a_comparison() -> None:
    """Issue 42 item 1: ``\\dfrac`` for ``\\frac``, ``\\left( \\right)``, thin spaces and the
    reference's own delimiters are what math-verify's normalisation drops: such an answer is
    the reference as written, equal once the reference parses (no answer parse, no sympy)."""
    alike = _math_fast.written_alike
    assert alike(r"\dfrac{\sin x}{2}\left(x+1\right)", r"$\frac{\sin x}{2} (x+1)$.")
    assert alike(r"2\,\ln x", r"\[2 \ln x\]")
    assert not alike(r"\frac{\sin x}{3}", r"\frac{\sin x}{2}")
    assert not alike(r"\leftarrow x", r"arrow x")  # a command that starts like \left
    assert not alike(r"$a$ or $b$", r"a$ or $b")  # only delimiters around the whole answer
    reward = get_reward("math_answer")()
    for answer, value in ((r"\dfrac{\sin x}{2}", 1.0), (r"\dfrac{\sin x}{3}", 0.0)):
        score = reward.score(Sample(completion=_boxed(answer), reference=r"$\frac{\sin x}{2}$."))
        assert score.value == value, (answer, score)
