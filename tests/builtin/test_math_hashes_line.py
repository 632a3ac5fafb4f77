"""math_answer's hashes-line short cut (issue 42 item 3) decides only what the full reading
decides: compared, Score for Score, with the full reading (the answer found and the
plain-number verdict the quick verdict reaches without the short cut) on the GRPO
benchmark's rows, on those rows with each hardening case written into them, and on the
golden cases of tests/cases/builtin/math_answer*.yaml."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rewardkit import Sample
from rewardkit.builtin.math.numbers import PlainNumber
from rewardkit.builtin.math.params import MathParams
from rewardkit.builtin.math.references import plain_reference
from rewardkit.builtin.math.reward import (
    _answer_read,
    _hashes_line_verdict,
    _plain_verdict,
    _quick_verdict,
)
from rewardkit.types import Score

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gsm8k_style import solutions  # noqa: E402


def _full(sample: Sample, params: MathParams) -> Score | None:
    """The quick verdict's full reading for a plain-number gold, without the short cut."""
    gold = plain_reference(sample.reference, params)
    assert type(gold) is PlainNumber
    read = _answer_read(sample, params)
    if isinstance(read, Score):
        return read
    _, prompt, found = read
    if found is None:
        return Score.ok(params.wrong, "no answer found")
    reference = sample.reference if type(sample.reference) is str else ""
    return _plain_verdict(gold, found, params, prompt, reference)


def _same(short: Score | None, full: Score | None) -> bool:
    if short is None or full is None:
        return False
    return (short.value, short.status, short.reason, short.details) == (
        full.value, full.status, full.reason, full.details)


def _check(sample: Sample, params: MathParams) -> bool:
    """Whether the short cut was taken; when it is, its Score is the full reading's."""
    gold = plain_reference(sample.reference, params)
    if type(gold) is not PlainNumber or type(sample.reference) is not str:
        return False
    short = _hashes_line_verdict(sample, gold, sample.reference, params)
    if short is None:
        return False
    full = _full(sample, params)
    assert _same(short, full), (sample.completion[-200:], sample.reference, short, full)
    assert _same(_quick_verdict(sample, params), full)
    return True


#: what the hardening reads, written into a benchmark row: (where, text)
_EDITS: list[tuple[str, str]] = [
    ("before_line", "It is not"), ("before_line", "I can't tell,"), ("before_line", "≠"),
    ("before_line", "The answer is 12.\n"), ("before_line", "Answer: 12\n"),
    ("before_line", "\\boxed{12}\n"), ("before_line", "\\fbox{12}\n"),
    ("before_line", "\\framebox{12}\n"), ("before_line", "**12**\n"),
    ("before_line", "\\textbf{12}\n"), ("before_line", "<answer>12</answer>\n"),
    ("before_line", "#### 12\n"), ("before_line", "#"), ("before_line", "<think>"),
    ("before_line", "</think>\n"), ("before_line", "A: 12\n"),
    ("before_line", "THE ANSWER IS 12\n"),
    ("start", "A: 12\n"), ("start", "a: 12\n"), ("start", "İ "),
    ("end", "?"), ("end", "\n"), ("end", " or 17"), ("end", ", maybe 17"), ("end", "%"),
    ("end", "\\%"), ("end", " apples"), ("end", ".5"), ("end", ".50"), ("end", "/2"),
    ("end", " (possibly 17)"), ("end", "\nWait, that is wrong."), ("end", ", no wait, 17"),
    ("end", "\\footnote{17}"), ("end", " is wrong"), ("end", " answer is 3"),
    ("end", " | 17"), ("end", " thousand"), ("end", "**"), ("end", " <think>"),
    ("line", "#### 0"), ("line", "#### "), ("line", "#### The final answer is"),
    ("line", "#### The answer is: 1,000"), ("line", "####The final answer is not 12"),
    ("line", "#### 12 or 13"), ("line", "#### x = 12"), ("line", "#### $12.00"),
    ("line", "#### -3"), ("line", "#### 1/2"), ("line", "#### 12?"),
    ("line", "#### The final answer is 18 and the answer is 19"),
]


def _edited(text: str, where: str, edit: str) -> str:
    line = text.rfind("\n####")
    if where == "start":
        return edit + text
    if where == "end":
        return text + edit
    if where == "line":
        return text[: line + 1] + edit if line >= 0 else text + "\n" + edit
    return text[: line + 1] + edit + text[line + 1 :] if line >= 0 else text + edit


def test_the_short_cut_decides_as_the_full_reading_on_the_benchmark_rows() -> None:
    params = MathParams.model_validate({})
    rows = solutions(2048, seed=11, closings=("eight_shot",) * 9 + ("none",))
    taken = sum(_check(Sample(completion=r.text, reference=r.gold), params) for r in rows)
    assert taken >= 0.8 * len(rows)  # the short cut is what the benchmark's rows take
    prompted = [Sample(completion=r.text, reference=r.gold, prompt="How many are there?")
                for r in rows[:200]]
    assert sum(_check(s, params) for s in prompted) >= 150


@pytest.mark.parametrize(("where", "edit"), _EDITS)
def test_the_short_cut_decides_as_the_full_reading_on_each_hardening_case(
        where: str, edit: str) -> None:
    params = MathParams.model_validate({})
    for row in solutions(40, seed=5, closings=("eight_shot", "none")):
        for gold in (row.gold, "12", "0.5", "17", "1000", "50%"):
            _check(Sample(completion=_edited(row.text, where, edit), reference=gold), params)


def test_the_hardening_cases_fall_back_to_the_full_reading() -> None:
    """Each case the short cut cannot prove leaves it (a refusal is the full reading's)."""
    params = MathParams.model_validate({})
    text = "So 6 * 2 = 12.\n#### The final answer is 12"
    assert _check(Sample(completion=text, reference="12"), params)
    for before in ("The answer is 11.\n", "\\boxed{11}\n", "**11**\n", "#### 11\n", "<think>"):
        sample = Sample(completion=before + text, reference="12")
        gold = plain_reference("12", params)
        assert isinstance(gold, PlainNumber)
        assert _hashes_line_verdict(sample, gold, "12", params) is None
    for after in ("?", " or 11", "\nWait, that is wrong."):
        assert not _check(Sample(completion=text + after, reference="12"), params)
        verdict = _quick_verdict(Sample(completion=text + after, reference="12"), params)
        assert verdict is not None and verdict.value == 0.0


def _cases() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((ROOT / "tests" / "cases" / "builtin").glob("math_answer*.yaml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in spec["cases"]:
            found.append((f"{path.name}:{case.get('name')}", {**case,
                                                             "params": spec.get("params", {})}))
    return found


def test_the_short_cut_decides_as_the_full_reading_on_the_golden_cases() -> None:
    cases = _cases()
    assert len(cases) > 250
    taken = 0
    for name, case in cases:
        params = MathParams.model_validate(case["params"])
        sample = Sample(completion=case["completion"], reference=case.get("reference"),
                        prompt=case.get("prompt"))
        try:
            taken += _check(sample, params)
        except AssertionError as exc:
            raise AssertionError(name) from exc
    assert taken >= 3


def test_the_last_sentence_end_is_the_one_every_sentence_end_listed_finds() -> None:
    """_fallback_refusal finds the last sentence end before a number from the window's end;
    the same position as the last of every sentence end listed (the rule before)."""
    import random

    from rewardkit.builtin.math import commitment

    rng = random.Random(3)
    texts = [r.text for r in solutions(200, seed=9, closings=("none", "eight_shot"))]
    texts += ["", "a.", ".\n", "1.5 and 2. 3!x? 4\n\n5", "x" * 3000 + ". y", "e.g.3", "?\t."]
    for text in texts:
        for _ in range(30):
            end = rng.randint(0, len(text))
            lo = max(0, end - rng.choice((2000, 5, 0, 40)))
            listed = max((m.end() for m in commitment._SENTENCE_END.finditer(text, lo, end)),
                         default=0)
            last = commitment._LAST_SENTENCE_END.match(text, lo, end)
            assert (last.end() if last else 0) == listed, (text[lo:end][-40:], lo, end)


def test_the_no_answer_rule_finds_the_same_in_lower_case_ascii() -> None:
    """_fallback_refusal's "the output says it cannot answer" on an ASCII text: the lower
    case form with letter-first alternatives finds a statement where the rule does."""
    import random

    from rewardkit.builtin.math import commitment

    rng = random.Random(5)
    words = ["I", "i", "we", "We", "WE", "cannot", "can't", "can not", "could not", "couldn't",
             "am unable to", "are unable to", "was unable to", "do not", "don't", "solve",
             "answer", "determine", "figure", "find", "know", "tell", "say", "be sure", "not",
             "sure", "certain", "confident", "unsure", "no", "idea", "am", "are", "'m", "'re",
             "just", "a", "guess", "guessing", "random", "Random", "x", "5", "hi", "NOT", "Sure",
             "Unsure", "ai", "twe", "iam", "ino", "ideas", "surely", "\n", "\t", ",", "."]
    texts = [r.text for r in solutions(200, seed=9, closings=("none",))]
    for _ in range(6000):
        texts.append(rng.choice(("", " ", "x")).join(
            rng.choice(words) for _ in range(rng.randint(1, 8))))
    found = 0
    for text in texts:
        end = rng.randint(0, len(text))
        expected = commitment._NO_ANSWER.search(text, 0, end) is not None
        found += expected
        assert (commitment._NO_ANSWER_ASCII_LOWER.search(text.lower(), 0, end) is not None) \
            == expected, (text, end)
    assert found > 150


def test_a_listed_line_is_told_as_before() -> None:
    """_listed compares the letters of two lines before their number-free forms: lines whose
    letters differ never had equal number-free forms (a number token holds no letter)."""
    import random

    from rewardkit.builtin.math import commitment

    rng = random.Random(7)
    parts = ["Candidate", "candidate", ":", " ", "17", "18", "$5", "1,000", "2.5", "50%", "-3",
             "x", "e", "3e5", "12abc", "\\frac{1}{2}", "=", "and"]
    for _ in range(4000):
        previous = "".join(rng.choice(parts) for _ in range(rng.randint(1, 5)))
        line = "".join(rng.choice(parts) for _ in range(rng.randint(1, 5)))
        token = commitment.NUMBER_TOKEN
        before = token.sub("#", previous).strip() == token.sub("#", line).strip()
        letters_differ = commitment._NOT_A_LETTER.sub("", previous) != \
            commitment._NOT_A_LETTER.sub("", line)
        assert not (before and letters_differ), (previous, line)


def test_the_eight_shot_lead_in_is_cut_as_strip_lead_in_cuts_it() -> None:
    """The short cut cuts the 8-shot line's lead-in by its literal where no space, colon or
    end follows it: the same answer as strip_lead_in's regex, for every ASCII character
    (and pair of characters) after it."""
    from rewardkit.builtin.math.extraction import strip_lead_in
    from rewardkit.builtin.math.reward import _EIGHT_SHOT_LEAD_IN, _LEAD_IN_GOES_ON

    assert {c for c in map(chr, range(128)) if c.isspace()} | {":", ""} == _LEAD_IN_GOES_ON
    ascii_chars = [chr(i) for i in range(128)]
    checked = 0
    for first in ["", *ascii_chars]:
        for rest in ("", "18", " 18", ":", "\n", "x"):
            line = _EIGHT_SHOT_LEAD_IN + first + rest
            if line[21:22] in _LEAD_IN_GOES_ON:
                continue
            assert line[21:].strip() == strip_lead_in(line).strip(), repr(line)
            checked += 1
    assert checked > 600


def test_the_negation_pretest_passes_every_window_the_negation_regex_matches() -> None:
    """The short cut tries negated_before only on a window that ends on a letter before
    whitespace, $, (, {, [ or backslashes: on random ASCII windows built from the negation
    rule's words and marks, every window it matches passes that test."""
    import random

    from rewardkit.builtin.math.commitment import NEGATION_BEFORE, negated_before
    from rewardkit.builtin.math.reward import _NEGATION_TAIL

    rng = random.Random(11)
    parts = ["not", "NOT", "never", "n't", "can't", "isn't", "\\ne", "\\neq", "be", "equal",
             "to", "the", "answer", "is", "it", "at all", "boxed", "fbox", "nothing", "x", "5",
             " ", "  ", "\n", "\t", "$", "(", "{", "[", "\\", ".", ",", ":", "?", "}", ")", "=",
             "\x0b", "\x1c"]
    matched = 0
    texts = [r.text for r in solutions(100, seed=13, closings=("eight_shot",))]
    for _ in range(20000):
        window = "".join(rng.choice(parts) for _ in range(rng.randint(1, 9)))
        text = rng.choice(texts)[: rng.randint(0, 120)] + window + "#### 5"
        pos = text.rfind("####")
        low = text.lower()
        negated = negated_before(text, pos)
        matched += negated
        passes = low[max(0, pos - 80) : pos].rstrip(_NEGATION_TAIL)[-1:].isalpha()
        assert passes or not negated, repr(window)
        assert negated == (NEGATION_BEFORE.search(text[max(0, pos - 80) : pos]) is not None)
    assert matched > 1000


def _listed_as_before(text: str, sentence: str, start: int) -> bool:
    """commitment._listed as it was written before its cheap tests came first."""
    import re

    from rewardkit.builtin.math import commitment

    token = commitment.NUMBER_TOKEN
    numbers = token.findall(sentence)
    if len(set(numbers)) >= 2 and not commitment.LATIN_WORD.search(sentence) and not re.search(
            r"[=+*×^]|\\times|\\cdot", sentence):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    before = text[: max(0, line_start - 1)].rstrip("\n")
    previous = before[before.rfind("\n") + 1 :]
    if not previous.strip() or previous == line:
        return False
    if commitment._NOT_A_LETTER.sub("", previous) != commitment._NOT_A_LETTER.sub("", line):
        return False
    return token.sub("#", previous).strip() == token.sub("#", line).strip()


def test_a_list_is_told_as_before_with_the_cheap_tests_first() -> None:
    """_listed (a word in the sentence tested before its numbers are listed; two ASCII
    lines whose first letters differ told apart before their letters are listed) finds
    what the rule as written before finds, on random lines, ASCII or not."""
    import random

    from rewardkit.builtin.math import commitment
    from rewardkit.builtin.math.extraction import Found

    rng = random.Random(19)
    parts = ["Candidate", "candidate", "Cand", "x", "é", "É", "ß", ":", " ", "17", "18", "$5",
             "1,000", "2.5", "50%", "-3", "\\frac{1}{2}", "=", "and", "\n", "\n", "+", "×",
             "Step", "step", "2", ".", "Ω"]
    listed = 0
    for _ in range(12000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(1, 14)))
        matches = list(commitment.NUMBER_TOKEN.finditer(text))
        if not matches:
            continue
        m = rng.choice(matches)
        lo = rng.randint(0, m.start())
        hi = rng.randint(m.end(), len(text))
        sentence = text[lo:hi]
        found = Found("last_number", m.group(0), text, m.start(), m.end())
        expected = _listed_as_before(text, sentence, m.start())
        listed += expected
        assert commitment._listed(text, sentence, found) == expected, (text, sentence)
    assert listed > 500
