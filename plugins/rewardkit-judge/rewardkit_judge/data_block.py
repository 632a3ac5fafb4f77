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
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from rewardkit.text.visible import LOOKALIKES, folded, folded_with_positions

__all__ = ["BLOCK_NAMES", "DEFAULT_MARKERS", "LOOKALIKES", "TEMPLATE_FAMILIES",
           "TEMPLATE_TAGS", "Markers", "block_nonce", "cut_middle", "data_block",
           "escape_markers", "markers_for", "special_tokens"]

#: the names of the blocks a judge prompt holds (and that completions may not write)
BLOCK_NAMES = ("prompt", "response", "reference", "cut")
#: other tags a judge's template may wrap a block in (SEEDS C's ``<src>`` and
#: ``<translation>``): escaped in blocks too
TEMPLATE_TAGS = ("src", "translation")

#: any ``<|name|>`` token: ChatML's ``<|im_start|>``, Llama 3's ``<|eot_id|>`` and its
#: reserved tokens, Phi's ``<|assistant|>``, DeepSeek's ``<｜User｜>`` (folded)
_BAR_TOKEN = r"<\s*\|[^|<>\n]{1,64}\|\s*>"
#: each chat-template family's control tokens as its tokenizer spells them, and the
#: shapes of the families that reserve whole ranges of them (matched on folded text)
TEMPLATE_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "chatml": (("<|im_start|>", "<|im_end|>", "<|im_sep|>", "<|endoftext|>"), (_BAR_TOKEN,)),
    "llama2": (("<s>", "</s>", "<unk>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>"), ()),
    "llama3": (("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>",
                "<|finetune_right_pad_id|>"), (_BAR_TOKEN,)),
    "mistral": (("<s>", "</s>", "<unk>", "<pad>", "[INST]", "[/INST]", "[SYSTEM_PROMPT]",
                 "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                 "[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CONTENT]",
                 "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]", "[IMG]", "[IMG_BREAK]",
                 "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]"),
                (r"<\s*special_\d{1,6}\s*>",)),
    "gemma": (("<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "<start_of_turn>",
               "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"),
              (r"<\s*unused\d{1,6}\s*>",)),
    "phi": (("<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>",
             "<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|tool|>", "<|tool_call|>",
             "<|/tool_call|>", "<|tool_response|>", "<|/tool|>"), (_BAR_TOKEN,)),
    "deepseek": (("<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                  "<\uff5cend\u2581of\u2581sentence\uff5c>", "<\uff5cUser\uff5c>",
                  "<\uff5cAssistant\uff5c>", "<\uff5ctool\u2581calls\u2581begin\uff5c>",
                  "<\uff5ctool\u2581calls\u2581end\uff5c>",
                  "<\uff5ctool\u2581call\u2581begin\uff5c>",
                  "<\uff5ctool\u2581call\u2581end\uff5c>", "<\uff5ctool\u2581sep\uff5c>",
                  "<\uff5ctool\u2581outputs\u2581begin\uff5c>",
                  "<\uff5ctool\u2581outputs\u2581end\uff5c>",
                  "<\uff5ctool\u2581output\u2581begin\uff5c>",
                  "<\uff5ctool\u2581output\u2581end\uff5c>"), (_BAR_TOKEN,)),
    "qwen": (("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|vision_start|>",
              "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
              "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
              "<|quad_start|>", "<|quad_end|>", "<|fim_prefix|>", "<|fim_middle|>",
              "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
              "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"),
             (_BAR_TOKEN,)),
}

_NAMES = "|".join((*BLOCK_NAMES, *TEMPLATE_TAGS))
#: what no block may hold whatever the judge: the start of a block marker, closed or not
_BLOCK_MARKER = rf"<\s*/?\s*(?:{_NAMES})\b"
_ENTITY = {"<": "&lt;", "[": "&#91;", ">": "&gt;", "]": "&#93;"}
#: a token opens with one of these (after folding) or it is not escaped: a special token
#: spelled as a plain word cannot be escaped without changing every honest use of it
_OPENERS = ("<", "[")


def _token_pattern(token: str) -> str:
    """A regular expression of the folded ``token`` that also takes spaces inside its
    brackets (``[ /INST ]``, ``< |im_start| >``)."""
    text = folded(token)
    head = len(text) - len(text.lstrip("<[/|{("))
    tail = len(text) - len(text.rstrip(">]/|})"))
    if head + tail >= len(text):
        return r"\s*".join(map(re.escape, text))
    middle = text[head : len(text) - tail]
    return r"\s*".join([*map(re.escape, text[:head]), re.escape(middle),
                        *map(re.escape, text[len(text) - tail :])])


def _escapable(token: str) -> bool:
    text = folded(token).strip()
    return len(text) >= 3 and text.startswith(_OPENERS) and not text.isspace()


@dataclass(frozen=True)
class Markers:
    """What a block may not hold: the block markers, the control tokens of the chat
    templates in ``families`` (every family when None) and the ``tokens`` given (a
    judge tokenizer's special tokens), each matched on folded text."""

    families: tuple[str, ...] | None = None
    tokens: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = set(self.families or ()) - set(TEMPLATE_FAMILIES)
        if unknown:
            raise ValueError(f"unknown chat-template families {sorted(unknown)}; known: "
                             f"{', '.join(TEMPLATE_FAMILIES)}")

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.families, self.tokens)

    def escape(self, text: str) -> str:
        """``text`` with every marker escaped (:func:`escape_markers`)."""
        return escape_markers(text, self)


@lru_cache(maxsize=64)
def _compiled(families: tuple[str, ...] | None, tokens: tuple[str, ...]) -> re.Pattern[str]:
    names = TEMPLATE_FAMILIES if families is None else families
    literal: set[str] = {t for t in tokens if _escapable(t)}
    shapes: set[str] = set()
    for name in names:
        family_tokens, family_shapes = TEMPLATE_FAMILIES[name]
        literal.update(family_tokens)
        shapes.update(family_shapes)
    # the longest first, so ``[/INST]`` is not read as a shorter token and a rest
    alternatives = [_BLOCK_MARKER, *sorted(shapes),
                    *sorted({_token_pattern(t) for t in literal}, key=len, reverse=True)]
    return re.compile("|".join(alternatives))


def markers_for(families: str | Iterable[str] | None = None,
                tokens: Iterable[str] = ()) -> Markers:
    """The markers of a judge: the families named (one name, several, or None: all)
    and the special tokens of its tokenizer."""
    chosen = (families,) if isinstance(families, str) else \
        None if families is None else tuple(sorted(set(families)))
    return Markers(chosen, tuple(sorted({t for t in tokens if _escapable(t)})))


#: every family's tokens: what a block escapes when nothing is known about the judge
DEFAULT_MARKERS = Markers()
#: the default markers' pattern (matched on folded text)
_MARKER = DEFAULT_MARKERS.pattern
_folded = folded_with_positions


def special_tokens(tokenizer: object) -> list[str]:
    """A transformers tokenizer's special tokens: ``all_special_tokens`` and every added
    token marked special (``added_tokens_decoder``)."""
    found = set(getattr(tokenizer, "all_special_tokens", None) or ())
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    found.update(t.content for t in decoder.values() if getattr(t, "special", False))
    return sorted(t for t in found if isinstance(t, str))


def block_nonce(*texts: str) -> str:
    """The tag of one sample's blocks: 16 hex digits of a SHA-256 of its texts."""
    digest = hashlib.sha256(b"rewardkit-judge block\0")
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


def _entity(original: str, folded_char: str) -> str:
    return _ENTITY.get(folded_char) or f"&#{ord(original)};"


def _escape_openers(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with the opening character of each marker it holds as an HTML entity."""
    folded_text, where = folded_with_positions(text)
    pieces: list[str] = []
    at = 0
    for match in pattern.finditer(folded_text):
        start = where[match.start()]
        if start < at:  # the same character (folding made several of it)
            continue
        pieces += [text[at:start], _entity(text[start], folded_text[match.start()])]
        at = start + 1
    pieces.append(text[at:])
    return "".join(pieces)


def escape_markers(text: str, markers: Markers = DEFAULT_MARKERS) -> str:
    """``text`` with every block marker and chat-template control token of ``markers``
    escaped (the character that opens it written as an HTML entity, so no tokenizer
    reads it as a special token and no reader as a marker); all other text is kept as
    it is.

    Escaping one marker can only remove brackets, but an opener whose closing bracket
    was another marker's could then close further on; so it runs again on its own
    output, and if a few passes leave a marker, every bracket is escaped (linear time;
    every marker holds a ``<`` or a ``[``).
    """
    pattern = markers.pattern
    for _ in range(3):
        escaped = _escape_openers(text, pattern)
        if escaped == text:
            return text
        text = escaped
    if not pattern.search(folded(text)):
        return text
    out: list[str] = []
    for ch in text:
        folded_ch = folded(ch)
        out.append("".join(_ENTITY.get(c, c) for c in folded_ch)
                   if any(c in _ENTITY for c in folded_ch) else ch)
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


def data_block(name: str, text: str, nonce: str, budget: int = 0,
               markers: Markers = DEFAULT_MARKERS) -> str:
    """``text`` as the block ``name`` tagged ``nonce``: its ``markers`` escaped, cut to
    ``budget`` characters (0: not cut), with a note after it when it was cut."""
    head, tail, cut = cut_middle(text, budget)
    body = escape_markers(head, markers)
    if cut is not None:
        body += f"\n<cut-{nonce}/>\n{escape_markers(tail, markers)}"
    block = f"<{name}-{nonce}>\n{body}\n</{name}-{nonce}>"
    if cut is not None:
        block += (f"\n(The {name} is {cut.chars} characters long; only its first "
                  f"{len(head)} and last {cut.kept - len(head)} are shown, and "
                  f"<cut-{nonce}/> marks where the rest was cut.)")
    return block
