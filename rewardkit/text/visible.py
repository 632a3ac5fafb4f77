"""What counts as content: the characters a reader can see.

A rule such as "the reasoning block is not empty" is only as strong as its idea of
empty. ``str.strip()`` removes spaces, but a zero-width space (``\\u200b``), a word
joiner, a byte-order mark, a bidirectional mark, a soft hyphen or a Hangul filler
survives it, renders as nothing, and costs the policy one token. Every reward that asks
for content asks for *visible* content, and reads it here, so the built-in rewards and
the plugins agree on what empty means.

Left out of the visible text (by Unicode general category): control characters (Cc),
format characters (Cf: zero-width spaces and joiners, BOM, bidi controls, soft hyphen,
tag characters), surrogates (Cs), space separators (Zs, every kind of space), line and
paragraph separators (Zl, Zp), combining marks (Mn, Me: they belong to the letter
before them, and alone they show nothing; this includes the variation selectors and
the combining grapheme joiner), and the letters and symbols that render as blank (the
Hangul fillers U+115F, U+1160, U+3164, U+FFA0 and the braille blank U+2800).

>>> visible_length("<think>\\u200b \\u2060\\n</think>"[7:-8])
0
>>> visible_text(" 4\\u200b2 ")
'42'
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

#: Unicode general categories that carry no visible character of their own
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp", "Mn", "Me"})

#: letters and symbols whose glyph is blank (their category says they are content)
BLANK_GLYPHS = frozenset({"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"})


@lru_cache(maxsize=1)
def _invisible() -> re.Pattern[str]:
    """One character class of every invisible code point (built once per process, in
    about 0.1 s, so the scans run at the regex engine's speed)."""
    ranges: list[str] = []
    start = None
    for code in range(sys.maxunicode + 2):
        hidden = code <= sys.maxunicode and (
            unicodedata.category(chr(code)) in INVISIBLE_CATEGORIES or chr(code) in BLANK_GLYPHS)
        if hidden and start is None:
            start = code
        elif not hidden and start is not None:
            ranges.append(f"\\U{start:08x}-\\U{code - 1:08x}")
            start = None
    return re.compile(f"[{''.join(ranges)}]+")


def visible_text(text: str) -> str:
    """``text`` without its invisible characters (see the module docstring).

    Linear in the length of ``text``.
    """
    return _invisible().sub("", text)


def visible_length(text: str) -> int:
    """How many visible characters ``text`` has: what a "non-empty" or "at least N
    characters" rule counts.

    >>> visible_length("a b\\u200b")
    2
    """
    return len(visible_text(text))
