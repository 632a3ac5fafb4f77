"""rewardkit.text.visible: the one definition of "content" that every non-empty rule uses."""

from __future__ import annotations

import time
import unicodedata

import pytest

from rewardkit import visible_length, visible_text

INVISIBLE = {
    "zero-width space": "\u200b",
    "zero-width joiners": "\u200c\u200d",
    "word joiner": "\u2060",
    "byte-order mark": "\ufeff",
    "soft hyphen": "\u00ad",
    "bidi controls": "\u202e\u200e\u200f\u2066",
    "tag characters": "\U000e0041\U000e007f",
    "spaces of every kind": " \u00a0\u2003\u3000\u202f",
    "line and paragraph separators": "\u2028\u2029",
    "control characters": "\x00\x07\t\n\r\x7f",
    "combining marks alone": "\u0301\u034f",
    "variation selectors": "\ufe0f\U000e0100",
    "Hangul fillers": "\u115f\u1160\u3164\uffa0",
    "braille blank": "\u2800",
}


@pytest.mark.parametrize("name", sorted(INVISIBLE))
def test_invisible_characters_are_not_content(name: str) -> None:
    assert visible_length(INVISIBLE[name]) == 0


@pytest.mark.parametrize("text", ["4", "二", "é", "👍", "٤٢", "x\u200by"])
def test_any_script_and_emoji_are_content(text: str) -> None:
    assert visible_length(text) >= 1


def test_visible_text_keeps_the_visible_characters_in_order() -> None:
    assert visible_text(" 4\u200b2\u2060 ") == "42"


def test_every_format_and_space_character_of_the_unicode_database_is_invisible() -> None:
    hidden = [chr(c) for c in range(0x110000)
              if unicodedata.category(chr(c)) in {"Cf", "Zs", "Zl", "Zp", "Cc"}]
    assert visible_length("".join(hidden)) == 0


def test_a_megabyte_of_invisible_characters_is_counted_quickly() -> None:
    visible_length("x\u200b")  # the character class is built once per process
    start = time.perf_counter()
    assert visible_length("\u200b\u3164" * 500_000) == 0
    assert time.perf_counter() - start < 0.5


def test_ascii_texts_are_read_as_the_whole_table_reads_them() -> None:
    # an ASCII text is scanned with a class of its own (the table is never built for it):
    # every ASCII character, alone and inside ASCII text, is kept or dropped as the whole
    # Unicode table would (a non-ASCII character beside it sends the text to the table)
    for code in range(128):
        ch = chr(code)
        assert visible_text(f"a{ch}b") == visible_text(f"a{ch}b\u00e9")[:-1], hex(code)
        hidden = unicodedata.category(ch) in {"Cc", "Zs"}
        assert visible_length(ch) == (0 if hidden else 1), hex(code)
