"""The answer scanners take short cuts for speed (the last lines first, plain string
searches before regular expressions); on any text they must find exactly what a scan of
the whole text finds. Checked against whole-text scans on random texts built from the
characters that matter (digits, separators, ``$``, ``\\(``, line breaks, thin spaces)."""

from __future__ import annotations

import random
import re

import pytest

from rewardkit.builtin import _tag_blocks
from rewardkit.builtin.math import commitment as _commitment
from rewardkit.builtin.math import extraction as _answers

PIECES = ["1", "23", "4,567", ",", ".", "5.5", "$", "\\(", "\\)", "\\!", " ", "\t", "\n",
          "\n\n", "a", "AZ", "x2", "%", "-", "/", "{,}", "answer is ", "####", "\\boxed{7}",
          "<<2*3=6>>", "$ \n", "\\( \n", " 12 \n", "$$", "\\$", "Step 1:", "q9q"]


def random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def whole_text_last_number(text: str, decimal_comma: bool) -> str | None:
    token = (_answers.NUMBER_TOKEN_DECIMAL_COMMA if decimal_comma
             else _answers.NUMBER_TOKEN)
    found = None
    for found in token.finditer(_answers.BROKEN_MATH_SPAN.sub(" ", text)):  # noqa: B007
        pass
    return found.group(0) if found else None


@pytest.mark.parametrize("decimal_comma", [False, True])
def test_last_number_equals_a_scan_of_the_whole_text(decimal_comma: bool) -> None:
    texts = random_texts(20_000, seed=7)
    # long texts too: the short cut only starts past one line
    texts += ["\n".join(random_texts(30, seed=i)) for i in range(300)]
    for text in texts:
        assert _answers.last_number(text, decimal_comma=decimal_comma) == \
            whole_text_last_number(text, decimal_comma), repr(text)


def test_many_lines_of_glued_digits_are_scanned_in_linear_time() -> None:
    text = "a1b\n" * 200_000 + "costs 5 dollars\n" + "x9y\n" * 200_000
    assert _answers.last_number(text) == "5"


def test_broken_span_check_finds_every_broken_span() -> None:
    for text in random_texts(20_000, seed=11):
        if _answers.BROKEN_MATH_SPAN.search(text):
            assert _answers.opens_broken_span(text), repr(text)


def test_dollar_positions_skip_escaped_dollars() -> None:
    for text in random_texts(5_000, seed=13):
        expected = [m.start() for m in re.finditer(r"(?<!\\)\$", text)]
        assert _answers.dollar_positions(text) == expected


def test_extract_skips_a_strategy_only_where_it_finds_nothing() -> None:
    """``extract`` skips answer_tag / boxed / hashes when their marker is not in the
    text: on texts with and without the markers, those finders then find nothing."""
    rng = random.Random(5)
    for text in random_texts(20_000, seed=17):
        if rng.random() < 0.3:
            text = f"{text}<answer>{rng.choice(PIECES)}</answer>{rng.choice(PIECES)}"
        for first in (False, True):
            if "</answer>" not in text:
                assert _tag_blocks.tag_block(text, "answer", first) is None, repr(text)
            if "\\boxed" not in text and "\\fbox" not in text:
                assert _answers.boxed(text, first) is None, repr(text)
            if "####" not in text:
                assert _answers.hashes_line(text, first) is None, repr(text)


def test_lead_in_is_stripped_as_the_lead_in_pattern_says() -> None:
    rng = random.Random(19)
    pieces = ["The ", "the", " final ", "answer", " is ", ":", "=", "x", " ", "\t", "1",
              "-", "$", "So, ", "result", "é", "İ", "\n", "42"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert _answers.strip_lead_in(text) == _answers.ANSWER_LEAD_IN.sub("", text, count=1), \
            repr(text)


STATEMENT_PIECES = [*PIECES, "<answer>", "</answer>", "Answer: ", "ANSWER IS ", "\nA: ", "A:",
                             "\\fbox{8}", "\\boxed{", "}", "not ", "n't ", "Never ", "≠", "\\neq "]


def test_a_number_found_in_the_text_stands_where_it_is_found() -> None:
    """``last_number`` blanks broken spans to their own length, so the position it reports
    is the number's position in the text as written (the commitment checks read around
    it)."""
    for text in random_texts(20_000, seed=23):
        for first in (False, True):
            match = _answers.last_number_match(text, first)
            if match is not None:
                assert text[match.start() : match.end()] == match.group(0), repr(text)


def test_every_found_answer_lies_inside_the_span_it_reports() -> None:
    rng = random.Random(29)
    order = ["answer_tag", "boxed", "hashes", "closing", "bare", "math_span", "last_number"]
    for _ in range(20_000):
        text = "".join(rng.choice(STATEMENT_PIECES) for _ in range(rng.randint(0, 40)))
        for how in order:
            found = _answers.extract(text, [how], "answer", first=rng.random() < 0.3)
            if found is not None:
                assert found.how in (how, "closing"), repr(text)
                span = found.text[found.start : found.end]
                assert found.answer.split()[0] in span if found.answer else True, repr(text)


def test_the_statement_count_short_cut_never_counts_fewer_than_there_are() -> None:
    """``competing_answers`` skips the hedge check when ``_statement_marks`` counts fewer
    than two final statements: there must then be at most one, or the one ``####`` line
    holding the text's one closing phrase read both ways (``#### The answer is 18``): two
    readings that overlap, so neither competes with the other (``competing_statements``
    skips a statement of another kind that starts before the found one ends and ends after
    it starts)."""
    rng = random.Random(31)
    kinds = list(_answers.STATEMENTS)
    for _ in range(20_000):
        text = "".join(rng.choice(STATEMENT_PIECES) for _ in range(rng.randint(0, 40)))
        if _commitment.statement_marks(text, kinds, "answer") < 2:
            statements = _commitment.final_statements(text, kinds, "answer")
            if len(statements) > 1:
                (first, start, end, _), (second, start2, end2, _) = statements
                assert (first, second) == ("hashes", "closing"), repr(text)
                assert start < start2 < end and end2 > start, repr(text)


def test_the_negation_short_cut_finds_what_the_pattern_finds() -> None:
    rng = random.Random(37)
    for _ in range(20_000):
        text = "".join(rng.choice(STATEMENT_PIECES) for _ in range(rng.randint(0, 30)))
        window = text[-80:]
        expected = bool(_commitment.NEGATION_BEFORE.search(window))
        assert _commitment.negated_before(text, len(text)) == expected, repr(text)
