"""Built-in multiple-choice reward (registered as a default plugin).

``multiple_choice``
    the output chooses the gold option: its letter (``B``, ``(B)``, ``B)``, ``Answer:
    B``, ``**B**``, ``\\boxed{B}``, ``B) 2x(x-7)``) or, when the options are in the
    sample (an ``options`` / ``choices`` column, or listed in the prompt), the option's
    value or text. Naming several options (``A or B``, ``\\boxed{A}`` then
    ``\\boxed{C}``) is a hedge and is wrong, as is a letter whose content is another
    option's.

``math_answer`` grades a gold that is one option letter with :func:`grade_choice` too,
so a maths dataset with AMC-style rows needs no second reward. Bounded, linear work on
any input (regular expressions without nested quantifiers over one answer): inline.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from rewardkit.authoring import Params, Reward, reward
from rewardkit.builtin._tag_blocks import tag_blocks
from rewardkit.builtin.math.commitment import hedged, retracted_after
from rewardkit.builtin.math.extraction import boxed, extract, reference_text
from rewardkit.builtin.math.numbers import read_number
from rewardkit.hookspecs import hookimpl
from rewardkit.text.graded import graded_text
from rewardkit.text.prompt import prompt_text
from rewardkit.types import Sample, Score

#: the option letters a gold may name (MMLU-Pro has ten options)
LETTERS = "ABCDEFGHIJ"
#: a gold that is one option letter: ``B``, ``(B)``, ``B)``, ``B.``, ``\text{(B)}``
GOLD_LETTER = re.compile(r"\s*\$?\s*(?:\\text(?:bf)?\s*\{\s*)?\(?\s*([A-J])\s*\)?\s*\}?\s*\.?"
                         r"\s*\$?\s*")


class ChoiceParams(Params):
    """Parameters of multiple_choice."""

    answer_tag: str = Field("answer", description="name of the answer tag")
    reasoning_tag: str | None = Field(
        None,
        description="name of the reasoning tag of a reasoning model (e.g. 'think'): grade "
        "only what follows the last closing </tag>, and pay `wrong` when the reasoning "
        "never closes; None grades the whole output, less a <think> block",
    )
    options_column: str | None = Field(
        None,
        description="metadata column holding the options (a list, A first, or a mapping "
        "letter -> text); None looks for `options` then `choices`, then for options "
        "listed in the prompt (`A) ...` / `(B) ...` lines or an AMC-style "
        "`\\textbf{(A) }...\\qquad` row)",
    )
    match_value: bool = Field(
        True,
        description="when the options are known, an answer that gives an option's value "
        "or text instead of its letter chooses that option",
    )
    score: float = Field(1.0, description="value when the gold option is chosen")
    wrong: float = Field(0.0, description="value otherwise (another option, several, none)")


@dataclass(frozen=True)
class Choice:
    """What an output chose: ``letter`` (None when it chose no option, or several), and
    why not when it did not."""

    letter: str | None
    reason: str = ""
    extracted: str = ""
    via: str = ""


@reward(params=ChoiceParams)
def multiple_choice(sample: Sample, params: ChoiceParams) -> Score:
    """The output chooses the gold option (letter A-J).

    The reference is the gold letter (``B``, ``(B)``), or the gold option's text when the
    options are in the sample. The answer is read from the last answer block, else the
    last ``\\boxed{}``, else a closing line (``Answer: B``, ``The answer is (B)``), else
    the whole output when it is only an answer, else its last line. A letter may stand
    alone or with its content (``B) 2x(x-7)``); with ``match_value`` an option's value
    or text stands for its letter. Several options named, different letters in several
    answer blocks or boxes, or a letter whose content is another option's: ``wrong``,
    with the reason. Status error when there is no reference or it names no option.
    Example: ``The answer is **(B)**.`` with reference ``B`` -> ``score``.
    """
    options = sample_options(sample, params.options_column)
    gold = gold_letter(sample.reference, options)
    if gold is None:
        text = reference_text(sample.reference)
        if text is None:
            return Score.error("sample has no reference answer")
        return Score.error(f"reference {text[:80]!r} is not an option letter A-J"
                           + ("" if options else " and the sample lists no options"))
    text = graded_text(sample.text, params.reasoning_tag)
    if text is None:
        return Score.ok(params.wrong, "the reasoning never closes")
    return choice_score(text, gold, options if params.match_value else {},
                        params.answer_tag, params.score, params.wrong)


def choice_score(text: str, gold: str, options: Mapping[str, str], answer_tag: str,
                 score: float, wrong: float) -> Score:
    """The Score of an output ``text`` against the gold letter: one definition for
    multiple_choice and math_answer."""
    chosen = grade_choice(text, options, answer_tag)
    if chosen.letter is None:
        return Score.ok(wrong, chosen.reason or "no option chosen", via=chosen.via,
                        extracted=chosen.extracted[:200])
    return Score.ok(score if chosen.letter == gold else wrong, via=chosen.via,
                    extracted=chosen.extracted[:200], chosen=chosen.letter)


def gold_letter(reference: Any, options: Mapping[str, str]) -> str | None:
    """The gold option's letter: the reference when it is one letter, else the option
    whose text the reference is (None when neither)."""
    text = reference_text(reference)
    if text is None:
        return None
    m = GOLD_LETTER.fullmatch(text)
    if m:
        return m.group(1)
    if options:
        return _option_named(text, options)
    return None


# -- options -----------------------------------------------------------------------------
#: an option line: ``A) text``, ``(A) text``, ``A. text``, ``A: text`` at a line start
_OPTION_LINE = re.compile(r"^[ \t]*[*_]*\(?([A-J])[*_]*[).:][*_]*[ \t]+(\S[^\n]*)$", re.MULTILINE)
#: an AMC-style row: ``\textbf{(A) }3 \qquad \textbf{(B) }4`` or ``(A) 3 (B) 4``
_INLINE_OPTION = re.compile(r"(?:\\textbf\s*\{\s*|\\mathrm\s*\{\s*)?\(([A-J])\)\s*\}?")


def sample_options(sample: Sample, column: str | None = None) -> dict[str, str]:
    """The options of a sample, letter -> text: from the named column, else an
    ``options`` or ``choices`` column, else listed in the prompt; empty when none."""
    names = (column,) if column else ("options", "choices")
    for name in names:
        value = sample.metadata.get(name)
        if value is not None:
            return _options_from(value)
    return prompt_options(prompt_text(sample.prompt))


def _options_from(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k).strip().strip("()").upper(): str(v) for k, v in value.items()
                if str(k).strip().strip("()").upper() in LETTERS}
    if isinstance(value, str):
        return prompt_options(value)
    if isinstance(value, Sequence):
        return {LETTERS[i]: str(v) for i, v in enumerate(list(value)[: len(LETTERS)])}
    return {}


def prompt_options(prompt: str) -> dict[str, str]:
    """Options listed in a prompt: one per line (``A) 3``), or in one AMC-style row;
    only a run that starts at A and goes on in order counts (a stray ``B.`` is not a
    list of options)."""
    lines: dict[str, str] = {}
    for m in _OPTION_LINE.finditer(prompt[-20_000:]):
        lines.setdefault(m.group(1), m.group(2).strip())
    found = _in_order(lines)
    if found:
        return found
    marks = list(_INLINE_OPTION.finditer(prompt[-20_000:]))
    row: dict[str, str] = {}
    tail = prompt[-20_000:]
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else min(len(tail), m.end() + 200)
        content = re.sub(r"\\qquad|\\quad|\\[,;!]|\\ ", " ", tail[m.end() : end])
        content = content.split("\n", 1)[0].strip().strip("$").strip()
        row.setdefault(m.group(1), content)
    return _in_order(row)


def _in_order(found: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for letter in LETTERS:
        if letter not in found:
            break
        out[letter] = found[letter]
    return out if len(out) >= 2 else {}


# -- the answer --------------------------------------------------------------------------
_DECORATION = re.compile(r"\\text(?:bf|rm|normal)?\s*\{([^{}]*)\}|\\mathrm\s*\{([^{}]*)\}|"
                         r"\\boxed\s*\{([^{}]*)\}")
#: the answer opens with a letter: ``B``, ``(B)``, ``B)``, ``B.``, ``B:``, ``[B]``, ``option B``
_LEADING_LETTER = re.compile(r"\s*(?:(?i:option|choice)\s*)?[(\[]?([A-J])(?:([)\].:])|(?=\s|$))")
#: what makes a leading letter a term of an expression: ``(D)+1``, ``D) ^ 2``, ``(C)\\cdot 2``
_OPERATED = re.compile(r"[+*/^_]|\\(?:cdot|times|div)\b")
#: a letter named as a choice: ``(B)``, ``option B``, ``answer is B``; a letter standing
#: alone counts in a short answer only (``A quick check`` is not option A)
_NAMED_LETTER = re.compile(
    r"(?<![0-9+*/^_])\(([A-J])\)(?![0-9+*/^_])"
    r"|(?i:option|choice|answer(?:\s+is)?|choose|pick|select)[ \t]{0,3}:?[ \t]{0,3}"
    r"\(?([A-J])\b"
    r"(?![-'])|(?<![A-Za-z0-9\\'^_+*/-])(?<![0-9+*/^_]\()([A-J])(?![A-Za-z0-9'^_+*/-])"
    r"(?!\)[0-9+*/^_])")
#: a letter standing alone: after a leading letter, another option named
_LONE_LETTER = re.compile(r"(?<![A-Za-z\\'-])([A-J])(?![A-Za-z'-])")
#: ``I`` as the pronoun: ``I think``, not option I
_PRONOUN = re.compile(r"I\s+[a-z]")
#: options an answer rejects: ``not A``, ``isn't (A)``, ``never option A``, ``not A or B``
#: (every letter of the list after the negation); a rejected option is not a second answer
_REJECTED = re.compile(r"(?:(?<![A-Za-z])(?i:not|never|nor)|n['’]t)\s+(?:(?:option|choice)\s+)?"
                       r"(\(?[A-J]\)?(?:\s*(?:,|or|nor|and)\s*\(?[A-J]\)?)*)(?![A-Za-z'-])")
#: a letter that ends an answer after its reasoning: ``..., so C.``, ``thus (C)``
_CONCLUDED = re.compile(r"(?<![A-Za-z])(?i:so|thus|hence|therefore)[ \t,:]{1,3}(?:(?i:option|"
                        r"choice)\s+)?\(?([A-J])\)?[ \t]*[.!]?[ \t]*$")
#: the longest answer in which a letter standing alone names an option
_SHORT = 30
#: a statement of the chosen letter anywhere in the output: ``the answer is (C)``,
#: ``Answer: C``
_ANSWER_IS = re.compile(r"(?i:answer)[ \t]{0,3}(?i:is[ \t]{0,3}:?|:)[ \t]{0,3}\**[ \t]{0,3}"
                        r"\(?([A-J])\b(?![-'])")  # bounded gaps: linear on any text
#: two letters joined by backslashes: ``B\\C``, ``B \\\\ C`` (a LaTeX line break)
_BACKSLASH_JOINED = re.compile(r"(?<![A-Za-z\\])\(?[A-J]\)?[ \t]*\\+[ \t]*\(?[A-J](?![A-Za-z])")
#: another option joined to the first: ``B or C``, ``B, C``, ``B and C``, ``B/C``
_JOINED = re.compile(r"(?:\bor\b|\band\b|,|/|&|\\lor|\\vee)\s*(?:option\s+)?\(?([A-J])\)?"
                     r"(?![A-Za-z])")


def grade_choice(text: str, options: Mapping[str, str], answer_tag: str = "answer") -> Choice:
    """The option an output chooses, read as :func:`multiple_choice` documents."""
    blocks = tag_blocks(text, answer_tag) if f"</{answer_tag}>" in text else []
    boxes = _all_boxes(text) if not blocks else []
    statements = blocks or boxes
    if len(statements) > 1:  # several answer blocks or boxes must name one option
        letters = {_choose(s, options).letter for s in statements}
        if len(letters) > 1:
            return Choice(None, "several different final answers", statements[-1], "boxed"
                          if boxes else "answer_tag")
    stated = {m.group(1) for m in _ANSWER_IS.finditer(text[-8000:])}
    if len(stated) > 1:  # "The answer is C. ... Thus, the answer is (E)."
        return Choice(None, "several different final answers", ", ".join(sorted(stated)),
                      "closing")
    found = extract(text, ("answer_tag", "boxed", "closing", "bare"), answer_tag)
    if found is not None:
        answer, via = found.answer, found.how
    else:
        lines = [line for line in text[-4000:].splitlines() if line.strip()]
        answer, via = (lines[-1].strip() if lines else ""), "last_line"
    chosen = _choose(answer, options)
    if chosen.letter is None:
        return Choice(None, chosen.reason, answer, via)
    if found is not None and retracted_after(found.text[: found.end + 2000], found.end):
        return Choice(None, "the answer is retracted after it is given", answer, via)
    if found is not None and _also_right(found.text[found.end : found.end + 2000],
                                         chosen.letter):
        return Choice(None, "another option called correct too", answer, via)
    for statement in statements:  # a box before "The answer is (D)" may not name another
        if _competes(statement, chosen.letter, options):
            return Choice(None, "several different final answers", answer, via)
    if via in ("bare", "last_line") and len(prompt_options(text)) > 1:
        return Choice(None, "the output lists the options", answer, via)  # an echoed prompt
    return Choice(chosen.letter, "", answer, via)


def _competes(statement: str, letter: str, options: Mapping[str, str]) -> bool:
    """Whether another final statement (a box, an answer block) names another option,
    several, or, where the options are known, a list or hedge of values none of them is
    (``\\boxed{A, B, C, D}``, ``\\boxed{164 or 165}`` before ``The answer is (D)``). A
    value in another form than its option's (``\\boxed{x^2/8}``) does not compete."""
    other = _choose(statement, options)
    if other.letter is not None:
        return other.letter != letter
    if other.reason == "several options named":
        return True
    return bool(options) and (hedged(statement) or _LIST.search(statement) is not None
                              or len(prompt_options(statement)) > 1)


#: a list of values in one answer
_LIST = re.compile(r"[,;]|\\(?:quad|qquad)")

#: what says a statement holds as much as another: "C is *also* correct", "both"
_ALSO = re.compile(r"(?i)\b(?:also|too|as\s+well|equally|both)\b")
#: what calls an option right; "incorrect" has no word boundary before "correct"
_RIGHT = re.compile(r"(?i)\b(?:correct|right|valid|true|accurate|acceptable|possible|"
                    r"plausible|works?|fine)\b")
#: a negation in the few words before the word that calls an option right
_NEGATED_BEFORE = re.compile(r"(?i)(?:\bnot|n't|\bnever|\bno|\bhardly)\b[^.!?;\n]{0,20}$")
#: an option letter in a sentence: ``(C)``, ``option C``, a capital standing alone
_SENTENCE_LETTER = re.compile(r"\(([A-J])\)|(?i:options?|choices?)\s+\(?([A-J])\b(?![-'])"
                              r"|(?<![A-Za-z\\'(-])([A-J])(?![A-Za-z'-])")
#: "A" and "I" as words: the article before a word, the pronoun
_ARTICLE_OR_PRONOUN = re.compile(r"[AI]\s+(?!(?:is|was|are|would|could|might|also|and|or|"
                                 r"too|as|seems?)\b)[a-z]")


def _also_right(rest: str, letter: str) -> bool:
    """Whether the text after the chosen answer calls another option correct too
    (``The answer is (B). Option C is also correct.``, ``Both B and C are right``): a
    sentence with *also* / *too* / *as well* / *equally* / *both*, a word calling
    something right that no negation precedes, and another option's letter."""
    for sentence in re.split(r"(?<=[.!?;])\s+|\n", rest):
        if not _ALSO.search(sentence):
            continue
        if not any(not _NEGATED_BEFORE.search(sentence, 0, m.start())
                   for m in _RIGHT.finditer(sentence)):
            continue
        for m in _SENTENCE_LETTER.finditer(sentence):
            other = m.group(1) or m.group(2) or m.group(3)
            if m.group(3) and _ARTICLE_OR_PRONOUN.match(sentence, m.start()):
                continue
            if other != letter:
                return True
    return False


def _all_boxes(text: str) -> list[str]:
    out: list[str] = []
    rest = text
    while "\\boxed" in rest and len(out) < 32:
        inner = boxed(rest, first=True)
        if inner is None:
            break
        out.append(inner)
        rest = rest[rest.find("\\boxed") + 6 :]
    return out


def _plain(answer: str) -> str:
    """An answer without emphasis, math delimiters and text macros."""
    s = answer[:2000]
    for _ in range(3):
        s = _DECORATION.sub(lambda m: next(g for g in m.groups() if g is not None), s)
    s = s.replace("**", "").replace("__", "").replace("$", "").replace("\\(", "")
    return s.replace("\\)", "").replace("\\[", "").replace("\\]", "").strip().strip("*_`")


def _choose(answer: str, options: Mapping[str, str]) -> Choice:
    """The option one answer names: a leading letter (with or without its content), else
    one letter named in it, else the option whose value it is."""
    s = _plain(answer)
    if not s:
        return Choice(None, "no option chosen")
    if _BACKSLASH_JOINED.search(s):  # "B\\C": not option B, two options
        return Choice(None, "several options named")
    rejected = _rejected(s)
    m = _LEADING_LETTER.match(s)
    content = s[m.end():].strip() if m else ""
    if m and m.group(2) is None and content[:1].islower() and not _JOINED.match(content):
        m = None  # "A quick check ...": a word, not option A
    if m:
        letter = m.group(1)
        named = _option_named(content, options) if content and options else None
        others = {t.group(1) for t in _LONE_LETTER.finditer(content[:200])
                  if not _PRONOUN.match(content, t.start())} - {letter} - rejected
        if others and named != letter:  # "A B C D", "B (or maybe A)", "A.B"
            return Choice(None, "several options named")
        if named is not None and named != letter and letter in options:
            return Choice(None, f"the letter {letter} and the content of option {named} "
                                "disagree")
        if _OPERATED.match(content):  # "(D)+1", "D) * 2": an expression, not option D
            return Choice(None, "an expression of an option letter, not an option")
        return Choice(letter)
    tail = s[-600:]
    letters = {n.group(1) or n.group(2) or n.group(3) for n in _NAMED_LETTER.finditer(tail)
               if n.group(3) is None or (len(s) <= _SHORT
                                         and not _PRONOUN.match(tail, n.start())
                                         and not (n.group(3) == "A"
                                                  and _ARTICLE_OR_PRONOUN.match(tail, n.start())))}
    concluded = _CONCLUDED.search(tail)  # "..., so C." (not "so A or B is the answer")
    if concluded:
        letters.add(concluded.group(1))
    if letters and letters <= rejected:  # "The answer is not C."
        return Choice(None, "the only option named is rejected")
    letters -= rejected  # "The answer is not A; it is B.": one answer, B
    if len(letters) > 1:
        return Choice(None, "several options named")
    if letters:
        return Choice(letters.pop())
    if options:
        named = _option_named(s, options)
        if named is not None:
            return Choice(named)
    return Choice(None, "no option chosen")


def _rejected(answer: str) -> set[str]:
    """The option letters an answer rejects (:data:`_REJECTED`)."""
    low = answer.lower()
    if "not" not in low and "n't" not in low and "n’t" not in low and "nor" not in low and \
            "never" not in low:
        return set()
    return {letter for m in _REJECTED.finditer(answer[-600:])
            for letter in re.findall(r"[A-J]", m.group(1))}


def _option_named(answer: str, options: Mapping[str, str]) -> str | None:
    """The one option whose value or text the answer is (None when none or several)."""
    mine = _comparable(answer)
    if not mine:
        return None
    hits = {letter for letter, text in options.items() if _comparable(text) == mine}
    if not hits:
        value = read_number(_plain(answer))
        if value is not None:
            hits = {letter for letter, text in options.items()
                    if (v := read_number(_plain(text))) is not None and v.value == value.value}
    return hits.pop() if len(hits) == 1 else None


def _comparable(text: str) -> str:
    """Text reduced for comparing an answer with an option: decoration, spacing, case and
    a closing period dropped."""
    s = _plain(text).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("\\left", "").replace("\\right", "").replace("\\,", "").replace("\\ ", "")
    return "".join(s.casefold().split()).rstrip(".")


@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(multiple_choice)
