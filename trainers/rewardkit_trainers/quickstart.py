"""Generated data and a tiny model for the quickstart (``examples/quickstart.yaml``).

Nothing is downloaded: the prompts are generated ("copy 7"), the reference is what the
prompt says to copy, the tokenizer is a word-level tokenizer trained on those prompts
and on the answer layout the rewards ask for, and the model is a two-layer Qwen2 (or
Llama) built from a config with random weights. The task is one a model that small can
learn with GRPO on two CPU cores in minutes: find the digit in the prompt and put it in
the answer block. The tags are tokens (``</think>`` and ``<answer>`` with their newlines
one token, each digit with ``</answer>`` one more), so the layout is four tokens: a random
policy meets it often enough for the format rewards to give a signal from the first
steps, and once the layout holds, the answer is one choice of ten, right by chance once
in ten, which the correctness reward reinforces. The input and output embeddings are
apart: tied ones make every token its own likeliest successor, and a policy trained
from random weights collapses into repeating one tag. The prompt is the user's line
alone, so the digit is a large share of what the answer position attends to.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import Field
from rewardkit import Params, Sample, Score, reward, visible_length

from rewardkit_trainers.config import GeneratedData, TinyModel

#: tag tokens that carry their newlines (the layout strict_format checks): the closing
#: think tag and the opening answer tag are one token, and each digit with the closing
#: answer tag is one, so the layout is four tokens and the answer one choice of ten
TAG_TOKENS = ["<think>\n", "\n</think>\n<answer>\n", *(f"{d}\n</answer>" for d in range(10))]
SPECIAL = {"unk": "<|unk|>", "pad": "<|pad|>", "eos": "<|end|>"}
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
#: the task's verb: the user asks to copy one digit into the answer
TASK_WORD = "copy"


def generate_rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` conversational rows: ``prompt`` (chat messages: "copy 7") and ``reference``
    (the digit to copy, "7")."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        digit = rng.randint(0, 9)
        rows.append({
            "prompt": [{"role": "user", "content": f"{TASK_WORD} {digit}"}],
            "reference": str(digit),
            "task": "copy",
        })
    return rows


def target_text(digit: int) -> str:
    """The completion the rewards pay most for (used only to build the vocabulary)."""
    return f"<think>\n{digit}\n</think>\n<answer>\n{digit}\n</answer>"


class LayoutProgressParams(Params):
    """Parameters of layout_progress."""

    reasoning_tag: str = Field("think", description="name of the reasoning tag")
    answer_tag: str = Field("answer", description="name of the answer tag")


@reward(params=LayoutProgressParams)
def layout_progress(sample: Sample, params: LayoutProgressParams) -> Score:
    """How far the output follows the strict layout from its first character.

    The layout ``<r>\\n`` reasoning ``\\n</r>\\n<a>\\n`` answer ``\\n</a>`` is seven
    pieces: the opening tag, visible reasoning (no tag in it), the closing tag, the
    answer's opening tag, a visible answer (no tag in it), its closing tag, and nothing
    after that but one newline. The value is the share matched in order from the
    start; 1.0 only for what ``strict_format`` pays. A dense signal for a policy that
    starts from random weights (the quickstart's), that no reordering, repetition or
    padding pays for: credit stops at the first piece out of place.
    Example: ``<think>\\nhm\\n</think>\\n`` -> 3/7.
    """
    r, a = params.reasoning_tag, params.answer_tag
    steps = [f"<{r}>\n", None, f"\n</{r}>\n", f"<{a}>\n", None, f"\n</{a}>"]
    rest, done = sample.text, 0
    for i, piece in enumerate(steps):
        if piece is not None:
            if not rest.startswith(piece):
                break
            rest = rest[len(piece):]
        else:  # a block's content: up to the next piece, visible, no tag inside
            end = rest.find(steps[i + 1] or "")
            content = rest if end < 0 else rest[:end]
            if visible_length(content) == 0 or "<" in content:
                break
            rest = rest[len(content):]
        done += 1
    else:
        done += rest in ("", "\n")
    pieces = len(steps) + 1
    return Score.ok(done / pieces, f"{done}/{pieces} layout pieces in place", pieces=done)


def write_splits(spec: GeneratedData, folder: Path) -> tuple[Path, Path | None]:
    """Write ``train.jsonl`` (and ``test.jsonl`` when ``test_size``) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    train = folder / "train.jsonl"
    _write_jsonl(train, generate_rows(spec.size, spec.seed))
    test = None
    if spec.test_size:
        test = folder / "test.jsonl"
        _write_jsonl(test, generate_rows(spec.test_size, spec.seed + 1))
    return train, test


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def build_tokenizer(texts: Iterable[str]) -> Any:
    """A word-level ``PreTrainedTokenizerFast`` over ``texts`` with a chat template.

    Words, numbers, single spaces and newlines are tokens; decoding concatenates them,
    so ``decode(encode(text)) == text`` for text made of known words.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token=SPECIAL["unk"]))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"<[^>\s]+>|\w+|\n| |[^\w\s]"),
                                             behavior="isolated")
    tok.decoder = decoders.Fuse()
    specials = [SPECIAL["unk"], SPECIAL["pad"], SPECIAL["eos"], *ROLE_TOKENS]
    trainer = trainers.WordLevelTrainer(special_tokens=specials, min_frequency=1)
    # the tags are added tokens (below), never words of their own: a bare ``</answer>``
    # token would be one more way for a random policy to void the layout
    corpus = [_without_tags(text) for text in texts] + ["\n".join(str(i) for i in range(10))]
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token=SPECIAL["unk"],
        pad_token=SPECIAL["pad"],
        eos_token=SPECIAL["eos"],
        clean_up_tokenization_spaces=False,
    )
    fast.add_tokens(TAG_TOKENS)  # whole-tag tokens, matched before the word splitter
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    fast.init_kwargs[BUILT_MARK] = "word-level"  # saved in tokenizer_config.json
    return fast


def _without_tags(text: str) -> str:
    for tag in sorted(TAG_TOKENS, key=len, reverse=True):
        text = text.replace(tag, "\n")
    return text


#: key of tokenizer_config.json that marks a tokenizer built here
BUILT_MARK = "rewardkit_built"


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved with a model: ``AutoTokenizer``'s choice, except for one built
    here, which loads as saved. (transformers 5's ``AutoTokenizer`` swaps the tokenizer of
    any ``qwen2`` model for ``Qwen2Tokenizer``, whose splitting drops this word-level
    vocabulary's words: prompts would reach the trained model as other tokens than in
    training.)"""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if is_built(path):
        return PreTrainedTokenizerFast.from_pretrained(str(path))
    return AutoTokenizer.from_pretrained(str(path))


def is_built(path: str | Path) -> bool:
    """Whether the model at ``path`` (a folder; a hub id is not) carries a tokenizer
    built here (:data:`BUILT_MARK` in its ``tokenizer_config.json``)."""
    saved = Path(path) / "tokenizer_config.json"
    try:
        return saved.is_file() and BUILT_MARK in json.loads(saved.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def build_model(spec: TinyModel, tokenizer: Any) -> Any:
    """A randomly initialised causal LM of ``spec``'s shape for ``tokenizer``."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    torch.manual_seed(spec.seed)
    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config = Qwen2Config(**common) if spec.build == "qwen2" else LlamaConfig(**common)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def tokenizer_corpus(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Texts the quickstart tokenizer is trained on: prompts and target layouts."""
    texts: list[str] = []
    for row in rows:
        prompt = row["prompt"]
        if isinstance(prompt, list):
            texts.extend(str(m.get("content", "")) for m in prompt)
        else:
            texts.append(str(prompt))
    texts.extend(target_text(digit) for digit in range(10))
    return texts


def build_tiny(spec: TinyModel, rows: list[dict[str, Any]], save_to: Path) -> tuple[Any, Any]:
    """Build (model, tokenizer) for ``rows`` and save both to ``save_to`` (the base model)."""
    tokenizer = build_tokenizer(tokenizer_corpus(rows))
    model = build_model(spec, tokenizer)
    save_to.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(save_to)
    model.save_pretrained(save_to)
    return model, tokenizer
