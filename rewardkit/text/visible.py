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

Two texts that look the same are compared on their *folded* forms (:func:`folded`):
NFKC, case folded, format characters (zero-width spaces and joiners, bidi controls) and
combining marks dropped, and the common lookalikes NFKC leaves alone (Cyrillic and
Greek letters drawn like Latin ones, angle brackets, slashes and bars) mapped to what
they look like. The judge's data blocks find markers this way, and
``instruction_following`` finds a prompt echoed with one Cyrillic letter swapped in.

>>> folded("\\u0415cho\\u200bed")
'echoed'
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

#: lookalikes that NFKC leaves alone, folded to what they look like (brackets, slash,
#: bar, and the Cyrillic and Greek letters that look like Latin ones; applied after case
#: folding, so only the lower-case forms are listed)
LOOKALIKES = str.maketrans({
    "\u2039": "<", "\u203a": ">", "\u2329": "<", "\u232a": ">", "\u3008": "<",
    "\u3009": ">", "\u27e8": "<", "\u27e9": ">", "\u02c2": "<", "\u02c3": ">",
    "\u1438": "<", "\u1433": ">", "\u276e": "<", "\u276f": ">", "\u2044": "/",
    "\u2215": "/", "\u29f8": "/", "\u2223": "|", "\u01c0": "|", "\u05c0": "|",
    "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c",
    "\u0443": "y", "\u0445": "x", "\u0456": "i", "\u0455": "s", "\u0458": "j",
    "\u0501": "d", "\u04bb": "h", "\u03bf": "o", "\u03c1": "p", "\u03bd": "v",
    "\u03b9": "i", "\u03ba": "k", "\u0131": "i",
})
#: general categories a folded text leaves out: format characters and combining marks
FOLD_DROPPED = frozenset({"Cf", "Mn", "Me"})


@lru_cache(maxsize=1)
def _invisible() -> re.Pattern[str]:
    """One character class of every invisible code point (built once per process, in
    0.3 s to 1 s of CPU, so the scans run at the regex engine's speed; ASCII texts do
    without it)."""
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


#: the invisible characters of ASCII: the controls (Cc) and the space (Zs). An ASCII text
#: (``str.isascii`` is a flag of the string: free) is scanned with this class, so a
#: process that only sees ASCII never builds :func:`_invisible`'s table (about 1 s of CPU
#: on a loaded machine, paid by the first batch of a fresh trainer or worker)
_ASCII_INVISIBLE = re.compile("[\x00-\x20\x7f]+")


def visible_text(text: str) -> str:
    """``text`` without its invisible characters (see the module docstring).

    Linear in the length of ``text``.
    """
    return (_ASCII_INVISIBLE if text.isascii() else _invisible()).sub("", text)


def visible_length(text: str) -> int:
    """How many visible characters ``text`` has: what a "non-empty" or "at least N
    characters" rule counts.

    >>> visible_length("a b\\u200b")
    2
    """
    return len(visible_text(text))


def folded_with_positions(text: str) -> tuple[str, list[int]]:
    """:func:`folded` ``text``, and for each folded character the index in ``text`` of
    the character it came from (what an escaper needs to edit the original).

    Linear in the length of ``text``.
    """
    if text.isascii():
        return text.lower(), list(range(len(text)))
    out: list[str] = []
    where: list[int] = []
    table = _FOLDS
    for i, ch in enumerate(text):
        piece = table[ord(ch)]
        if piece:
            out.append(piece)
            where.extend([i] * len(piece))
    return "".join(out), where


def folded(text: str) -> str:
    """``text`` as it is compared with another text that may look the same: each
    character NFKC-normalised and case folded, format characters (``\\u200b``, bidi
    controls) and combining marks dropped, and :data:`LOOKALIKES` mapped (a Cyrillic
    ``е`` is an ``e``, ``＜`` and ``‹`` are ``<``).

    >>> folded("R\\u0435SPONSE\\u2060"), folded("\\uff1c/x\\u203a")
    ('response', '</x>')
    """
    if text.isascii():
        return text.lower()
    return text.translate(_FOLDS)


def _fold_one(ch: str) -> str:
    """The folded form of one character (what :func:`folded` makes of it: each character
    is folded on its own)."""
    if unicodedata.category(ch) in FOLD_DROPPED:
        return ""
    return unicodedata.normalize("NFKC", ch).casefold().translate(LOOKALIKES)


class _FoldTable(dict[int, str]):
    """Code point -> its folded form (:func:`_fold_one`), filled as characters are met:
    ``str.translate`` reads it at C speed, so a text pays the Unicode database once per
    distinct character, not once per character. Emptied when it holds
    :data:`FOLD_TABLE_MAX` characters (a stream of ever-new characters cannot grow it
    without bound)."""

    def __missing__(self, code: int) -> str:
        if len(self) >= FOLD_TABLE_MAX:
            self.clear()
        piece = self[code] = _fold_one(chr(code))
        return piece


#: most characters :data:`_FOLDS` remembers
FOLD_TABLE_MAX = 1 << 16
_FOLDS = _FoldTable()
