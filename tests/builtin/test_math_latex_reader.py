"""math_answer's hand-written LaTeX reader (issue 42 item 1) gives, text for text, the very
sympy object latex2sympy2_extended gives (the parser math-verify calls), or declines:
checked on every LaTeX text math-verify hands its parser while reading the short (up to
60 characters) golds and outputs of the golden cases (tests/cases/builtin/
math_answer*.yaml), of bench_math's own pairs and of the real competition rows of
bench_math_symbolic when their copies are on this machine, and on random formulas of the
subset."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

math_verify = pytest.importorskip("math_verify")

from latex2sympy2_extended.latex2sympy2 import latex2sympy  # noqa: E402
from math_verify import parser  # noqa: E402
from sympy import srepr  # noqa: E402

from rewardkit.builtin.math.cost_guards import too_costly  # noqa: E402
from rewardkit.builtin.math.latex_reader import read_latex, reading_fast  # noqa: E402
from rewardkit.builtin.math.symbolic import load_math_verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MIRRORS = Path(os.environ.get("REWARDKIT_MIRRORS", "/work/.mirror"))


def _parser_reading(latex: str) -> Any:
    """latex2sympy2_extended's reading, as math-verify calls it; the exception's type
    when it cannot read the text."""
    try:
        return latex2sympy(latex, is_real=not parser.should_treat_as_complex(latex),
                           convert_degrees=False, normalization_config=None)
    except Exception as exc:  # (the parser raises plain Exceptions)
        return type(exc)


def _identical(mine: Any, theirs: Any) -> bool:
    """The same object: same class, equal (argument order and symbol assumptions
    included) and printed alike."""
    return (type(mine) is type(theirs) and mine == theirs and mine.args == theirs.args
            and srepr(mine) == srepr(theirs))


def _check(texts: set[str]) -> int:
    """Each text read by hand is read as the parser reads it; how many were read."""
    read = 0
    for latex in sorted(texts):
        mine = read_latex(latex, not parser.should_treat_as_complex(latex))
        if mine is None:
            continue
        read += 1
        theirs = _parser_reading(latex)
        assert _identical(mine, theirs), (latex, srepr(mine), theirs)
    return read


def _handed_to_parser(texts: list[str]) -> set[str]:
    """The LaTeX texts math-verify hands its parser while reading ``texts`` (each as an
    answer, ``$text$``, and as a whole output), with its own parser."""
    load_math_verify()
    original = getattr(parser.parse_latex_cached, "__wrapped__", parser.parse_latex_cached)
    seen: set[str] = set()

    def recording(latex: str) -> Any:
        seen.add(latex)
        return original(latex)

    saved = parser.parse_latex_cached
    parser.parse_latex_cached = recording
    try:
        for text in texts:
            for candidate in (f"${text}$", text):
                parser.extract_latex.cache_clear()
                math_verify.parse(candidate, parsing_timeout=None)
    finally:
        parser.parse_latex_cached = saved
    return seen


def _golden_texts() -> list[str]:
    texts = []
    for path in sorted((ROOT / "tests" / "cases" / "builtin").glob("math_answer*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]:
            for key in ("reference", "completion"):
                if isinstance(case.get(key), str):
                    texts.append(case[key])
    for line in (ROOT / "benchmarks" / "data" / "math_pairs.jsonl").read_text(
            encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            texts += [row["gold"], row["pred"]]
    return texts


#: the longest answer text sent through math-verify's extraction in the two tests below
#: (their whole outputs handed every span to the ANTLR parser: over 10 minutes)
_SHORT = 60


def _handed_short(texts: list[str]) -> set[str]:
    """The LaTeX texts math-verify hands its parser while reading the short ``texts`` (each
    as an answer, ``$text$``, and as written), not parsed there: the reader's reading or a
    refusal is handed back, so only the texts the reader reads meet the ANTLR parser, in
    :func:`_check`. Texts math_answer refuses as too costly for sympy are left out, as
    math_answer leaves them (``\\binom{10000000}{5000000}`` takes minutes either way)."""
    load_math_verify()
    seen: set[str] = set()

    def recording(latex: str) -> Any:
        seen.add(latex)
        value = read_latex(latex, not parser.should_treat_as_complex(latex))
        if value is None:
            raise ValueError("declined")  # (math-verify moves on, as on a parse error)
        return value

    saved = parser.parse_latex_cached
    parser.parse_latex_cached = recording
    try:
        for text in sorted({t for t in texts if len(t) <= _SHORT and not too_costly(t, _SHORT)}):
            for candidate in (f"${text}$", text):
                parser.extract_latex.cache_clear()
                math_verify.parse(candidate, parsing_timeout=None)
    finally:
        parser.parse_latex_cached = saved
        parser.extract_latex.cache_clear()
    return seen


def test_reads_as_the_parser_on_the_short_golden_cases_and_own_pairs() -> None:
    handed = _handed_short(_golden_texts())
    assert len(handed) > 300
    assert _check(handed) > 150


def real_row_texts() -> list[str]:
    """The golds and completions of bench_math_symbolic's real batch (40 golds of each
    source, seed 21), read from the local copies; the test skips without them."""
    omni = MIRRORS / "arka-ritual+omni-math-rule-ca" / "repo"
    odyssey = MIRRORS / "protagolabs+odyssey-math" / "repo"
    if not (omni.exists() and odyssey.exists()):
        pytest.skip("copies of omni-math-rule-ca and odyssey-math are not on this machine")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_math_symbolic as bench

    rng = random.Random(21)
    rows = bench.omni_batch(omni, 40, rng) + bench.odyssey_batch(odyssey, 40, rng)
    return sorted({r.gold for r in rows} | {r.completion for r in rows})


def test_reads_as_the_parser_on_short_real_competition_rows() -> None:
    handed = _handed_short(real_row_texts())
    assert len(handed) > 100
    assert _check(handed) > 50


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _formula(rng: random.Random, depth: int = 0) -> str:
    def atom() -> str:
        r = rng.random()
        if r < 0.3 or depth > 2:
            return str(rng.choice([0, 1, 2, 3, 10, 12, 2018, rng.randint(0, 99999)]))
        if r < 0.35:
            return f"{rng.randint(0, 99)}.{rng.randint(0, 999)}"
        if r < 0.55:
            return rng.choice(_LETTERS)
        if r < 0.62:
            return rng.choice(["\\pi", "\\infty", f"\\binom{{{rng.randint(0, 12)}}}{{3}}"])
        if r < 0.68:
            return rng.choice([
                "e", "e^{" + _formula(rng, depth + 1) + "}", "e^" + rng.choice("2nx"), "e^\\pi",
                "\\ln(" + _formula(rng, depth + 1) + ")", "\\ln " + _formula(rng, depth + 1),
                "\\ln" + rng.choice(["2", "{x}", "^2 x", " -x", " x / 2", " \\ln x"]),
                "\\lfloor " + _formula(rng, depth + 1) + " \\rfloor"])
        if r < 0.74:
            return f"\\frac{{{_formula(rng, depth + 1)}}}{{{_formula(rng, depth + 1)}}}"
        if r < 0.82:
            return f"\\sqrt{{{_formula(rng, depth + 1)}}}"
        if r < 0.92:
            return f"({_formula(rng, depth + 1)})"
        return atom() + "!"

    def power() -> str:
        base = atom()
        if rng.random() < 0.2:
            base += "^" + rng.choice(["2", "n", "{-1}", "\\pi", "23",
                                      "{" + _formula(rng, depth + 1) + "}"])
        return base

    def term() -> str:
        sign = rng.choice(["", "", "", "-", "+", "- "])
        return sign + rng.choice(["", " "]).join(power() for _ in range(rng.choice([1, 1, 2, 3])))

    out = term()
    for _ in range(rng.choice([0, 0, 1, 2])):
        out += rng.choice(["+", "-", " - ", "\\cdot ", "\\times ", "*", "/", "\\div "]) + term()
    return out


def _top(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return _formula(rng)
    body = rng.choice([",", ", "]).join(_formula(rng, 1) for _ in range(rng.choice([2, 2, 3])))
    r = rng.random()
    if r < 0.3:
        return body
    if r < 0.5:
        return "\\{" + body + "\\}"
    return rng.choice("([") + body + rng.choice(")]")


def test_reads_as_the_parser_on_random_formulas() -> None:
    rng = random.Random(42)
    texts = {_top(rng) for _ in range(600)}
    assert _check(texts) > 80


def test_reads_lists_of_numbers_as_the_parser() -> None:
    """Numbers before a comma (``(0,1/2)``, ``(106.44, 109.12)``, ``1,2``) are items of a
    list to the parser, except a whole text in the thousands shape (``1,234``: a number)."""
    rng = random.Random(7)
    items = ["0", "-1", "x", "e", "2018", "12345", "106.44", "\\frac{1}{2}", "\\ln 2", "3"]
    texts = set()
    for _ in range(300):
        body = "".join(rng.choice(items) + rng.choice([",", ", ", " ,"])
                       for _ in range(rng.choice([1, 1, 2, 3]))) + rng.choice(items)
        texts.add(rng.choice(["", "(", "[", "\\{"]) + body + rng.choice(["", ")", "]", "\\}"]))
    assert _check(texts) > 50


@pytest.mark.parametrize("latex", [
    "\\pi(37)", "\\pi (x)", "f(x)", "x (y)", "1,234", "-1,234", "2 3", "x1", "2e3",
    "2e", "dx", "\\frac{1}{dx}", "\\sqrt[3]{2}", "2^{3}^{4}", "(1,2),(3,4)",
    "1.5.2", "p^{-1} (7)", "\\pi^2(x)", "\\ln^2 x", "\\frac12", "3 \\%", "", "e^{x}^{2}",
    "e(x)", "e^e", "\\ln x / 2", "\\ln x \\ln y", "\\ln{x} y", "\\ln x \\cdot 2",
    "\\lfloor x",
    # a transpose, a run of letters the lexer reads as one name, a differential, ``I``
    "x^T", "x^{T}", "trace", "x tr", "ones", "SVD", "Tr", "eig", "beige", "dp", "I", "Ix",
    "\\ln 2\\sqrt{3}", "\\ln x\\sqrt{3}", "x<=1", "x->1",
    # subscripts other than digits or one letter, or before a parenthesis
    "a_1(x)", "x_{n+1}", "x_1.5", "x_{1}_{2}", "x^2_1",
    # chained relations, relations in a list or a set, unknown relations
    "x=y=z", "1<x<2", "x=1, y=2", "0<<1", "k\\leqslant 2", "\\{x=1\\}",
    # bars other than one ``|...|`` pair, or after a factor
    "2|x|", "||x||", "|x|-|y|",
])
def test_declines_what_the_parser_reads_by_context(latex: str) -> None:
    assert read_latex(latex) is None


@pytest.mark.parametrize("latex", [
    "2\\frac{1}{2}", "-2\\frac{1}{2}", "(1)(2)", "\\{x, 2\\}", "(y, x)", "[x, x]", "(x, x)",
    "[x, \\pi, 2]", "(-\\infty, x]", "(x, y)", "\\frac{1}{2}, x", "-\\frac{9\\sqrt{31}}{15}",
    "2 \\cdot 3 x", "2/3 x", "\\binom{34}{9}",
    "3^5", "0.4330127018922193", "-(8)", "x - 2 - 3", "-x^2", "\\frac{4\\sqrt{5}}{7}\\pi",
    "e", "e^{2}", "e^{0}", "e^{1}", "-e^{-x}", "\\frac{1}{2} e^{-1}", "e^{2}!", "\\sqrt{e}",
    "\\ln x", "\\ln(x)+1", "\\ln 2x + 1", "\\ln x^2 y", "\\ln(2)^2", "\\ln (x) (y)",
    "2 \\ln x+3 \\ln (y^{2}-z)-\\frac{1}{2} \\ln (y+1)", "\\ln\\sqrt{3}", "\\ln e",
    "\\lfloor\\frac{2n}{3}\\rfloor+1", "\\lfloor x \\rfloor^2", "\\lfloor x \\rfloor (2)",
    "(0,1/2)", "(106.44, 109.12)", "(1,\\frac{1}{2})", "1,2", "(12,345,6)",
    "xy", "i", "xe", "To be", "constant", "2x y", "ab^2", "x\\pi y",
    "a_1", "x_12", "a_{1998}=3^{1998}", "X_{N}^2", "x=1", "y = e^{-x}", "k<\\frac{27}{8}",
    "a > 0", "x\\le 2", "k\\geq\\frac{1}{2}", "|V|^{2016}", "|x|y+1", "(99)!\\,2^{50}",
    "3! = x", "\\dbinom{2017}{1677}\\cdot\\frac{1}{2^{2017}}", "\\tbinom{5}{2}",
])
def test_reads_forms_the_parser_reads_its_own_way(latex: str) -> None:
    mine = read_latex(latex, not parser.should_treat_as_complex(latex))
    assert mine is not None
    assert _identical(mine, _parser_reading(latex)), latex


def test_only_math_answers_own_calls_read_by_hand() -> None:
    """Installed, the reader serves math_answer's calls; math-verify called directly
    still runs its own parser (the same answer either way)."""
    mv = load_math_verify()
    assert getattr(parser.parse_latex_cached, "_rewardkit_reader", False)
    read_latex.cache_clear()
    plain = mv.parse("$\\frac{1}{2}+x$", parsing_timeout=None)
    assert read_latex.cache_info().currsize == 0
    parser.extract_latex.cache_clear()
    with reading_fast():
        fast = mv.parse("$\\frac{1}{2}+x$", parsing_timeout=None)
    assert read_latex.cache_info().currsize == 1
    assert _identical(plain[0], fast[0]) and plain[1] == fast[1]


#: letters of the lexer's own names (``tr``, ``svd``, ``ones``, ``rows``, ``gcd``, ...) come up
#: often, so that runs holding one of them, or nearly, are drawn
_WORD_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" + "trsvonelcmgwkaie" * 2


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_WORD_LETTERS) for _ in range(rng.choice([1, 2, 2, 3, 4, 5, 8])))


def _greek(rng: random.Random) -> str:
    return "\\" + rng.choice(["alpha", "lambda", "theta", "varphi", "mu", "gamma", "Delta",
                               "omega", "epsilon", "Gamma", "pi"]) + rng.choice(
        ["", "", " ", "_1", "_{n}", "^2", "(x)"])


def _extended(rng: random.Random, depth: int = 0) -> str:
    """A formula of the subset with runs of letters (words, ``xy``), subscripts, one
    ``|...|`` and thin spaces."""
    r = rng.random()
    if r < 0.25:
        part = _word(rng)
    elif r < 0.4:
        part = rng.choice(_LETTERS) + "_" + rng.choice(
            ["1", "n", "{12}", "{1998}", "{k}", "N", "{N}", "0"])
        if rng.random() < 0.3:
            part += "^" + rng.choice(["2", "{n+1}", "k"])
    elif r < 0.5 and depth == 0:
        part = "|" + _extended(rng, depth + 1) + "|" + rng.choice(["", "^{2016}", "^2", " y"])
    elif r < 0.55:
        part = f"\\{rng.choice(['d', 't', ''])}binom{{{rng.randint(0, 30)}}}{{{rng.randint(0, 5)}}}"
    else:
        part = _formula(rng, 2)
    for _ in range(rng.choice([0, 0, 1, 2])):
        glue = rng.choice(["", " ", "\\,", "\\;", "+", "-", "\\cdot ", "/"])
        part += glue + rng.choice([_word(rng), _formula(rng, 2), "\\pi", "2", "x_1", _greek(rng)])
    return part


@pytest.mark.slow  # (about 300 parses by the ANTLR parser)
def test_reads_letter_runs_subscripts_and_bars_as_the_parser() -> None:
    """Runs of letters are products of one-letter symbols to the parser, except where its
    lexer reads a name (``trace``, ``ones``, ``SVD``, a differential ``dx``): each one read
    here is read as the parser reads it."""
    rng = random.Random(5)
    texts = {_extended(rng) for _ in range(300)}
    assert _check(texts) > 100


def test_reads_one_relation_as_the_parser() -> None:
    """One relation between two expressions (``=``, ``<``, ``>``, ``\\le``, ``\\geq``, ...)
    is the parser's unevaluated relation."""
    rng = random.Random(11)
    texts = set()
    for _ in range(250):
        relation = rng.choice(["=", " = ", "<", ">", "\\le ", "\\leq ", "\\ge ", "\\geq "])
        side = rng.choice([_formula, _extended])
        texts.add(side(rng) + relation + rng.choice([_formula, _extended])(rng))
    assert _check(texts) > 30


def _bracketed(rng: random.Random) -> str:
    pool = ["0", "1", "-2", "\\frac{1}{2}", "x", "+\\infty", "-\\infty", "\\sqrt{2}", "3.5", "a+b",
            "-\\frac{\\sqrt{2}}{2}", "\\pi", "2k"]
    items = rng.choice([",", ", "]).join(
        rng.choice(pool) if rng.random() < 0.8 else _formula(rng, 2)
        for _ in range(rng.choice([2, 2, 3])))
    return rng.choice(["(", "[", "\\{"]) + items + rng.choice([")", "]", "\\}"])


def test_reads_a_union_of_two_bracketed_lists_as_the_parser() -> None:
    """``(0, \\frac{1}{2}) \\cup (2, +\\infty)``: the parser's unevaluated union (a tuple in it
    a set); three or more pieces (its grouping is its own) are declined."""
    rng = random.Random(13)
    texts = {_bracketed(rng) + rng.choice(["\\cup", " \\cup "]) + _bracketed(rng)
             for _ in range(200)}
    assert _check(texts) > 15
    assert read_latex("(1,2)\\cup(3,4)\\cup(5,6)") is None
