"""Scans of math_answer rewritten for speed (issue 42 item 3) find what they found before:
each old pattern is kept here as it was written, and both are run on random texts built
from the pieces the rule reads (and on the GRPO benchmark's rows). Each test is bounded
to a few seconds."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

from rewardkit.builtin.math import commitment, extraction
from rewardkit.builtin.math import reward as math_reward

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from gsm8k_style import solutions

#: extraction.NUMBER_TOKEN and NUMBER_TOKEN_DECIMAL_COMMA before the look-ahead in front
OLD_NUMBER_TOKEN = re.compile(
    r"(?<![A-Za-z\d.])[-+]?\$?(?:\d{1,3}(?:(?:,|,\\!\s*|\{,\})\d{3})+(?:\.\d+)?"
    r"|(?<!\d,)\d+,\d{1,2}(?![\d,]|\.\d)|\d+(?:\.\d+)?(?:/\d+)?|\.\d+)%?(?![A-Za-z]*\d)"
)
OLD_NUMBER_TOKEN_DECIMAL_COMMA = re.compile(
    r"(?<![A-Za-z\d,])[-+]?\$?(?:\d{1,3}(?:[. ]\d{3})+(?:,\d+)?|\d+(?:,\d+)?)%?(?![A-Za-z]*\d)"
)
#: commitment.HEDGE_WORD as every hedge test searched it before (the ASCII lower-case twin)
OLD_HEDGE_WORD = re.compile(
    r"(?<![\\A-Za-z])(?:or|either|maybe|perhaps|possibly|guess)(?![A-Za-z])|\\pm|\\mp|±"
    r"|\\lor(?![A-Za-z])|\\vee(?![A-Za-z])",
    re.IGNORECASE)

_NUMBER_PARTS = ["1", "12", "123", "1234", "0", "7", ",", ",", ".", ".", "-", "+", "$", "%",
                 "/", " ", "\n", "\\!", "\\! ", "{,}", "x", "e", "E", "abc", "K", "٣", "٤٥",
                 "1,000", "2,5", "3.14", ",\\!", "km", "é", "\u2009", "__", "(", ")", "="]


def _random_texts(rng: random.Random, parts: list[str], n: int, most: int) -> list[str]:
    return ["".join(rng.choice(parts) for _ in range(rng.randint(0, most))) for _ in range(n)]


def _tokens(pattern: re.Pattern[str], text: str, pos: int, endpos: int) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text, pos, endpos)]


def test_the_number_tokens_are_found_as_before() -> None:
    """The number token regexes with their look-ahead in front find the same tokens as
    before (finditer, search and findall, from random start and end positions: the
    look-behind still sees the text before the start), on random texts of digits, signs,
    separators, letters and non-ASCII digits, and on the benchmark's rows."""
    rng = random.Random(42)
    texts = _random_texts(rng, _NUMBER_PARTS, 8000, 12)
    texts += [s.text for s in solutions(200, seed=5, closings=("eight_shot", "none"))]
    tokens = 0
    for text in texts:
        pos = rng.randint(0, len(text))
        endpos = rng.randint(pos, len(text))
        for old, new in ((OLD_NUMBER_TOKEN, extraction.NUMBER_TOKEN),
                         (OLD_NUMBER_TOKEN_DECIMAL_COMMA, extraction.NUMBER_TOKEN_DECIMAL_COMMA)):
            found = _tokens(old, text, 0, len(text))
            tokens += len(found)
            assert _tokens(new, text, 0, len(text)) == found, text
            assert _tokens(new, text, pos, endpos) == _tokens(old, text, pos, endpos), (
                text, pos, endpos)
            assert new.findall(text) == old.findall(text)
            assert new.sub("#", text) == old.sub("#", text)
    assert tokens > 12000
    # where the token is written inside another rule, that rule reads the same
    old_after = re.compile(commitment._HEDGE_AFTER.pattern.replace(
        extraction.NUMBER_TOKEN.pattern, OLD_NUMBER_TOKEN.pattern), re.IGNORECASE)
    assert old_after.pattern != commitment._HEDGE_AFTER.pattern
    hedge_parts = [*_NUMBER_PARTS, " or ", ", maybe ", " (possibly ", "\\boxed{", "}", "OR "]
    for text in _random_texts(rng, hedge_parts, 2000, 10):
        for pos in range(0, len(text), 3):
            new_match = commitment._HEDGE_AFTER.match(text, pos, pos + 60)
            old_match = old_after.match(text, pos, pos + 60)
            assert (new_match and (new_match.span(), new_match.group(1))) == (
                old_match and (old_match.span(), old_match.group(1))), (text, pos)


_HEDGE_PARTS = ["or", "OR", "Or", "either", "EITHER", "maybe", "Maybe", "perhaps", "possibly",
                "guess", "GUESS", "\\pm", "\\PM", "\\Pm", "\\mp", "\\MP", "±", "\\lor", "\\LOR",
                "\\lorx", "\\vee", "\\VEE", "\\veebar", "\\", "x", "o", "r", "e", "for", "nor",
                "ors", "guesses", "17", " ", " ", "\n", ".", ",", "$", "{", "}", "(", "_", "-",
                "é", "ſ", "K", "İ", "ı", "ß"]


def test_a_hedge_word_is_found_as_before() -> None:
    """hedge_word_in (an ASCII text searched in lower case by a regex whose alternatives
    each start with a plain character) says what HEDGE_WORD's search said, on random texts
    of the hedge words in any case, near misses, backslashes, punctuation and non-ASCII
    letters (IGNORECASE folds ``ſ`` and the Kelvin sign: those texts keep the old search),
    and on every ASCII character before and after each hedge word."""
    rng = random.Random(7)
    found = 0
    for text in _random_texts(rng, _HEDGE_PARTS, 30000, 8):
        expected = OLD_HEDGE_WORD.search(text) is not None
        found += expected
        assert commitment.hedge_word_in(text) == expected, text
    assert found > 10000
    words = ["or", "either", "maybe", "perhaps", "possibly", "guess", "\\pm", "\\mp", "\\lor",
             "\\vee"]
    for word in words:
        for c in map(chr, range(128)):
            for text in (c + word, word + c, c + word.upper(), word.upper() + c):
                assert commitment.hedge_word_in(text) == (
                    OLD_HEDGE_WORD.search(text) is not None), repr(text)
    for sample in solutions(300, seed=9, closings=("eight_shot", "none", "answer_is")):
        assert commitment.hedge_word_in(sample.text) == (
            OLD_HEDGE_WORD.search(sample.text) is not None)


def test_the_hashes_line_literal_searches_find_what_in_and_find_found() -> None:
    """The hashes-line short cut's three literal regexes find what the string searches
    they replace found: ``"**" in text``, ``text.find("####", 0, pos) >= 0`` and
    ``"\\na:" in low``, on random texts of stars, hashes, line breaks and ``a:``."""
    rng = random.Random(3)
    parts = ["*", "**", "#", "##", "####", "\n", "a", "a:", ":", "A:", " ", "x", "é"]
    hits = [0, 0, 0]
    for text in _random_texts(rng, parts, 20000, 10):
        pos = rng.randint(0, len(text))
        got = (math_reward._TWO_STARS.search(text) is not None,
               math_reward._HASHES.search(text, 0, pos) is not None,
               math_reward._A_LINE.search(text) is not None)
        assert got == ("**" in text, text.find("####", 0, pos) >= 0, "\na:" in text), (text, pos)
        hits = [h + g for h, g in zip(hits, got, strict=True)]
    assert min(hits) > 400


def _says_no_answer_as_before(text: str, end: int) -> bool:
    """commitment._fallback_refusal's "cannot answer" test as it was written before."""
    if text.isascii():
        return commitment._NO_ANSWER_ASCII_LOWER.search(text.lower(), 0, end) is not None
    return commitment._NO_ANSWER.search(text, 0, end) is not None


def test_no_answer_is_told_as_before_with_its_words_searched_first() -> None:
    """_says_no_answer (the regex tried only where one of the words every match holds is
    in the text before the answer) says what the regex alone said: on random texts built
    from _GIVES_UP's words, near misses, other case and non-ASCII letters (where ``ſ``
    reads as s), cut at a random end; and on the benchmark's rows."""
    rng = random.Random(23)
    parts = ["I", "i", "We", "we", "WE", " ", "  ", "\n", "\t", "cannot", "can't", "can’t",
             "can not", "could not", "couldn't", "am unable to", "are unable to",
             "was unable to", "do not", "don't", "don’t", "solve", "answer", "determine",
             "figure", "find", "know", "tell", "say", "be sure", "not", "sure", "SURE",
             "certain", "confident", "no", "idea", "unsure", "just", "a", "guess", "random",
             "guessing", "am", "are", "'m", "’re", "'re", "x", "hi", "18", ".", ",", "é",
             "ſure", "Idea", "Guess", "deter", "mine", "so", "lve", "kn", "ow", "I cannot ",
             "we don't ", "I am just ", "not ", "no ", "just a ", "random ", "I'm "]
    said = 0
    for text in _random_texts(rng, parts, 30000, 7):
        end = rng.randint(0, len(text))
        expected = _says_no_answer_as_before(text, end)
        said += expected
        assert commitment._says_no_answer(text, end) == expected, (text, end)
    assert said > 300
    for sample in solutions(300, seed=9, closings=("eight_shot", "none", "answer_is")):
        text = sample.text
        for end in (len(text), len(text) // 2):
            assert commitment._says_no_answer(text, end) == _says_no_answer_as_before(text, end)


def test_the_hashes_line_one_character_pretests_decline_as_the_scans_alone() -> None:
    """The hashes-line short cut looks for ``>``, ``#`` before the line and a backslash
    (one-character searches) before ``think>``, an earlier ``####`` and a box or bold
    command: the three tests together say what the scans alone said, on random texts of
    those characters and near misses, and on the benchmark's rows."""
    rng = random.Random(11)
    parts = [">", "think>", "think", "hink>", "#", "##", "####", "\\", "\\boxed", "\\fbox",
             "\\textbf", "\\text", "box", "\\\\", "\n", "x", " ", "é", "*", "<think>"]
    texts = _random_texts(rng, parts, 20000, 10)
    texts += [s.text for s in solutions(200, seed=5, closings=("eight_shot", "none"))]
    hits = [0, 0, 0]
    for text in texts:
        pos = rng.randint(0, len(text))
        before = ("think>" in text, math_reward._HASHES.search(text, 0, pos) is not None,
                  math_reward._BOX_OR_BOLD_COMMAND.search(text) is not None)
        after = (">" in text and "think>" in text,
                 text.find("#", 0, pos) >= 0 and math_reward._HASHES.search(text, 0, pos)
                 is not None,
                 "\\" in text and math_reward._BOX_OR_BOLD_COMMAND.search(text) is not None)
        assert after == before, (text, pos)
        hits = [h + b for h, b in zip(hits, before, strict=True)]
    assert min(hits) > 1000
