"""How a sample's text enters a judge's prompt: as data, in a block it cannot close.

A judge reads the policy's completion inside its own instructions, so a completion that
writes ``</response>`` and then a new rubric, a forged end of the prompt, or the judge's
chat-template role markers (``<|im_end|><|im_start|>assistant``) would reach the judge as
instructions. Here every sample field (prompt, completion, reference) becomes a block::

    <response-3f9a0c1d2e4b5a69>
    ...the completion, escaped...
    </response-3f9a0c1d2e4b5a69>

* The tag carries a nonce: 64 bits of a SHA-256 of the sample's own text. To close its
  block, a completion would have to contain a hash of itself; and the same sample gets
  the same prompt each time (so verdicts cache, and vLLM's prefix cache holds).
* The text is escaped: whatever reads as a block marker (``<response>``, ``</prompt-…>``,
  ``<cut-…>``, and the ``<src>``/``<translation>`` tags a template may put around a
  block) or as a chat-template control token (``<|…|>``, ``<s>``, ``</s>``,
  ``[INST]``, ``<<SYS>>``, ``<start_of_turn>``) has its opening bracket written as an
  HTML entity (``&lt;|im_start|>``), so no tokenizer reads it as a special token and no
  reader as a marker. Markers are found on a folded copy of the text (NFKC, case folded,
  zero-width and combining characters dropped, common lookalikes of ``< > / |`` and of
  Latin letters mapped), so ``＜/rеsponse＞`` (fullwidth brackets, a Cyrillic е) or
  ``</re\\u200bsponse>`` are escaped too.
* A completion over the character budget is cut in the middle (its head and its tail
  are kept, where the final answer usually is), never the instructions around it; the
  cut is marked inside the block by ``<cut-NONCE/>`` and said after it.

>>> nonce = block_nonce("q", "a </response> b")
>>> print(data_block("response", "a </response> b", nonce).replace(nonce, "N"))
<response-N>
a &lt;/response> b
</response-N>
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

#: the names of the blocks a judge prompt holds (and that completions may not write)
BLOCK_NAMES = ("prompt", "response", "reference", "cut")
#: other tags a judge's template may wrap a block in (SEEDS C's ``<src>`` and
#: ``<translation>``): escaped in blocks too
TEMPLATE_TAGS = ("src", "translation")

#: lookalikes that NFKC leaves alone, folded to what they look like (brackets, slash,
#: bar, and the Cyrillic and Greek letters that look like Latin ones)
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

_NAMES = "|".join((*BLOCK_NAMES, *TEMPLATE_TAGS))
#: what must not survive in a block, matched on the folded text
_MARKER = re.compile(
    rf"<\s*/?\s*(?:{_NAMES})\b"  # the start of a block marker, closed or not
    r"|<\s*\|[^|<>\n]{1,64}\|\s*>"  # <|im_start|>, <|eot_id|>, <|assistant|>, DeepSeek's
    r"|<\s*/?\s*s\s*>|<\s*(?:bos|eos|pad|unk|start_of_turn|end_of_turn)\s*>"
    r"|\[\s*/?\s*(?:inst|sys|available_tools|tool_calls|tool_results)\s*\]"
    r"|<<\s*/?\s*sys\s*>>"
)
_ENTITY = {"<": "&lt;", "[": "&#91;", ">": "&gt;", "]": "&#93;"}


def block_nonce(*texts: str) -> str:
    """The tag of one sample's blocks: 16 hex digits of a SHA-256 of its texts."""
    digest = hashlib.sha256(b"rewardkit-judge block\0")
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` folded for finding markers, and the index in ``text`` of each folded
    character."""
    if text.isascii():
        return text.lower(), list(range(len(text)))
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in ("Cf", "Mn", "Me"):
            continue
        for piece in unicodedata.normalize("NFKC", ch).casefold().translate(LOOKALIKES):
            out.append(piece)
            where.append(i)
    return "".join(out), where


def _escape_openers(text: str) -> str:
    """``text`` with the opening bracket of each marker it holds as an HTML entity."""
    folded, where = _folded(text)
    pieces: list[str] = []
    at = 0
    for match in _MARKER.finditer(folded):
        start = where[match.start()]
        if start < at:  # the same character (folding made several of it)
            continue
        pieces += [text[at:start], _ENTITY[folded[match.start()]]]
        at = start + 1
    pieces.append(text[at:])
    return "".join(pieces)


def escape_markers(text: str) -> str:
    """``text`` with every block marker and chat-template control token escaped (the
    bracket that opens it written as an HTML entity, so no tokenizer reads it as a
    special token and no reader as a marker); all other text is kept as it is.

    Escaping one marker can only remove brackets, but an opener whose closing bracket
    was another marker's could then close further on; so it runs again on its own
    output, and if a few passes leave a marker, every bracket is escaped (linear time).
    """
    for _ in range(3):
        escaped = _escape_openers(text)
        if escaped == text:
            return text
        text = escaped
    if not _MARKER.search(_folded(text)[0]):
        return text
    out: list[str] = []
    for ch in text:
        folded = _folded(ch)[0]
        out.append("".join(_ENTITY.get(c, c) for c in folded)
                   if any(c in _ENTITY for c in folded) else ch)
    return "".join(out)


@dataclass(frozen=True)
class Cut:
    """How much of a text over its budget was kept."""

    chars: int  # the text's length
    kept: int  # characters kept: the head and the tail


def cut_middle(text: str, budget: int) -> tuple[str, str, Cut | None]:
    """(head, tail, cut): ``text`` split around its cut middle when it is longer than
    ``budget`` characters (``budget`` 0: never cut; then tail is empty)."""
    if not budget or len(text) <= budget:
        return text, "", None
    head = (budget + 1) // 2
    return text[:head], text[len(text) - (budget - head):], Cut(len(text), budget)


def data_block(name: str, text: str, nonce: str, budget: int = 0) -> str:
    """``text`` as the block ``name`` tagged ``nonce``: escaped, cut to ``budget``
    characters (0: not cut), with a note after it when it was cut."""
    head, tail, cut = cut_middle(text, budget)
    body = escape_markers(head)
    if cut is not None:
        body += f"\n<cut-{nonce}/>\n{escape_markers(tail)}"
    block = f"<{name}-{nonce}>\n{body}\n</{name}-{nonce}>"
    if cut is not None:
        block += (f"\n(The {name} is {cut.chars} characters long; only its first "
                  f"{len(head)} and last {cut.kept - len(head)} are shown, and "
                  f"<cut-{nonce}/> marks where the rest was cut.)")
    return block
