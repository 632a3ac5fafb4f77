"""math_answer's parameters (:class:`MathParams`) and its extraction strategies.

Apart from :mod:`rewardkit.builtin.math` because the reward, its exact fast path
(:mod:`~rewardkit.builtin.math.fast_path`) and the reading of its samples all take them, and
the fast path must not import the reward's module (math.py calls the fast path).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rewardkit.authoring import Params

Strategy = Literal[
    "answer_tag", "boxed", "hashes", "closing", "bare", "math_span", "last_number"
]
_ALL_STRATEGIES: tuple[Strategy, ...] = (
    "answer_tag", "boxed", "hashes", "closing", "bare", "math_span", "last_number"
)


class MathParams(Params):
    """Parameters of math_answer."""

    extract: list[Strategy] = Field(
        default_factory=lambda: list(_ALL_STRATEGIES),
        min_length=1,
        description="where to look for a plain-number answer, in order; the first strategy "
        "that finds something decides: answer_tag (last <answer> block), boxed (last "
        "\\boxed{}), hashes (the last '####' line), closing (a closing line 'A: 18' / "
        "'Final Answer: ...' or 'The answer is 18'), bare (the whole output is only an "
        "answer, e.g. '\\frac{3}{4}' or 'x = 3'), math_span (last $...$ or \\(...\\)), "
        "last_number (last number in the text)",
    )
    answer_tag: str = Field("answer", description="name of the answer tag")
    reasoning_tag: str | None = Field(
        None,
        description="name of the reasoning tag of a reasoning model (e.g. 'think'): grade "
        "only what follows the last closing </tag>, and pay `wrong` when the reasoning "
        "never closes; None grades the whole output, less a <think> block (what follows "
        "the last </think>; an output that opens <think> and never closes it pays `wrong`)",
    )
    occurrence: Literal["last", "first"] = Field(
        "last",
        description="which occurrence a strategy takes: last (chat models answer at the end) "
        "or first (few-shot base models go on to invent new questions after answering)",
    )
    abs_tol: float = Field(1e-6, ge=0, description="numbers match within this absolute error")
    rel_tol: float | None = Field(
        None, ge=0, description="... or within this error relative to the gold value; "
        "unset: 1e-9 for decimals and none for two whole numbers (exact within abs_tol: "
        "1000000000001 is not 10^12); a value you set applies to every pair, whole "
        "numbers included (a 1% tolerance pays 301 for 300)"
    )
    decimal_comma: bool = Field(
        False,
        description="numbers use a decimal comma ('1,22' is 1.22; '.' and spaces separate "
        "thousands), as in most of Europe",
    )
    symbolic: bool = Field(
        True,
        description="compare answers that are not plain numbers with math-verify + sympy; "
        "false: plain numbers only (a non-numeric answer is wrong)",
    )
    choice: bool = Field(
        True,
        description="a gold that is one option letter A-J (`B`, `(B)`) is graded as "
        "multiple_choice grades it: `B) 2x(x-7)` and, when the sample lists the options, "
        "the option's value are right, several options named is wrong",
    )
    max_symbolic_chars: int = Field(
        1000, gt=0, description="longer extracted answers are not parsed symbolically (they "
        "are wrong)",
    )
    symbolic_timeout: float = Field(
        7.0, gt=0, le=3600,
        description="CPU seconds the symbolic grading of one sample may take all together "
        "(math-verify's parses and comparisons, sympy's simplification; the grading "
        "thread's CPU time, so a loaded machine does not change a verdict), inline or in a "
        "worker; past it the sample is `wrong`, not shown equal (as math-verify's own 5 s "
        "timeout counts it), with the reason 'symbolic grading ran past symbolic_timeout', "
        "instead of a timeout that masks it; keep it below the component's timeout (10 s "
        "by default: the other 3 s are for reading the output and a worker's first import "
        "of sympy)",
    )
    score: float = Field(1.0, description="value of a correct answer")
    wrong: float = Field(0.0, description="value of a wrong or missing answer")
