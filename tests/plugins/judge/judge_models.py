"""Tiny local models for the judge tests, built from a config (nothing is downloaded).

``build_reward_model`` saves a tiny sequence-classification model whose score is a known
function of its input words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

Messages = list[dict[str, str]]


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
