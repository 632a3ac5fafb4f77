"""Tiny local models for the judge tests, built from a config (nothing is downloaded).

``train_chat_lm`` teaches a tiny causal LM, in a few hundred steps on CPU, to answer given
chat questions with given replies (greedy), so a real transformers model behind a real
HTTP server gives the answers a test needs. ``build_reward_model`` saves a tiny
sequence-classification model whose score is a known function of its input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Messages = list[dict[str, str]]


def train_chat_lm(lessons: Sequence[tuple[Messages, str]], out: Path, max_steps: int = 600,
                  seed: int = 0) -> Path:
    """A tiny Llama that answers each lesson's messages with its reply, saved to ``out``.

    Raises AssertionError when the model has not learnt every reply (greedy) in time.
    """
    import torch
    from rewardkit_trainers.config import TinyModel
    from rewardkit_trainers.quickstart import build_model, build_tokenizer

    texts = [m["content"] for messages, _ in lessons for m in messages]
    texts += [reply for _, reply in lessons]
    tokenizer = build_tokenizer(texts)
    torch.manual_seed(seed)
    model = build_model(TinyModel(hidden_size=64, intermediate_size=128, num_layers=2,
                                  num_heads=4, seed=seed), tokenizer)
    rows = []
    for messages, reply in lessons:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                               tokenize=True, return_dict=True)["input_ids"]
        answer = tokenizer(reply, add_special_tokens=False)["input_ids"]
        rows.append((list(prompt), [*answer, tokenizer.eos_token_id]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(max_steps):
        loss = torch.zeros(())
        for prompt, answer in rows:
            ids = torch.tensor([prompt + answer])
            labels = torch.tensor([[-100] * len(prompt) + answer])
            loss = loss + model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 25 == 24 and _answers_all(model, tokenizer, rows):
            break
    model.eval()
    assert _answers_all(model, tokenizer, rows), "the tiny judge did not learn its replies"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _answers_all(model: Any, tokenizer: Any, rows: list[tuple[list[int], list[int]]]) -> bool:
    import torch

    model.eval()
    try:
        for prompt, answer in rows:
            with torch.no_grad():
                out = model.generate(torch.tensor([prompt]), max_new_tokens=len(answer) + 2,
                                     do_sample=False, pad_token_id=tokenizer.pad_token_id)
            if out[0, len(prompt):len(prompt) + len(answer)].tolist() != answer:
                return False
        return True
    finally:
        model.train()


def build_reward_model(out: Path, texts: Sequence[str], word_values: Mapping[str, float],
                       seed: int = 0) -> Path:
    """A tiny sequence-classification Llama that scores the words it reads.

    Attention is uniform (zero queries and keys) and copies each token's one-hot
    embedding, so the last position holds how often each token occurs; the score head
    weighs the tokens of ``word_values`` by their value, all others by 0. More of a
    positive word scores higher: a real transformers model with a known ordering,
    batched and padded like any.
    """
    import torch
    from rewardkit_trainers.quickstart import build_tokenizer
    from transformers import LlamaConfig, LlamaForSequenceClassification

    tokenizer = build_tokenizer([*texts, *word_values])
    vocab = len(tokenizer)
    width = vocab + vocab % 2  # rotary embeddings need an even head size
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=width, intermediate_size=8,
                         num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                         head_dim=width, max_position_embeddings=512, num_labels=1,
                         pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    model = LlamaForSequenceClassification(config)
    with torch.no_grad():
        layer = model.model.layers[0]
        layer.self_attn.q_proj.weight.zero_()
        layer.self_attn.k_proj.weight.zero_()
        layer.self_attn.v_proj.weight.copy_(torch.eye(width))
        layer.self_attn.o_proj.weight.copy_(torch.eye(width))
        layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(vocab, width))
        model.score.weight.zero_()
        for word, value in word_values.items():
            (token,) = tokenizer(word, add_special_tokens=False)["input_ids"]
            model.score.weight[0, token] = value
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
