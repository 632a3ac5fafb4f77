"""What a reward grades: the part of an output that follows its reasoning.

A reasoning model writes its thinking first (``<think>...</think>``) and its answer
after. Every reward that reads an answer reads it here, so that a guess written inside
the reasoning is never paid, an output whose reasoning never closes has given no answer,
and all rewards see the same text: the built-in rewards' ``reasoning_tag`` and the
first-party plugins' read the answer this one way.

The default (``reasoning_tag=None``): a ``<think>`` block, when the output has one, is
reasoning; an output with no ``<think>`` tag at all is all answer. A named tag
(``reasoning_tag="reasoning"``) says the model always reasons in that tag: an output
without its closing tag has given no answer.

>>> graded_text("<think>first, think; then, answer</think>\\n\\nThe sky is blue")
'The sky is blue'
>>> graded_text("The sky is blue")
'The sky is blue'
>>> graded_text("<think>it is blue, so") is None
True
>>> graded_text("blue", "reasoning") is None
True
"""

from __future__ import annotations

#: the reasoning tag read when a reward names none (DeepSeek-R1, Qwen3, QwQ write it)
DEFAULT_REASONING_TAG = "think"


def graded_text(text: str, reasoning_tag: str | None = None) -> str | None:
    """The answer part of an output: what follows its reasoning, less the line breaks
    right after the closing tag (chat templates put ``\\n\\n`` there, and "the first
    line" is the answer's own); None when the reasoning never closes (score it wrong).

    ``reasoning_tag=None`` reads a ``<think>`` block as reasoning when there is one and
    the whole text when there is none; a named tag must close (see the module).
    """
    if reasoning_tag:
        after = after_reasoning(text, reasoning_tag)
    elif "think>" not in text:  # one plain search in the common case
        return text
    elif f"</{DEFAULT_REASONING_TAG}>" in text:
        after = after_reasoning(text, DEFAULT_REASONING_TAG)
    else:
        return None if f"<{DEFAULT_REASONING_TAG}>" in text else text
    return None if after is None else after.lstrip("\r\n")


def after_reasoning(text: str, tag: str) -> str | None:
    """What follows the last closing ``</tag>`` of a reasoning block, as written, or None
    when the reasoning never closes (:func:`graded_text` is what rewards call: it also
    reads ``<think>`` by default and drops the line breaks after the tag).

    None is a verdict, not a missing value: an output whose reasoning never closes has
    given no answer (a reward scores it wrong), and reading the whole text instead would
    pay a guess written inside the reasoning.

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
