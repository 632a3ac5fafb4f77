"""XML-style tag blocks in a completion: ``<answer>...</answer>`` and reasoning blocks.

The block a reward reads (the last complete one, or the first) and every block of a tag
(what follows a closed reasoning block is :mod:`rewardkit.text.graded`'s). Apart from
answer extraction because the format and content rewards read tag blocks too, without
extracting an answer. Linear in the text. Private to :mod:`rewardkit.builtin`.
"""

from __future__ import annotations

#: the most final statements (answer blocks, boxes, math spans) of one output read and
#: compared with each other: a bound on the work an output can ask for
MAX_STATEMENTS = 200


def tag_block(text: str, tag: str, first: bool = False) -> str | None:
    """Content of the last (or ``first``) complete ``<tag>...</tag>`` block, or None.

    >>> tag_block("<answer>1</answer> <answer> 2 </answer>", "answer")
    ' 2 '
    """
    span = tag_span(text, tag, first)
    return None if span is None else text[span[0] + len(tag) + 2 : span[1] - len(tag) - 3]


def tag_blocks(text: str, tag: str) -> list[str]:
    """Contents of every complete ``<tag>...</tag>`` block, in order (at most
    ``MAX_STATEMENTS``).

    >>> tag_blocks("<answer>1</answer> <answer> 2 </answer>", "answer")
    ['1', ' 2 ']
    """
    return [block for _, _, block in tag_block_spans(text, tag)]


def tag_block_spans(text: str, tag: str) -> list[tuple[int, int, str]]:
    """(start, end, contents) of every complete ``<tag>...</tag>`` block, in order (at
    most ``MAX_STATEMENTS``); a block opened twice keeps what follows its last opener."""
    opener, closer = f"<{tag}>", f"</{tag}>"
    spans: list[tuple[int, int, str]] = []
    pos = text.find(opener)
    while pos >= 0 and len(spans) < MAX_STATEMENTS:
        close = text.find(closer, pos + len(opener))
        if close < 0:
            break
        block = text[pos + len(opener) : close]
        block = block[block.rfind(opener) + len(opener) :] if opener in block else block
        spans.append((pos, close + len(closer), block))
        pos = text.find(opener, close + len(closer))
    return spans


def tag_span(text: str, tag: str, first: bool = False) -> tuple[int, int] | None:
    """(start of the opener, end of the closer) of the last (or first) complete block."""
    opener, closer = f"<{tag}>", f"</{tag}>"
    if first:
        start = text.find(opener)
        close = text.find(closer, start + len(opener)) if start >= 0 else -1
        return (start, close + len(closer)) if close >= 0 else None
    close = text.rfind(closer)
    if close < 0:
        return None
    start = text.rfind(opener, 0, close)
    if start < 0:
        return None
    return start, close + len(closer)
