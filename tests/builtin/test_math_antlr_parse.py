"""How math_answer's calls run latex2sympy2_extended's parser
(rewardkit/builtin/math/antlr_parse.py): every text the token-pair filter turns away is one
the parser raises on, and every text parsed SLL first gives the parser's own object, on
rewardkit's cases, real competition answers and edited formulas; math-verify's answers
are the same; prose never reaches the parser."""

from __future__ import annotations

import random
from typing import Any

import pytest

math_verify = pytest.importorskip("math_verify")

from latex2sympy2_extended import latex2sympy2  # noqa: E402
from latex2sympy2_extended.gen.antlr4_13_2.PSParser import PSParser  # noqa: E402
from math_verify import parser  # noqa: E402
from sympy import srepr  # noqa: E402
from test_math_latex_reader import (  # noqa: E402
    _golden_texts,
    _handed_short,
    _identical,
    real_row_texts,
)

from rewardkit.builtin.math import antlr_parse  # noqa: E402
from rewardkit.builtin.math.latex_reader import reading_fast  # noqa: E402
from rewardkit.builtin.math.symbolic import load_math_verify  # noqa: E402


def _reading(latex: str) -> Any:
    """latex2sympy2_extended's reading as math-verify asks for it, or the exception."""
    try:
        return latex2sympy2.latex2sympy(latex, is_real=not parser.should_treat_as_complex(latex),
                                        convert_degrees=False, normalization_config=None)
    except Exception as exc:  # (the parser raises plain Exceptions)
        return exc


def _same(texts: set[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Each text read in math_answer's calls (turned away, or SLL first) gives what the
    parser's own way gives: the same object, or an exception where it raises. How many
    were turned away, read by SLL, read again by LL after SLL failed, and raised."""
    load_math_verify()
    resets: list[int] = []  # (one as a parser is made, one more before LL starts again)
    reset = PSParser.reset

    def counted(self: Any) -> None:
        resets.append(1)
        reset(self)

    monkeypatch.setattr(PSParser, "reset", counted)
    counts = {"turned away": 0, "SLL": 0, "LL again": 0, "raised": 0}
    for latex in sorted(texts):
        theirs = _reading(latex)
        del resets[:]
        with reading_fast():
            mine = _reading(latex)
        if isinstance(mine, antlr_parse.NotInGrammar):
            counts["turned away"] += 1
            assert isinstance(theirs, Exception), latex
        elif isinstance(theirs, Exception):
            counts["raised"] += 1
            assert isinstance(mine, Exception), latex
        else:
            counts["LL again" if len(resets) > 1 else "SLL"] += 1
            assert not isinstance(mine, Exception), (latex, mine)
            assert _alike(mine, theirs), latex
    return counts


def _alike(mine: Any, theirs: Any) -> bool:
    """The same object (matrices, which have no ``args``, compared by type and print)."""
    if hasattr(mine, "args"):
        return _identical(mine, theirs)
    return type(mine) is type(theirs) and mine == theirs and srepr(mine) == srepr(theirs)


def test_tables_come_from_the_grammar() -> None:
    tables = antlr_parse.token_tables(PSParser)
    assert tables is not None
    start, follow, nested = tables
    assert start and not start & 1  # (no sentence is empty)
    assert len(follow) == PSParser.atn.maxTokenType + 2
    # every token but the end of input is followed by something; some pairs are refused
    assert sum(1 for bits in follow[1:] if bits) > 100
    assert any(bits != follow[1] for bits in follow[1:])
    assert antlr_parse.token_tables(int) is None  # not an ANTLR parser: nothing refused
    assert (PSParser.L_BRACE, PSParser.R_BRACE) in nested
    assert (PSParser.L_FLOOR, PSParser.R_FLOOR) in nested
    # parentheses and brackets are not nested pairs of this grammar: intervals mix them
    assert (PSParser.L_PAREN, PSParser.R_PAREN) not in nested
    assert (PSParser.L_BRACK, PSParser.R_BRACK) not in nested
    assert not isinstance(_reading("(0,1]"), Exception)


#: texts with a bracket closed that is not open, or left open (the first three are what
#: math-verify cut from real answers of benchmarks/bench_math_symbolic.py's batch)
_UNCLOSED = ["{2\\sqrt{7}", "{\\frac{4\\sqrt{29}", "{y = e^{-x}", "\\frac{1}{2}}",
             "x^{2", "}x{", "\\lfloor x", "x \\rfloor", "\\{1, 2", "1, 2\\}",
             "\\frac{\\lfloor x}{2}", "\\lceil\\frac{1}{2}\\rceil}"]


def test_unclosed_brackets_are_turned_away() -> None:
    load_math_verify()
    for latex in _UNCLOSED:
        assert isinstance(_reading(latex), Exception), latex  # the parser raises on it
        with reading_fast(), pytest.raises(antlr_parse.NotInGrammar):
            latex2sympy2.latex2sympy(latex, normalization_config=None)
    for latex in ["{2\\sqrt{7}}", "x^{2}", "\\lfloor x \\rfloor", "\\{1, 2\\}"]:
        theirs = _reading(latex)  # closed as they should be, they are read as the parser does
        with reading_fast():
            mine = _reading(latex)
        assert not isinstance(mine, Exception) and _alike(mine, theirs), latex


def test_reads_as_the_parser_on_golden_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = _same(_handed_short(_golden_texts()), monkeypatch)
    assert counts["turned away"] > 30 and counts["SLL"] > 200, counts


def test_reads_as_the_parser_on_real_competition_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = _same(_handed_short(real_row_texts()), monkeypatch)
    assert counts["turned away"] > 10 and counts["SLL"] > 50, counts


_EDITS = [*".,;:()[]{}|=+-*/^_!'<> ab1\\", "\\frac", "\\sqrt", "\\le", "\\cup", "\\in",
          "\\text{ and }", "\\\\", "&", "$", "%"]


def test_reads_as_the_parser_on_edited_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    """Formulas the parser reads, each edited once (a piece inserted, a character dropped
    or two swapped): the texts nearest to sentences, where a loose table would show."""
    rng = random.Random(7)
    readable = [t for t in sorted(_handed_short(_golden_texts()))
                if not isinstance(_reading(t), Exception)]
    edited: set[str] = set()
    while len(edited) < 500:
        text = rng.choice(readable)
        at = rng.randrange(len(text) + 1)
        kind = rng.randrange(3)
        if kind == 0:
            edited.add(text[:at] + rng.choice(_EDITS) + text[at:])
        elif kind == 1 and at < len(text):
            edited.add(text[:at] + text[at + 1:])
        elif at + 1 < len(text):
            edited.add(text[:at] + text[at + 1] + text[at] + text[at + 2:])
    counts = _same(edited, monkeypatch)
    assert counts["turned away"] > 50 and counts["SLL"] > 100, counts


_PROSE = [
    "The exact value of e requires further calculation.",
    "answer: The solution involves finding the recurrence relation for the coefficients.",
    "There are no values of a , b that satisfy the given equation.,",
]


def test_prose_never_reaches_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    load_math_verify()
    calls: list[str] = []
    original = PSParser.math

    def counted(self: Any) -> Any:
        calls.append("math")
        return original(self)

    monkeypatch.setattr(PSParser, "math", counted)
    for text in _PROSE:
        assert isinstance(_reading(text), Exception)
    assert len(calls) == len(_PROSE)  # (outside math_answer's calls: parsed as before)
    calls.clear()
    with reading_fast():
        for text in _PROSE:
            with pytest.raises(antlr_parse.NotInGrammar):
                latex2sympy2.latex2sympy(text, normalization_config=None)
    assert calls == []


def test_math_verify_answers_the_same_with_the_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    mv = load_math_verify()
    outputs = [
        *_PROSE, "So the answer is $\\frac{1}{2}\\maxA+3$.",
        "The final answer is $\\boxed{2,\\,3}$.",
        "We get $x = 4$, hence $y=5$.", "Answer: all $n$ with $n \\ge 2$ and $n$ odd.",
        "The sum of the series is 2.", "$\\lambda\\ge\\frac{1}{n-1}$ exactly when n > 2.",
    ]

    def answers() -> list[Any]:
        got = []
        for text in outputs:
            parser.extract_latex.cache_clear()
            parser.parse_latex_cached.cache_clear()
            with reading_fast():
                got.append(mv.parse(text, parsing_timeout=None))
        return got

    filtered = answers()
    monkeypatch.setattr(antlr_parse, "check", lambda _parser: None)
    unfiltered = answers()
    for text, mine, theirs in zip(outputs, filtered, unfiltered, strict=True):
        assert len(mine) == len(theirs), text
        for a, b in zip(mine, theirs, strict=True):
            assert a == b if isinstance(a, str) else _identical(a, b), text
    assert sum(len(got) == 0 for got in filtered) >= 3  # (prose: no answer either way)
