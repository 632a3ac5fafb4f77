"""rewardkit.text.visible: the one definition of "content" that every non-empty rule uses."""

from __future__ import annotations

import time
import unicodedata

import pytest

from rewardkit import visible_length, visible_text
from rewardkit.text.visible import FOLD_DROPPED, LOOKALIKES, folded, folded_with_positions

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
    start = time.process_time()  # CPU: the cost, whatever the machine's load
    assert visible_length("\u200b\u3164" * 500_000) == 0
    assert time.process_time() - start < 0.5


def test_ascii_texts_are_read_as_the_whole_table_reads_them() -> None:
    # an ASCII text is scanned with a class of its own (the table is never built for it):
    # every ASCII character, alone and inside ASCII text, is kept or dropped as the whole
    # Unicode table would (a non-ASCII character beside it sends the text to the table)
    for code in range(128):
        ch = chr(code)
        assert visible_text(f"a{ch}b") == visible_text(f"a{ch}b\u00e9")[:-1], hex(code)
        hidden = unicodedata.category(ch) in {"Cc", "Zs"}
        assert visible_length(ch) == (0 if hidden else 1), hex(code)


def _folded_char_by_char(text: str) -> str:
    """folded as it was written before its table (each character through the Unicode
    database in turn): the definition the table must give back."""
    if text.isascii():
        return text.lower()
    return "".join(piece for ch in text if unicodedata.category(ch) not in FOLD_DROPPED
                   for piece in unicodedata.normalize("NFKC", ch).casefold()
                   .translate(LOOKALIKES))


def test_folded_gives_what_folding_each_character_gives() -> None:
    # every character of the Basic Multilingual Plane, a sample of the others (each
    # alone, then all together), random mixtures, and the repository's own non-ASCII
    # texts (test cases, docs); folded_with_positions agrees with folded on each
    import random
    from pathlib import Path

    rng = random.Random(42)
    codes = [*range(0x10000), *rng.sample(range(0x10000, 0x110000), 20_000)]
    chars = [chr(c) for c in codes]
    for ch in chars:
        assert folded(ch) == _folded_char_by_char(ch), hex(ord(ch))
    assert folded("".join(chars)) == _folded_char_by_char("".join(chars))
    pool = chars[:600] + list("aZ 9\u0301\u200b\u0435\u00df\ufb01")
    texts = ["".join(rng.choices(pool, k=rng.randrange(1, 60))) for _ in range(3000)]
    root = Path(__file__).resolve().parents[2]
    texts += [p.read_text(encoding="utf-8") for pattern in ("tests/cases/**/*.yaml", "docs/*.md")
              for p in sorted(root.glob(pattern))]
    assert sum(not t.isascii() for t in texts) > 3000
    for text in texts:
        assert folded(text) == _folded_char_by_char(text)
        out, where = folded_with_positions(text)
        assert out == folded(text) and len(where) == len(out)
        assert all(_folded_char_by_char(text[i]).count(c) for c, i in zip(out, where, strict=True))


def test_the_fold_table_stays_bounded() -> None:
    from rewardkit.text import visible

    folded("".join(chr(c) for c in range(0x4E00, 0x4E00 + visible.FOLD_TABLE_MAX + 10)))
    assert len(visible._FOLDS) <= visible.FOLD_TABLE_MAX
    assert folded("\u0415cho") == "echo"
