"""A BERT encoder (all-MiniLM-L6-v2) written as an ONNX graph straight from its safetensors weights.

The same inputs and output as the torch export in kit/minilm.py (input_ids, attention_mask,
token_type_ids: int64 [batch_size, sequence_length] -> last_hidden_state: float32 [batch_size,
sequence_length, hidden]), in the operations transformers' BertModel runs: embeddings summed as it
sums them (words + token types, then positions), post-norm layers, exact (erf) GELU, and padding
masked with float32's lowest value added to the attention scores.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .onnx_graph import FLOAT, INT64, Graph

INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
OUTPUT = "last_hidden_state"


def _linear(g: Graph, x: str, weights: dict[str, np.ndarray], prefix: str) -> str:
    # Stored transposed ([in, out]) once, so that the graph is a plain MatMul + Add.
    w = g.weight(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
    b = g.weight(f"{prefix}.bias", weights[f"{prefix}.bias"])
    return g.op("Add", g.op("MatMul", x, w), b)


def _layer_norm(g: Graph, x: str, weights: dict[str, np.ndarray], prefix: str, eps: float) -> str:
    gamma = g.weight(f"{prefix}.weight", weights[f"{prefix}.weight"])
    beta = g.weight(f"{prefix}.bias", weights[f"{prefix}.bias"])
    return g.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)


def _gelu(g: Graph, x: str) -> str:
    """transformers' "gelu": x * 0.5 * (1 + erf(x / sqrt(2)))."""
    erf = g.op("Erf", g.op("Div", x, g.const(math.sqrt(2.0), np.float32)))
    return g.op("Mul", g.op("Mul", x, g.const(0.5, np.float32)), g.op("Add", erf, g.const(1.0, np.float32)))


def build(weights: dict[str, np.ndarray], config: dict[str, Any]) -> Graph:
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config["layer_norm_eps"])
    g = Graph("bert")
    for name in INPUTS:
        g.input(name, INT64, ["batch_size", "sequence_length"])
    g.output(OUTPUT, FLOAT, ["batch_size", "sequence_length", hidden])

    words = g.op("Gather", g.weight("embeddings.word_embeddings.weight", weights["embeddings.word_embeddings.weight"]), "input_ids")
    types = g.op("Gather", g.weight("embeddings.token_type_embeddings.weight", weights["embeddings.token_type_embeddings.weight"]), "token_type_ids")
    # Absolute positions 0..sequence_length-1: the first rows of the position table.
    table = g.weight("embeddings.position_embeddings.weight", weights["embeddings.position_embeddings.weight"])
    positions = g.op("Slice", table, g.const([0]), g.dim("input_ids", 1), g.const([0]))
    x = g.op("Add", g.op("Add", words, types), positions)
    x = _layer_norm(g, x, weights, "embeddings.LayerNorm", eps)

    # [batch, 1, 1, keys]: 0 where the key is a real token, float32's lowest value where it is padding.
    keep = g.op("Cast", g.op("Unsqueeze", "attention_mask", g.const([1, 2])), to=9)  # BOOL
    bias = g.op("Where", keep, g.const(0.0, np.float32), g.const(np.finfo(np.float32).min, np.float32))
    split_heads = g.const([0, 0, heads, head_dim])
    merge_heads = g.const([0, 0, hidden])
    scale = g.const(1.0 / math.sqrt(head_dim), np.float32)

    for layer in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{layer}"

        def heads_of(name: str, perm: list[int]) -> str:
            return g.op("Transpose", g.op("Reshape", _linear(g, x, weights, f"{p}.attention.self.{name}"), split_heads), perm=perm)

        q = heads_of("query", [0, 2, 1, 3])
        k = heads_of("key", [0, 2, 3, 1])
        v = heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        attended = _linear(g, context, weights, f"{p}.attention.output.dense")
        x = _layer_norm(g, g.op("Add", attended, x), weights, f"{p}.attention.output.LayerNorm", eps)
        inner = _gelu(g, _linear(g, x, weights, f"{p}.intermediate.dense"))
        out = _linear(g, inner, weights, f"{p}.output.dense")
        x = _layer_norm(g, g.op("Add", out, x), weights, f"{p}.output.LayerNorm", eps)
    g.op("Identity", x, name=OUTPUT)
    return g
