"""The written forms that put two values in one answer (rewardkit.builtin.math.hedges),
beyond the golden cases in tests/cases/builtin/math_answer_hedges.cases.yaml: each form is
a hedge whichever value comes first and whichever the gold is, the same value twice is
not, and the reading stays cheap on any input."""

from __future__ import annotations

import time

import pytest

from rewardkit import Sample, get_reward
from rewardkit.builtin.math.hedges import one_value, several_values

FORMS = [
    "{a}|{b}", "{a} \\mid {b}", "{a}\\sim {b}", "{a}~{b}", "{a} \\atop {b}", "{{{a} \\atop {b}}}",
    "\\substack{{{a}\\\\{b}}}", "\\stackrel{{{a}}}{{{b}}}", "\\overset{{{a}}}{{{b}}}",
    "\\begin{{cases}}{a}\\\\{b}\\end{{cases}}", "\\begin{{pmatrix}}{a} & {b}\\end{{pmatrix}}",
    "\\begin{{array}}{{c}}{a}\\\\{b}\\end{{array}}", "\\rlap{{{a}}}{b}", "\\phantom{{{a}}}{b}",
    "\\textcolor{{white}}{{{a}}}{b}", "\\textcolor{{red}}{{{a}}}{b}", "{{\\color{{white}}{a}}}{b}",
    "{a} \\\\ {b}", "{a}\\hspace{{-1em}}{b}", "\\color{{white}}{a}\\color{{black}}{b}",
    "{{\\tiny {a}}}{b}", "{a} \\big| {b}", "\\mathcolor{{white}}{{{a}}}{b}", "{a} \\,|\\, {b}",
    "{a}\\!\\!\\!\\!{b}", "{a}\\newline {b}", "\\textcolor[rgb]{{1,1,1}}{{{a}}}{b}",
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("a", "b"), [("17", "18"), ("18", "17"),
                                      ("\\frac{1}{2}", "\\frac{1}{3}")])
def test_each_form_is_a_hedge_whichever_value_comes_first(form: str, a: str, b: str) -> None:
    assert several_values(form.format(a=a, b=b), "boxed") != ""


@pytest.mark.parametrize("form", FORMS)
def test_the_same_value_twice_is_one_value(form: str) -> None:
    assert several_values(form.format(a="18", b="18"), "boxed") == ""


@pytest.mark.parametrize("form", ["{a}|{b}", "{a} \\atop {b}", "\\rlap{{{a}}}{b}"])
def test_math_answer_pays_neither_value(form: str) -> None:
    reward = get_reward("math_answer")()
    completion = "So $\\boxed{" + form.format(a="17", b="18") + "}$."
    for gold in ("17", "18"):
        score = reward.score(Sample(completion=completion, reference=gold))
        assert score.value == 0.0 and score.reason, (gold, score)


@pytest.mark.parametrize("answer", [
    "18", "x = 18", "|-18|", "|x - 1|", "P(A|B) = \\frac{1}{2}", "18~\\text{socks}", "1~000",
    "\\textcolor{red}{18}", "\\frac{\\textcolor{red}{3}}{4}", "\\overset{?}{=} 18",
    "\\begin{aligned} x &= 9 \\cdot 2 \\\\ &= 18 \\end{aligned}",
    "\\begin{cases} 18 & x > 0 \\end{cases}",
])
def test_one_value_is_not_a_hedge(answer: str) -> None:
    assert several_values(answer, "boxed") == ""


def test_an_absolute_value_equation_is_two_values_unless_asked_for() -> None:
    assert several_values("|x| = 18", "boxed") != ""
    assert several_values("\\left|x\\right| = 18", "boxed") != ""
    assert several_values("|z| = 5", "boxed", "Find $|z|$ for $z = 3+4i$.") == ""


def test_lines_split_values_only_in_one_formula() -> None:
    assert several_values("**17**\n\n**18**", "bare") != ""
    assert several_values("Janet buys 9 pairs\n18", "answer_tag") == ""


@pytest.mark.parametrize("gold, single", [
    ("18", True), ("\\frac{1}{2}", True), ("\\{1, 2\\}", False), ("(0, 1]", False),
    ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", False), ("x = 2 \\text{ or } x = 5", False),
    ("1 \\pm \\sqrt{2}", False),
])
def test_one_value_golds(gold: str, single: bool) -> None:
    assert one_value(gold) is single


@pytest.mark.parametrize("text", [
    "17|" * 200_000, "\\begin{cases}" * 50_000, "\\rlap{" * 100_000, "{" * 1_000_000 + "|",
    "\\atop 1 " * 100_000,
])
def test_reading_stays_cheap_on_any_input(text: str) -> None:
    start = time.process_time()  # CPU: the cost, whatever the machine's load
    several_values(text, "boxed")
    several_values(text[:4999], "boxed")
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize("text", [
    "\\framebox{17}", "\\framebox{17} \\boxed{18}", "\\colorbox{yellow}{17}\n**18**",
    "**17**", "**17**\n\n**18**", "\\textbf{17}\n\n18", "\\fcolorbox{a}{b}{17}",
    "The answer is 17.\n\\shadowbox{18}", "#### 17\n\\textbf{18}",
])
def test_the_cheap_count_of_statements_never_undercounts(text: str) -> None:
    from rewardkit.builtin.math import commitment as _commitment
    from rewardkit.builtin.math.extraction import STATEMENTS

    kinds = _commitment.statement_kinds(STATEMENTS)
    marks = _commitment.statement_marks(text, kinds, "answer")
    assert marks >= min(2, len(_commitment.final_statements(text, kinds, "answer")))
