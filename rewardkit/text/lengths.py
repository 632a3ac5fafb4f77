"""How long a completion is: in characters, whitespace words, or real tokens.

Length-aware rewards (``overlong_penalty``, ``cosine_scaled``, ``group_length``) and
token n-grams (``repetition_penalty``) measure the completion with one of three units:

``chars``
    Unicode characters of the completion text.
``words``
    whitespace-separated words (what many recipes call "tokens" for lack of a tokenizer);
    invisible separators (a zero-width space) end a word too, words joined by punctuation
    (``a,b,c``) count one each, and a word counts one per 24 visible characters
    (:func:`word_count`), so neither gluing words together nor one endless word passes
    as short.
``tokens``
    the policy's own tokens. Taken, in this order, from

    1. the trainer's token ids: ``sample.metadata["completion_ids"]``, which the TRL,
       ms-swift and verl adapters fill from what their trainer hands the reward (TRL's
       ``completion_ids``, ms-swift's ``response_token_ids``, verl's valid response ids);
       a dataset or JSONL column of that name works the same way;
    2. for a length only (not for token n-grams), the trainer's token count:
       ``sample.metadata["completion_length"]``, which the EasyR1 adapter fills from the
       ``response_length`` EasyR1 passes (it passes no ids);
    3. the tokenizer named by the reward's ``tokenizer`` parameter: a local directory
       (``save_pretrained`` output) or a ``tokenizer.json`` file, loaded once per process
       with ``transformers`` (``pip install 'rewardkit[tokens]'``); nothing is downloaded.

    With neither, the grading fails (status ``error``) with a reason naming both, never
    a silent word count. ``details["length_source"]`` says which source was used.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rewardkit.authoring import Params
from rewardkit.text.visible import visible_text
from rewardkit.types import Sample

LengthUnit = Literal["chars", "words", "tokens"]

#: the metadata key carrying the trainer's token ids of the completion
COMPLETION_IDS = "completion_ids"
#: the metadata key carrying the trainer's token count of the completion (no ids)
COMPLETION_LENGTH = "completion_length"


class LengthError(ValueError):
    """The completion's length cannot be measured in the requested unit."""


class LengthParams(Params):
    """The unit a reward measures lengths in (shared by the length-aware rewards)."""

    unit: LengthUnit = Field(
        "chars",
        description="chars, words (whitespace-separated) or tokens (the trainer's "
        "completion_ids, else the tokenizer below)",
    )
    tokenizer: str | None = Field(
        None,
        description="local tokenizer directory or tokenizer.json, used for unit tokens when "
        "the sample carries no completion_ids (loaded once per process, never downloaded)",
    )


_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


def load_tokenizer(path: str) -> Any:
    """The tokenizer at ``path`` (a directory or a ``tokenizer.json``), loaded once per
    process. Raises :class:`LengthError` when it cannot be loaded."""
    with _TOKENIZERS_LOCK:
        cached = _TOKENIZERS.get(path)
        if cached is not None:
            return cached
        location = Path(path).expanduser()
        if not location.exists():
            raise LengthError(f"tokenizer {path!r} does not exist (a local directory or "
                              "tokenizer.json is expected; nothing is downloaded)")
        try:
            from transformers import AutoTokenizer, PreTrainedTokenizerFast
        except ImportError:
            raise LengthError("unit tokens with a tokenizer needs transformers: "
                              "pip install 'rewardkit[tokens]'") from None
        tokenizer: Any
        try:
            if location.is_file():
                tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(location))
            else:
                tokenizer = AutoTokenizer.from_pretrained(str(location), local_files_only=True)
        except Exception as exc:
            raise LengthError(f"tokenizer {path!r} cannot be loaded: "
                              f"{type(exc).__name__}: {exc}") from None
        _TOKENIZERS[path] = tokenizer
        return tokenizer


def completion_token_ids(sample: Sample, tokenizer: str | None) -> tuple[Sequence[int], str]:
    """The completion's token ids and where they came from (``completion_ids`` or
    ``tokenizer:<path>``). Raises :class:`LengthError` when neither source is there."""
    ids = sample.metadata.get(COMPLETION_IDS)
    if ids is not None:
        if hasattr(ids, "tolist"):  # a tensor or an array
            ids = ids.tolist()
        if not isinstance(ids, list | tuple):
            raise LengthError(f"metadata completion_ids is a {type(ids).__name__}, "
                              "expected a list of token ids")
        return ids, COMPLETION_IDS
    if tokenizer is None:
        if sample.metadata.get(COMPLETION_LENGTH) is not None:
            raise LengthError("token n-grams need the completion's token ids; the trainer "
                              "passed only its token count (completion_length): set the "
                              "tokenizer parameter to the policy's tokenizer (a local path)")
        raise LengthError("unit tokens needs the trainer's completion_ids or a tokenizer "
                          "parameter (a local tokenizer path); this sample has neither")
    tok = load_tokenizer(tokenizer)
    encoded = tok(sample.text, add_special_tokens=False)["input_ids"]
    return list(encoded), f"tokenizer:{tokenizer}"


#: a word counts one more word for every this many characters past its first ones
WORD_CHARS = 24


@lru_cache(maxsize=1)
def _word_breaks() -> re.Pattern[str]:
    """Whitespace and every invisible separator (format, control, space, line and
    paragraph separators): what ends a word (built once per process)."""
    hidden = "".join(
        re.escape(chr(code)) for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in {"Cc", "Cf", "Zs", "Zl", "Zp"}
    )
    return re.compile(f"[\\s{hidden}]+")


@lru_cache(maxsize=1)
def _word_pieces() -> re.Pattern[str]:
    """The words inside one run between spaces: letters and digits with their combining
    marks, an apostrophe between letters (``don't``, at most two: ``rock'n'roll``) and
    a number's own separators (``1,000.5``, ``3.14``) kept inside; any other character
    (a comma, a slash, a hyphen, a period between letters) is between two words."""
    marks = "".join(
        re.escape(chr(code)) for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in {"Mn", "Mc", "Me"}
    )
    letter = f"(?:[^\\W_]|[{marks}])"
    return re.compile(rf"\d+(?:,\d{{3}})+(?:\.\d+)?(?!{letter})|\d+\.\d+(?!{letter})"
                      rf"|{letter}+(?:['\u2019]{letter}+){{0,2}}")


def _long_word(word: str) -> int:
    """The words one run of characters counts for its length: one per
    :data:`WORD_CHARS` visible characters."""
    if len(word) <= WORD_CHARS:
        return 1 if word else 0
    return max(1, -(-len(visible_text(word)) // WORD_CHARS))


def word_count(text: str) -> int:
    """Words of ``text``: runs between whitespace or invisible separators (a zero-width
    space ends a word as a space does), each counting one word per :data:`WORD_CHARS`
    visible characters (so a 12,000-character run is 500 words, not 1; an honest long
    word such as ``Donaudampfschifffahrtsgesellschaft`` counts two), and a run that
    holds several words joined by punctuation (``a,b,c``, ``red/green``,
    ``well-known``, a URL's parts) counts each of them (a number's ``1,000.5`` and an
    apostrophe's ``don't`` stay one word).

    >>> word_count("one\u200btwo three"), word_count("x" * 48), word_count("a,b,c d")
    (3, 2, 4)
    """
    count = 0
    pieces = _word_pieces()
    for run in _word_breaks().split(text):
        if not run:
            continue
        if len(run) <= 2 or run.isalpha():  # the common word: no punctuation inside
            count += _long_word(run)
            continue
        joined = sum(_long_word(piece) for piece in pieces.findall(run))
        count += max(_long_word(run), joined)
    return count


def completion_length(sample: Sample, unit: LengthUnit,
                      tokenizer: str | None = None) -> tuple[int, str]:
    """The completion's length in ``unit`` and the source of the count.

    >>> completion_length(Sample(completion="two words"), "words")
    (2, 'words')
    >>> completion_length(Sample(completion="abc", metadata={"completion_ids": [5, 9]}),
    ...                   "tokens")
    (2, 'completion_ids')
    >>> completion_length(Sample(completion="abc", metadata={"completion_length": 3}),
    ...                   "tokens")
    (3, 'completion_length')
    """
    if unit == "chars":
        return len(sample.text), "chars"
    if unit == "words":
        return word_count(sample.text), "words"
    count = sample.metadata.get(COMPLETION_LENGTH)
    if sample.metadata.get(COMPLETION_IDS) is None and count is not None:
        if hasattr(count, "item"):  # a 0-d tensor or numpy scalar
            count = count.item()
        if isinstance(count, bool) or not isinstance(count, int | float) or count < 0 \
                or count != int(count):
            raise LengthError(f"metadata completion_length is {count!r}, expected a "
                              "token count (a whole number >= 0)")
        return int(count), COMPLETION_LENGTH
    ids, source = completion_token_ids(sample, tokenizer)
    return len(ids), source
