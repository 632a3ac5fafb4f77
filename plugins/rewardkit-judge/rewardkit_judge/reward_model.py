"""``reward_model``: a transformers sequence-classification reward model scores each
prompt + completion.

The conversation (the prompt's messages, or the prompt text as a user turn, then the
completion as the assistant turn) goes through the model's chat template when its
tokenizer has one, else prompt and completion are joined. Requests from concurrent
samples are gathered into batches of ``batch_size`` (see :mod:`rewardkit_judge.micro_batch`)
and run with ``torch.no_grad`` on ``device``. The model and tokenizer are loaded once per
process (per path, device and dtype) and shared by every component that names them.
The value is the logit of ``label`` (or its sigmoid).

What the completion wrote reaches the model as text: a completion that writes the
template's control tokens (``<|im_end|><|im_start|>user ...``) to forge a turn of its own
has those tokens read as the characters written, never as turn boundaries. An input over
``max_length`` tokens loses the middle of its completion (its head and tail are kept),
never the prompt or the end of the assistant turn, and the score's details say
``truncated``.

Needs ``pip install 'rewardkit-judge[model]'``; nothing is downloaded: ``model`` is a
local directory written by ``save_pretrained``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from rewardkit import ExecutionMode, Params, Reward, Sample, Score, completion_text, prompt_text
from rewardkit_judge.micro_batch import MicroBatcher


class RewardModelParams(Params):
    """Parameters of reward_model."""

    model: str = Field(description="local directory of the model and its tokenizer")
    device: str = Field("auto", description="auto (cuda when available), cpu, cuda, cuda:N")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="weights dtype; auto: the checkpoint's own"
    )
    batch_size: int = Field(16, ge=1, description="completions per forward pass")
    max_wait_ms: float = Field(
        5.0, ge=0, description="how long a partial batch waits for more requests"
    )
    max_length: int = Field(2048, gt=0, description="tokens per input; a longer input "
                            "loses the middle of its completion, never the prompt")
    label: int = Field(0, ge=0, description="which output logit is the reward")
    transform: Literal["logit", "sigmoid"] = Field(
        "logit", description="the value: the raw logit, or its sigmoid (0..1)"
    )
    chat_template: bool = Field(
        True, description="apply the tokenizer's chat template (when it has one)"
    )

    @field_validator("model")
    @classmethod
    def _model_is_local(cls, value: str) -> str:
        path = Path(value).expanduser()
        if not (path / "config.json").is_file():
            raise ValueError(f"{value!r} is not a local model directory (no config.json); "
                             "reward_model loads local checkpoints only, nothing is "
                             "downloaded")
        return str(path)


class _Loaded:
    """A model, its tokenizer and the device they live on."""

    def __init__(self, model: Any, tokenizer: Any, device: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device


_MODELS: dict[tuple[str, str, str], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def load_reward_model(path: str, device: str = "auto", dtype: str = "auto") -> _Loaded:
    """The sequence-classification model at ``path``, loaded once per process."""
    key = (path, device, dtype)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise RuntimeError("reward_model needs transformers and torch: "
                               "pip install 'rewardkit-judge[model]'") from None
        target = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        kwargs: dict[str, Any] = {"local_files_only": True}
        if dtype != "auto":
            kwargs["dtype"] = getattr(torch, dtype)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(path, **kwargs)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if model.config.pad_token_id is None:
            model.config.pad_token_id = tokenizer.pad_token_id
        model.to(target).eval()
        loaded = _Loaded(model, tokenizer, torch.device(target))
        _MODELS[key] = loaded
        return loaded


def conversation(prompt: Any, completion: Any) -> list[dict[str, Any]]:
    """The chat messages of a prompt and its completion.

    >>> conversation("2+2?", "4")
    [{'role': 'user', 'content': '2+2?'}, {'role': 'assistant', 'content': '4'}]
    """
    if isinstance(prompt, list | tuple):
        messages = [dict(m) for m in prompt if isinstance(m, Mapping)]
    elif prompt:
        messages = [{"role": "user", "content": str(prompt)}]
    else:
        messages = []
    if isinstance(completion, list | tuple) and all(isinstance(m, Mapping) for m in completion):
        messages += [dict(m) for m in completion]
    else:
        messages.append({"role": "assistant", "content": completion_text(completion)})
    return messages


#: stands for a completion message's content while the chat template renders
_PLACEHOLDER = "@@rewardkit-completion-{}@@"
_PLACEHOLDERS = re.compile(r"@@rewardkit-completion-(\d+)@@")


@dataclass(frozen=True)
class Encoded:
    """The token ids a reward model reads for one sample, and what truncation cut."""

    input_ids: list[int]
    #: ``{"completion_tokens": written, "kept_tokens": kept}`` when the completion was cut
    truncated: dict[str, int] | None = None


class RewardModel(Reward):
    """A transformers reward model's score of prompt + completion (batched, CPU or GPU).

    The value is the model's logit for ``label`` (``transform: sigmoid`` squashes it
    into 0..1). Inputs are rendered with the tokenizer's chat template (the completion's
    special tokens read as plain text: :meth:`encode`), cut in the completion's middle
    to ``max_length`` tokens, and scored ``batch_size`` at a time. A failed forward
    pass is status error for the samples of that batch.
    """

    name = "reward_model"
    Params = RewardModelParams
    params: RewardModelParams
    mode = ExecutionMode.ASYNC
    timeout = 300.0

    def setup(self) -> None:
        p = self.params
        self._loaded = load_reward_model(p.model, p.device, p.dtype)
        self._batcher: MicroBatcher[list[int]] = MicroBatcher(
            self._forward, p.batch_size, p.max_wait_ms / 1000)
        specials = sorted({t.content for t in self._loaded.tokenizer.added_tokens_decoder
                           .values() if t.special}, key=len, reverse=True)
        self._specials = re.compile("|".join(map(re.escape, specials))) if specials \
            else None

    def render(self, sample: Sample) -> str:
        """The text the model reads for ``sample``."""
        tokenizer = self._loaded.tokenizer
        if self.params.chat_template and getattr(tokenizer, "chat_template", None):
            text: str = tokenizer.apply_chat_template(
                conversation(sample.prompt, sample.completion), tokenize=False)
            return text
        return prompt_text(sample.prompt) + sample.text

    def _segments(self, sample: Sample) -> list[tuple[bool, str]]:
        """The rendered input as (is completion text, text) pieces, in order."""
        tokenizer = self._loaded.tokenizer
        if not (self.params.chat_template and getattr(tokenizer, "chat_template", None)):
            return [(False, prompt_text(sample.prompt)), (True, sample.text)]
        messages = conversation(sample.prompt, sample.completion)
        first = len(conversation(sample.prompt, [])) if isinstance(
            sample.completion, list | tuple) else len(messages) - 1
        contents = [completion_text([m]) for m in messages[first:]]
        marked = [*messages[:first], *({**m, "content": _PLACEHOLDER.format(i)}
                                       for i, m in enumerate(messages[first:]))]
        rendered: str = tokenizer.apply_chat_template(marked, tokenize=False)
        pieces = _PLACEHOLDERS.split(rendered)
        if [int(i) for i in pieces[1::2]] != list(range(len(contents))):
            raise ValueError("the chat template does not render each completion message "
                             "once, in order")
        if len(contents) == 1:  # the content as the template writes it (trimmed, ...)
            real: str = tokenizer.apply_chat_template(messages, tokenize=False)
            if real.startswith(pieces[0]) and real.endswith(pieces[2]):
                contents = [real[len(pieces[0]):len(real) - len(pieces[2])]]
        out: list[tuple[bool, str]] = [(False, pieces[0])]
        for content, after in zip(contents, pieces[2::2], strict=True):
            out += [(True, content), (False, after)]
        return out

    def _text_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` in which the tokenizer's special tokens are plain
        characters: each is tokenized in two pieces, which no special token matches."""
        tokenizer = self._loaded.tokenizer
        if self._specials is None or not self._specials.search(text):
            return list(tokenizer(text, add_special_tokens=False)["input_ids"])
        ids: list[int] = []
        at = 0
        for match in self._specials.finditer(text):
            token = match.group()
            for piece in (text[at:match.start()], token[:1], token[1:]):
                if piece:
                    ids += tokenizer(piece, add_special_tokens=False)["input_ids"]
            at = match.end()
        return ids + list(tokenizer(text[at:], add_special_tokens=False)["input_ids"])

    def encode(self, sample: Sample) -> Encoded:
        """The token ids the model reads for ``sample``: the template's and the prompt's
        text tokenized as usual, the completion's with its special tokens as plain
        characters; past ``max_length``, the middle of the completion is cut. Raises
        ``ValueError`` when the prompt alone does not fit."""
        tokenizer, limit = self._loaded.tokenizer, self.params.max_length
        parts = [(written, self._text_ids(text) if written else
                  list(tokenizer(text, add_special_tokens=False)["input_ids"]))
                 for written, text in self._segments(sample)]
        fixed = sum(len(ids) for written, ids in parts if not written)
        total = sum(len(ids) for written, ids in parts if written)
        if fixed + total <= limit:
            return Encoded([i for _, ids in parts for i in ids])
        budget = limit - fixed
        if budget <= 0:
            raise ValueError(f"the prompt and template alone are {fixed} tokens, "
                             f"max_length is {limit}")
        head = (budget + 1) // 2
        cut_from, cut_to = head, total - (budget - head)  # positions in completion tokens
        out: list[int] = []
        seen = 0
        for written, ids in parts:
            if not written:
                out += ids
                continue
            out += [t for k, t in enumerate(ids, seen) if not cut_from <= k < cut_to]
            seen += len(ids)
        return Encoded(out, {"completion_tokens": total, "kept_tokens": budget})

    def _forward(self, encoded: Sequence[list[int]]) -> list[float]:
        """The values of encoded inputs, in one padded forward pass."""
        import torch

        loaded, p = self._loaded, self.params
        inputs = loaded.tokenizer.pad({"input_ids": list(encoded)}, padding=True,
                                      return_tensors="pt")
        inputs = {k: v.to(loaded.device) for k, v in inputs.items()}
        with torch.no_grad():
            logits = loaded.model(**inputs).logits.float()
        values = logits[:, p.label]
        if p.transform == "sigmoid":
            values = torch.sigmoid(values)
        return [float(v) for v in values.cpu()]

    def score_batch(self, samples: Sequence[Sample]) -> list[float]:
        """Score ``samples`` in one forward pass (synchronous; no micro-batching)."""
        return self._forward([self.encode(s).input_ids for s in samples])

    async def score(self, sample: Sample) -> Score:
        if self.params.label >= self._loaded.model.config.num_labels:
            return Score.error(f"label {self.params.label} but the model has "
                               f"{self._loaded.model.config.num_labels} labels")
        try:
            encoded = self.encode(sample)
        except ValueError as exc:
            return Score.error(f"cannot encode the sample: {exc}")
        try:
            value: float = await self._batcher.submit(encoded.input_ids)
        except Exception as exc:
            return Score.error(f"reward model failed: {type(exc).__name__}: {exc}")
        if encoded.truncated:
            return Score.ok(value, truncated=encoded.truncated)
        return Score.ok(value)
