"""XML-style tag blocks in a completion: ``<answer>...</answer>`` and reasoning blocks.

The block a reward reads (the last complete one, or the first), every block of a tag, and
what follows a closed reasoning block. Apart from answer extraction because the format and
content rewards read tag blocks too, without extracting an answer. Linear in the text.
:func:`after_reasoning` is public (``rewardkit.after_reasoning``); the rest is private
to :mod:`rewardkit.builtin`.
"""

from __future__ import annotations

#: the most final statements (answer blocks, boxes, math spans) of one output read and
#: compared with each other: a bound on the work an output can ask for
_MAX_STATEMENTS = 200


def tag_block(text: str, tag: str, first: bool = False) -> str | None:
    """Content of the last (or ``first``) complete ``<tag>...</tag>`` block, or None.

    >>> tag_block("<answer>1</answer> <answer> 2 </answer>", "answer")
    ' 2 '
    """
    span = _tag_span(text, tag, first)
    return None if span is None else text[span[0] + len(tag) + 2 : span[1] - len(tag) - 3]


def tag_blocks(text: str, tag: str) -> list[str]:
    """Contents of every complete ``<tag>...</tag>`` block, in order (at most
    ``_MAX_STATEMENTS``).

    >>> tag_blocks("<answer>1</answer> <answer> 2 </answer>", "answer")
    ['1', ' 2 ']
    """
    return [block for _, _, block in _tag_block_spans(text, tag)]


def _tag_block_spans(text: str, tag: str) -> list[tuple[int, int, str]]:
    """(start, end, contents) of every complete ``<tag>...</tag>`` block, in order (at
    most ``_MAX_STATEMENTS``); a block opened twice keeps what follows its last opener."""
    opener, closer = f"<{tag}>", f"</{tag}>"
    spans: list[tuple[int, int, str]] = []
    pos = text.find(opener)
    while pos >= 0 and len(spans) < _MAX_STATEMENTS:
        close = text.find(closer, pos + len(opener))
        if close < 0:
            break
        block = text[pos + len(opener) : close]
        block = block[block.rfind(opener) + len(opener) :] if opener in block else block
        spans.append((pos, close + len(closer), block))
        pos = text.find(opener, close + len(closer))
    return spans


def _tag_span(text: str, tag: str, first: bool = False) -> tuple[int, int] | None:
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


def after_reasoning(text: str, tag: str) -> str | None:
    """What follows the last closing ``</tag>`` of a reasoning block (the part of a
    reasoning model's output that is its answer), or None when the reasoning never closes.

    Public as ``rewardkit.after_reasoning``: the built-in rewards' ``reasoning_tag`` and
    the plugins' read the answer of a reasoning model this one way.  None is a verdict,
    not a missing value: an output whose reasoning never closes has given no answer (a
    reward scores it wrong), and reading the whole text instead would pay a guess written
    inside the reasoning.  Nothing is stripped: a reward that wants the answer's first
    line drops the newline after the tag itself.

    >>> after_reasoning("<think>maybe 3</think> It is 4.", "think")
    ' It is 4.'
    >>> after_reasoning("<think>3? <think>no, 4</think>\\n4", "think")
    '\\n4'
    >>> after_reasoning("<think>it is 4, so", "think") is None
    True

    A reasoning block opened after the last closing tag is one that never closes too (an
    empty ``<think></think>`` first, then the real reasoning left open, would otherwise
    have the answer read from inside it):

    >>> after_reasoning("<think></think><think>it is 4, so 4", "think") is None
    True
    """
    closer = f"</{tag}>"
    end = text.rfind(closer)
    if end < 0:
        return None
    rest = text[end + len(closer) :]
    return None if f"<{tag}>" in rest else rest
