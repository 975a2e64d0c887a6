"""Grouped-query attention that never materializes repeated KV heads in the exported graph.

transformers' eager kernel repeats every cached key/value head for each query head in its group
(`repeat_kv`), which the ONNX export turns into an Expand that copies the whole cache
num_key_value_groups times on every decode step. Here the query heads of a group are folded into
the row dimension instead ([b, kv_heads, groups * seq, dim]) and multiplied against the cache as
it is: the same dot products, in the same order, with no copy of the cache.

A module may also carry `shared_prefix` (keys, values as [1, kv_heads, prefix, dim]): a prompt
prefix that every row of the batch shares, attended before the row's own cache. Its scores join
the row's in one softmax, and its values are read once per batch instead of being copied into
every row's cache (causal_lm.WithPast sets it on the shared-prefix export).
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
    shared = getattr(module, "shared_prefix", None)
    if shared is not None:
        shared_key, shared_value = shared
        prefix = shared_key.shape[2]
        # [1, kv, prefix, dim] broadcasts over the batch in MatMul: no per-row copy of the prefix.
        # Shapes are spelt out, not -1: an empty prefix makes every tensor here empty, and
        # Reshape cannot infer a dimension of an empty tensor.
        prefix_scores = torch.matmul(grouped, shared_key.transpose(2, 3)).reshape(batch, heads, seq, prefix) * scaling
        scores = torch.cat([prefix_scores, scores], dim=-1)
    probs = torch.nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    probs = torch.nn.functional.dropout(probs, p=dropout, training=module.training)
    if shared is None:
        out = torch.matmul(probs.reshape(batch, kv_heads, -1, probs.shape[-1]), value)
    else:
        rows = heads // kv_heads * seq
        prefix_probs = probs[..., :prefix].reshape(batch, kv_heads, rows, prefix)
        own_probs = probs[..., prefix:].reshape(batch, kv_heads, rows, probs.shape[-1] - prefix)
        out = torch.matmul(prefix_probs, shared_value) + torch.matmul(own_probs, value)
    return out.reshape(batch, heads, seq, dim).transpose(1, 2).contiguous(), probs


def register() -> str:
    """Makes `config._attn_implementation = NAME` available; returns NAME."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    AttentionInterface.register(NAME, grouped_eager_attention)
    # The same additive float mask the eager kernel gets, so padding is handled identically.
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, eager_mask)
    return NAME
