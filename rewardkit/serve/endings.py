"""The end-of-sequence and pad strings a trainer leaves on the text it sends.

OpenRLHF decodes the whole sequence with its special tokens (``...the answer is
12<|im_end|>``), and a batch padded to one length may end in pad tokens: a reward anchored
at the end of the output, or one that reads the last number, would grade the marker. The
service strips these strings from the end of each response on the trainers' endpoints
(``/openrlhf``, ``/slime``), repeatedly (``<|endoftext|><|endoftext|>``), before scoring;
the native ``/score`` takes rows as ``rewardkit score`` does, as they are.

Which strings: :data:`DEFAULT_END_STRINGS` unless ``--strip-suffix`` names others, plus the
``eos_token`` and ``pad_token`` of a local tokenizer (``--tokenizer DIR``: its
``tokenizer_config.json`` or ``special_tokens_map.json``); ``--no-strip``: none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: the end-of-sequence and pad strings of the common chat templates (Qwen, Llama 2/3,
#: Mistral, GPT-2 style, Gemma)
DEFAULT_END_STRINGS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>",
                       "</s>", "<end_of_turn>", "<eos>", "<pad>", "<|end|>")
_SPECIAL_FILES = ("tokenizer_config.json", "special_tokens_map.json")
_KEYS = ("eos_token", "pad_token")


class EndStringsError(ValueError):
    """A tokenizer whose end strings cannot be read (the message says which file)."""


def tokenizer_end_strings(path: str) -> list[str]:
    """The ``eos_token`` and ``pad_token`` of the local tokenizer at ``path`` (a directory
    holding ``tokenizer_config.json`` or ``special_tokens_map.json``, or one of those
    files); nothing is downloaded."""
    location = Path(path).expanduser()
    files = [location] if location.is_file() else [location / n for n in _SPECIAL_FILES]
    found: list[str] = []
    read_any = False
    for file in files:
        if not file.is_file():
            continue
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EndStringsError(f"--tokenizer: cannot read {file}: {exc}") from None
        read_any = True
        if isinstance(data, dict):
            found += [s for key in _KEYS if (s := _token_text(data.get(key)))]
    if not read_any:
        raise EndStringsError(f"--tokenizer {path}: no {' or '.join(_SPECIAL_FILES)} there "
                              "(a local tokenizer directory is expected)")
    if not found:
        raise EndStringsError(f"--tokenizer {path}: names no eos_token or pad_token")
    return list(dict.fromkeys(found))


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):  # {"content": "<|im_end|>", "lstrip": false, ...}
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def strip_end(text: str, strings: Iterable[str]) -> str:
    """``text`` without the ``strings`` it ends with, however many and in any order."""
    ends = tuple(s for s in strings if s)
    if not ends:
        return text
    while True:
        for end in ends:
            if text.endswith(end):
                text = text[:-len(end)]
                break
        else:
            return text
