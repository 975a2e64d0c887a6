"""Grouped-query attention that never materializes repeated KV heads in the exported graph.

transformers' eager kernel repeats every cached key/value head for each query head in its group
(`repeat_kv`), which the ONNX export turns into an Expand that copies the whole cache
num_key_value_groups times on every decode step. Here the query heads of a group are folded into
the row dimension instead ([b, kv_heads, groups * seq, dim]) and multiplied against the cache as
it is: the same dot products, in the same order, with no copy of the cache.
"""
from __future__ import annotations

import torch

NAME = "grouped_eager"


def grouped_eager_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    batch, heads, seq, dim = query.shape
    kv_heads = key.shape[1]
    grouped = query.reshape(batch, kv_heads, -1, dim)
    scores = torch.matmul(grouped, key.transpose(2, 3)).reshape(batch, heads, seq, -1) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    probs = torch.nn.functional.dropout(probs, p=dropout, training=module.training)
    out = torch.matmul(probs.reshape(batch, kv_heads, -1, probs.shape[-1]), value)
    return out.reshape(batch, heads, seq, dim).transpose(1, 2).contiguous(), probs


def register() -> str:
    """Makes `config._attn_implementation = NAME` available; returns NAME."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    AttentionInterface.register(NAME, grouped_eager_attention)
    # The same additive float mask the eager kernel gets, so padding is handled identically.
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, eager_mask)
    return NAME
