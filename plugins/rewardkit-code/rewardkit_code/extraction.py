"""Finding the program in a model's answer: fenced code blocks, or the whole text.

Blocks are read line by line, the way CommonMark reads them: an opening fence is three
or more backticks or tildes (indented at most three spaces) with an optional info
string (``python``); the block ends at a line holding only a fence of the same
character at least as long, or at the end of the text (an unclosed block, e.g. a
truncated generation, runs to the end).

>>> extract_code("Here:\\n```python\\nprint(1)\\n```\\nDone.", "fenced")
'print(1)\\n'
>>> extract_code("no code at all", "fenced") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ExtractMode = Literal["fenced", "last_block", "whole"]

_OPENING = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$")
_CLOSING = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
#: what a fence line starts with once its (at most three) leading spaces are stripped
_FENCE_STARTS = ("```", "~~~")

#: info strings that name the same language
LANGUAGE_ALIASES: dict[str, frozenset[str]] = {
    "python": frozenset({"python", "py", "python3", "py3"}),
    "cpp": frozenset({"cpp", "c++", "cc", "cxx"}),
    "javascript": frozenset({"javascript", "js", "node", "nodejs"}),
    "typescript": frozenset({"typescript", "ts"}),
    "bash": frozenset({"bash", "sh", "shell"}),
    "go": frozenset({"go", "golang"}),
}


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block: its info-string language (lower case, may be empty) and body."""

    language: str
    code: str


def code_blocks(text: str) -> list[CodeBlock]:
    """Every fenced code block of ``text``, in order (linear time, no backtracking)."""
    blocks: list[CodeBlock] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.lstrip(" ")[:3] not in _FENCE_STARTS:  # neither opens nor closes a block
            if fence is not None:
                body.append(line)
            continue
        bare = line.rstrip("\r\n")
        if fence is None:
            opening = _OPENING.match(bare)
            if opening:
                fence, language, body = opening.group(1), opening.group(2).lower(), []
            continue
        closing = _CLOSING.match(bare)
        if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
            blocks.append(CodeBlock(language, "".join(body)))
            fence = None
            continue
        body.append(line)
    if fence is not None:
        blocks.append(CodeBlock(language, "".join(body)))
    return blocks


def language_names(language: str) -> frozenset[str]:
    """The info strings accepted for ``language`` (``python`` -> python, py, python3...)."""
    key = language.lower()
    return LANGUAGE_ALIASES.get(key, frozenset({key}))


def extract_code(text: str, mode: ExtractMode = "fenced", language: str = "python") -> str | None:
    """The program in ``text``, or ``None`` when there is none.

    ``fenced``: the last block tagged with ``language`` (or an alias: ``py``), else the
    last untagged block; blocks tagged with another language are ignored.
    ``last_block``: the last fenced block whatever its tag. ``whole``: the whole text.
    Blank results count as no program.

    >>> extract_code("```py\\na = 1\\n```\\n```\\nb = 2\\n```", "fenced")
    'a = 1\\n'
    >>> extract_code("```text\\nhi\\n```", "last_block")
    'hi\\n'
    """
    if mode == "whole":
        code: str | None = text
    else:
        blocks = code_blocks(text)
        if mode == "last_block":
            code = blocks[-1].code if blocks else None
        else:
            names = language_names(language)
            tagged = [block for block in blocks if block.language in names]
            untagged = [block for block in blocks if not block.language]
            chosen = tagged or untagged
            code = chosen[-1].code if chosen else None
    if code is None or not code.strip():
        return None
    return code
