"""Written forms that put several values into one stated answer (:func:`several_values`).

A grader that reads one value out of ``\\boxed{17|18}``, ``\\boxed{17 \\atop 18}``,
``\\begin{cases}17\\\\18\\end{cases}`` or ``\\boxed{\\textcolor{white}{17}18}`` pays
whichever value it happens to read, so a policy that writes two values gets paid for
either gold: the answer hedges. These forms stack values (``\\atop``, ``\\\\``, ``&``,
``\\substack``, ``\\stackrel``, cases, arrays, matrices), overlap or hide them
(``\\rlap``, ``\\smash``, ``\\phantom``, a colour), or separate them with a bar or a tilde
(``17|18``, ``17\\sim 18``); and ``|x| = 18`` names two values, ``x = \\pm 18``. They are
hedges only where the gold is one value: a matrix, a set or an interval is written with
them. Apart from :mod:`rewardkit.builtin.math.commitment` because they read the inside of one
answer, not where it stands; linear in the answer, and nothing is done for an answer with
none of their marks (the common case).
"""

from __future__ import annotations

import re

from rewardkit.builtin.math.commitment import BOLD_SPAN, hedged, read_answer
from rewardkit.builtin.math.numbers import PlainNumber

#: what every form below holds: answers without any of these are one value (fast exit)
_MARKS = re.compile(r"[|~～&\n]|\\(?:\\|atop|above|brack|brace|cr|sim|mid|vert|lvert|substack|"
                    r"shortstack|stackrel|overset|underset|stackbin|begin|[rlc]lap|math[rlc]lap|"
                    r"smash|[hv]?phantom|textcolor|mathcolor|color|colorbox|makebox|abs|newline|"
                    r"linebreak|hspace|kern|mkern|hskip|mskip|neg(?:thin|med|thick)space|tiny|"
                    r"scriptsize|footnotesize|small|scriptstyle|scriptscriptstyle)(?![A-Za-z])"
                    r"|\\!\s*\\!")
#: a command's argument, braces nested two deep (``\\frac{1}{\\sqrt{2}}``)
_ARG = r"((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\}){0,200})"
_ENVIRONMENT = re.compile(
    r"\\begin\s*\{(cases|dcases|rcases|array|subarray|smallmatrix|[pbBvV]?matrix|tabular|aligned|"
    r"align|gathered|gather|split|eqnarray)\*?\}"
    r"(?:\s*\{[^{}]{0,40}\})?(.{0,2000}?)\\end\s*\{\1\*?\}", re.DOTALL)
#: commands of two arguments that set one value above the other
_TWO_STORIES = re.compile(r"\\(?:stackrel|overset|underset|stackbin)\s*\{" + _ARG + r"\}\s*"
                          r"\{" + _ARG + r"\}")
#: commands that overlap their argument with what follows, or hide it (a colour that does
#: not show on a page)
_HIDING = r"\{\s*(?i:white|transparent|none)[^{}]{0,20}\}"
_OVERLAID = re.compile(r"(?:\\(?:[rlc]lap|math[rlc]lap|smash|[hv]?phantom"
                       r"|makebox\s*\[\s*0[a-z]*\s*\]"
                       r"(?:\s*\[[a-z]\])?)|\\(?:text|math)color\s*" + _HIDING + r")"
                       r"\s*(?:\[[a-z]{0,3}\])?\s*\{" + _ARG + r"\}"
                       r"|\{\s*\\color\s*" + _HIDING + _ARG + r"\}"
                       r"|\{\s*\\(?:tiny|scriptsize|footnotesize|small|scriptstyle|scriptscriptstyle)"
                       r"(?![A-Za-z])" + _ARG + r"\}")
#: a colour switched on until the next one: ``\\color{white}17\\color{black}18``
_COLOUR_SWITCH = re.compile(r"\\color\s*\{[^{}]{0,40}\}")
#: a negative space that sets one value over another (``17\\hspace{-1em}18``, ``\\!\\!\\!``)
_NEGATIVE_SPACE = re.compile(r"\\(?:hspace\*?\s*\{\s*-[^{}]{0,20}\}|[m]?kern\s*-[^\\\s]{0,12}"
                             r"|[hm]skip\s*-[^\\\s]{0,12}|neg(?:thin|med|thick)space(?![A-Za-z]))"
                             r"|(?:\\!\s*){2,}")
_COLOURED = re.compile(r"\\(?:textcolor|mathcolor|colorbox)\s*(?:\[[^\]{}]{0,20}\])?\s*"
                       r"\{[^{}]{0,40}\}\s*\{" + _ARG + r"\}"
                       r"|\{\s*\\color\s*\{[^{}]{0,40}\}" + _ARG + r"\}")
_STACKING = re.compile(r"\\\\|(?<!\\)&"
                       r"|\\(?:atop|above|brack|brace|cr|newline|linebreak)(?![A-Za-z])"
                       r"|\\(?:substack|shortstack)(?![A-Za-z])")
#: a bar, a tilde or ``\\sim`` between two values (``17|18``, ``17~18``, ``17\\sim 18``)
_BAR = re.compile(r"(?:\\(?:left|right|middle|[bB]igg?[lrm]?)\s*)?"
                  r"(?:\\[lr]?vert(?![A-Za-z])|(?<!\\)\|)"
                  r"|\\(?:[bB]igg?)?mid(?![A-Za-z])|\\(?:mathbin|mathrel|mathord|text|mbox)\s*"
                  r"\{\s*(?:\||\\mid|\\vert)\s*\}")
_BETWEEN = re.compile(r"\\sim(?![A-Za-z])|～|(?<=[\d}])\s*~\s*(?=[\d\\])(?!\d{3}(?!\d))")
#: ``|x| = 18``: an absolute value of one letter set equal to the answer (x is 18 or -18)
_ABSOLUTE = re.compile(r"\s*\$?\s*(?:\\left\s*)?(?:\||\\[lr]?vert(?![A-Za-z]))\s*([A-Za-z])\s*"
                       r"(?:\\right\s*)?(?:\||\\[lr]?vert(?![A-Za-z]))\s*=|\s*\$?\s*\\abs\s*"
                       r"\{\s*([A-Za-z])\s*\}\s*=")
_SEPARATOR = "\x00"
#: longer answers are prose or refused elsewhere (a symbolic answer over
#: ``max_symbolic_chars`` is wrong); the forms are read in the first this many characters
_MAX_ANSWER = 5000


def several_values(answer: str, how: str = "", prompt: str = "") -> str:
    """Why a stated answer writes several values in one statement (empty when it does not):
    stacked, overlapped or hidden values, values split by a bar or a tilde, or an absolute
    value equation. For a gold that is one value; ``how`` is the strategy that found the
    answer (an answer block may hold prose on several lines, a box may not), ``prompt``
    the question (``|z| = 5`` answers "find |z|")."""
    if len(answer) > _MAX_ANSWER or not _MARKS.search(answer):
        return ""
    absolute = _ABSOLUTE.match(answer)
    if absolute:
        letter = absolute.group(1) or absolute.group(2)
        if not _asks_absolute(prompt, letter):
            return f"the answer names two values (|{letter}| = a is {letter} = ±a)"
    text = _ENVIRONMENT.sub(_environment_rows, answer)
    text = _TWO_STORIES.sub(lambda m: f"{_SEPARATOR}{m.group(1)}{_SEPARATOR}{m.group(2)}"
                            f"{_SEPARATOR}", text)
    hidden = _OVERLAID.sub(lambda m: f"{_SEPARATOR}{next((g for g in m.groups() if g), '')}"
                           f"{_SEPARATOR}", text)
    hidden = _NEGATIVE_SPACE.sub(_SEPARATOR, hidden)
    if "\\color" in hidden:
        hidden = _COLOUR_SWITCH.sub(_SEPARATOR, hidden)
    stacked = _STACKING.sub(_SEPARATOR, hidden)
    if how in ("boxed", "bare", "math_span"):  # one formula: a line break separates values
        stacked = stacked.replace("\n", _SEPARATOR)
    if _differ(stacked.split(_SEPARATOR)):
        return "the answer stacks, overlaps or hides several values"
    spaced = _COLOURED.sub(lambda m: f"{_SEPARATOR}{m.group(1) or m.group(2) or ''}"
                           f"{_SEPARATOR}", stacked)
    spaced = _BETWEEN.sub(_SEPARATOR, spaced)
    if len(_BAR.findall(spaced)) % 2:  # |x - 1| is one value; 17|18 is two
        spaced = _BAR.sub(_SEPARATOR, spaced)
    if spaced != stacked and _differ(spaced.split(_SEPARATOR), read=True):
        return "the answer separates several values"
    return ""


def _asks_absolute(prompt: str, letter: str) -> bool:
    """Whether the question asks for the absolute value ``|letter|`` itself."""
    bar = r"(?:\||\\[lr]?vert(?![A-Za-z]))"
    return re.search(rf"{bar}\s*{letter}\s*(?:\\right\s*)?{bar}|\\abs\s*\{{\s*{letter}\s*\}}",
                     prompt) is not None


def _environment_rows(m: re.Match[str]) -> str:
    """An environment's values, separated: every cell of an array or a matrix, the value
    (not the condition after ``&``) of each row of cases; of an aligned derivation
    (``x &= 9 \\cdot 2 \\\\ &= 18``), its last row, which is its result."""
    body = m.group(2)
    if m.group(1).startswith(("align", "gather", "split", "eqnarray")):
        return re.split(r"\\\\", body)[-1].replace("&", " ")
    if "cases" in m.group(1):
        rows = [row.split("&", 1)[0] for row in re.split(r"\\\\|\\cr(?![A-Za-z])", body)]
        return _SEPARATOR + _SEPARATOR.join(rows) + _SEPARATOR
    return _SEPARATOR + body + _SEPARATOR


def _differ(parts: list[str], read: bool = False) -> bool:
    """Whether at least two of ``parts`` are values (a digit, braces balanced) and they are
    not all the same value. ``read``: only parts that each read as one plain number count,
    and a part that does not read makes them no hedge (``\\frac{\\textcolor{red}{3}}{4}``)."""
    values = []
    for part in parts:
        value = _value_part(part)
        if value:
            values.append(value)
    if len(values) < 2:
        return False
    numbers = [read_answer(v, prose=False) for v in values]
    if all(isinstance(n, PlainNumber) for n in numbers):
        return len({n.value for n in numbers if isinstance(n, PlainNumber)}) > 1
    if read:
        return False
    return len({"".join(v.split()) for v in values}) > 1


_SPACING = re.compile(r"\\[,;:! ]|\\q?quad(?![A-Za-z])|~")


def _value_part(part: str) -> str:
    """A part that holds a value on its own (a digit, braces balanced once the group that
    enclosed the form is dropped), markdown bold and delimiters removed; empty otherwise."""
    text = _SPACING.sub(" ", BOLD_SPAN.sub(r"\1", part)).strip(" \t\n$.,;:")
    while text.startswith("{") and text.count("{") > text.count("}"):
        text = text[1:].strip()
    while text.endswith("}") and text.count("}") > text.count("{"):
        text = text[:-1].strip()
    if not any(ch.isdigit() for ch in text):
        return ""
    depth = 0
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return ""
    return text if depth == 0 else ""


_SEVERAL_IN_GOLD = re.compile(r"[,;=&]|\\[{}]|\\\\|\\begin(?![A-Za-z])"
                              r"|\\(?:cup|cap|lor|vee|pm|mp)(?![A-Za-z])")


def one_value(gold: str) -> bool:
    """A gold answer that is one value, not a set, list, equation, matrix or disjunction
    (there, ``x = 2 \\text{ or } x = 5`` or ``\\begin{pmatrix}1\\\\2\\end{pmatrix}`` is
    the answer, not a hedge)."""
    return not hedged(gold) and _SEVERAL_IN_GOLD.search(gold) is None
