"""math_answer's bridge to math-verify: importing it, parsing, and where it misreads.

math-verify is imported on first use (``pip install 'rewardkit[math]'``; None when
missing) with its signal timeouts off (math_answer bounds its symbolic steps with
:mod:`~rewardkit.builtin.math.deadline`, in any thread). Answers are
rewritten into the LaTeX it reads where it misreads a form (``√2``, ``∞``, MATLAB
matrices, trailing phrases, units in a list), bare answers are parsed as one formula,
and two exact numbers it calls equal after rounding are checked exactly
(:func:`exactly_different`). Its LaTeX parser is bypassed for small formulas in
math_answer's own calls (:mod:`~rewardkit.builtin.math.latex_reader`: the same sympy
objects, read by hand). Shared by the reward's symbolic path and its exact fast
path.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from rewardkit.builtin.math.numbers import normalise

#: the longest tail of an output that math-verify reads
MAX_PARSED_REGION = 8000


def parse_output(mv: Any, text: str) -> list[Any]:
    """math-verify's parse of a model output with its default extraction (LaTeX anywhere,
    boxed first, then expressions and numbers), signals off."""
    from rewardkit.builtin.math.latex_reader import reading_fast  # (needs math-verify)

    with reading_fast():
        return list(mv.parse(text, parsing_timeout=None) or [])


def parse_answer(mv: Any, text: str, fallback: bool) -> list[Any]:
    """math-verify's parse of a bare answer, signals off (math_answer's symbolic_timeout is
    the guard): as written when it carries its own math delimiters, else as LaTeX math,
    then with decoration removed, then as free text."""
    mode = "first_match" if fallback else "no_fallback"
    text = cas_form(text)
    stripped = text.strip()
    delimited = stripped.startswith(("$", "\\(", "\\[")) or "\\boxed" in stripped
    candidates = [stripped] if delimited else [f"${stripped}$"]
    candidates += [f"${normalise(text)}$", text]
    from rewardkit.builtin.math.latex_reader import reading_fast  # (needs math-verify)

    with reading_fast():
        for candidate in candidates:
            got = mv.parse(candidate, fallback_mode=mode, parsing_timeout=None)
            if got:
                return list(got)
    return []


#: ``√2``, ``√{x+1}``, ``√(x+1)``: the root sign, which math-verify reads as nothing
_ROOT_SIGN = re.compile(r"√\s*(?:\{([^{}]*)\}|\(([^()]*)\)|(\d+(?:\.\d+)?|[A-Za-z]))")
#: a MATLAB-style matrix ``[1, 2; 3, 4]``: rows split by ``;``, entries by ``,``
_MATLAB_MATRIX = re.compile(r"\s*\$?\s*\[([^\[\]$]*;[^\[\]$]*)\]\s*\$?\s*\.?\s*")
#: a closing phrase after a formula (``(a, 1) for any positive integer a``) that names no
#: value of its own: no digit, no ``=``, no comma or ``;`` (``3 for odd n, 4 for even n``
#: keeps it all)
_TRAILING_PHRASE = re.compile(
    r"\s*(?:\\text\s*\{\s*)?(?<![\\A-Za-z])(?:for|where|when|with)\s[^=,;\d\\]*"
    r"(?:\}[^=,;\d\\{}]*)?$")
_ENGLISH_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox|textnormal)\s*\{[^{}]*\}")
#: a unit in words after a number (``40 \text{ chocolate candies}``): in a list of
#: quantities math-verify drops the units and reads the first value alone
_UNIT_AFTER_NUMBER = re.compile(
    r"(\d)\s*(?:\\[ ,;!]\s*)*\\(?:text|mbox|mathrm)\s*\{[^{}\d\\]*\}")


#: the longest answer cas_form rewrites
_MAX_REWRITTEN = 1000


def cas_form(answer: str) -> str:
    """An answer rewritten into the LaTeX math-verify reads, where it writes a value in a
    form math-verify misreads: the root sign ``√2`` (read as nothing, so ``4√2`` was 4),
    ``∞``, ``∪`` and ``∩`` (``(-∞, -3) ∪ (3, +∞)`` was not an interval),
    a MATLAB-style matrix (read as one flat tuple), a formula followed by a phrase that
    qualifies it (read as its last number), a list of quantities with units in words
    (read as its first value: the units are dropped). Anything else, and anything longer than an
    answer (the patterns would backtrack), is returned as it is."""
    if len(answer) > _MAX_REWRITTEN:
        return answer
    if "√" in answer:
        answer = _ROOT_SIGN.sub(
            lambda m: "\\sqrt{" + next(g for g in m.groups() if g is not None) + "}", answer)
    if "∞" in answer or "∪" in answer or "∩" in answer:  # read as nothing, like √
        answer = answer.replace("∞", "\\infty ").replace("∪", " \\cup ").replace("∩", " \\cap ")
    matrix = _MATLAB_MATRIX.fullmatch(answer)
    if matrix:
        rows = [[cell.strip() for cell in row.split(",")] for row in matrix.group(1).split(";")]
        if len({len(row) for row in rows}) == 1 and all(all(row) for row in rows):
            return ("\\begin{pmatrix}" + " \\\\ ".join(" & ".join(row) for row in rows)
                    + "\\end{pmatrix}")
    if "," in answer and "\\" in answer:  # a list of quantities: math-verify reads one
        units = _UNIT_AFTER_NUMBER.sub(r"\1", answer)
        if units != answer and not _LATEX_TEXT.search(units):
            answer = units
    phrase = _TRAILING_PHRASE.search(answer)
    if phrase and phrase.start() > 0:
        head = answer[: phrase.start()].strip()
        if head and not _ENGLISH_WORD.search(_LATEX_TEXT.sub(" ", head)):
            return head
    return answer


def is_bare_formula(answer: str) -> bool:
    """An answer that is a formula written without math delimiters and without words
    (``2x^2+x-1``, ``y = -5x - 3``), which math-verify would read only a number of."""
    return bool(answer) and not any(d in answer for d in ("$", "\\(", "\\[", "\\boxed")) \
        and not _ENGLISH_WORD.search(_LATEX_TEXT.sub(" ", answer))


def exactly_different(gold: list[Any], pred: list[Any], read: str) -> bool:
    """Whether two values math-verify calls equal are, written exactly, different
    numbers: math-verify compares numbers after rounding, which is right for decimals
    (``0.333``) and wrong for exact values that differ far past the sixth digit
    (``\\frac{2^{1009}}{2^{1009}+2018}`` is not ``\\frac{2^{1009}}{2^{1009}+1009}``,
    ``1+10^{-30}`` is not 1). Only exact numbers (no decimal, no variable) on both sides
    are checked: rationals exactly, other constants by evaluating their difference to
    as many digits as it takes to tell it from zero; a percent (in ``read``, the text
    math-verify read, or the gold) is left to math-verify, which reads 28% as 28 too."""
    import sympy

    if any(isinstance(v, str) and ("%" in v or "percent" in v) for v in (*gold, *pred, read)):
        return False  # math-verify reads 28% as 0.28 and as 28, on purpose
    g = next((v for v in gold if isinstance(v, sympy.Expr)), None)
    p = next((v for v in pred if isinstance(v, sympy.Expr)), None)
    if g is None or p is None or not (g.is_number and p.is_number):
        return False
    if g.atoms(sympy.Float) or p.atoms(sympy.Float):
        return False  # a decimal: the documented tolerance decides
    try:
        if not any(not power.exp.is_Integer for power in g.atoms(sympy.Pow) | p.atoms(sympy.Pow)):
            g, p = g.doit(), p.doit()  # math-verify leaves 2^{1009}+1009 unevaluated
        # (with a root, evaluating would have sympy factor the big numbers under it, for
        # seconds in one call that no deadline can cut: the difference is evaluated as is)
        if isinstance(g, sympy.Rational) and isinstance(p, sympy.Rational):
            return bool(g != p)
        # a nonzero difference evaluates to full precision however small it is; a zero
        # one to no precision at all (``-0.e-423``)
        difference = (g - p).evalf(15, maxn=400)
        return bool(difference.is_Float and difference != 0 and difference._prec > 1)
    except Exception:  # sympy cannot evaluate it: math-verify's verdict stands
        return False


def as_one_formula(region: str) -> str:
    """An answer block without math delimiters (``\\{3, 1, 2\\}``) read as one formula."""
    if "$" in region or "\\(" in region or "\\[" in region or "\\boxed" in region:
        return region
    return f"${region.strip()}$"


_mv_module: Any = None


def load_math_verify() -> Any:
    """math_verify, imported on first use (None when not installed); its once-per-process
    warning about disabled signal timeouts is silenced, since that is deliberate here."""
    global _mv_module
    if _mv_module is None:
        try:
            import math_verify
        except ImportError:
            return None
        for name in ("math_verify.parser", "math_verify.grader"):
            logging.getLogger(name).addFilter(_drop_timeout_warning)
        from rewardkit.builtin.math.latex_reader import install

        install(math_verify.parser)  # small formulas read by hand, in math_answer's calls
        _mv_module = math_verify
    return _mv_module


def _drop_timeout_warning(record: logging.LogRecord) -> bool:
    message = record.getMessage()
    return not (message.startswith("Timeout is disabled") or message.startswith("Timeout during"))
