"""A Llama decoder with KV cache (SmolLM2) written as an ONNX graph straight from its GGUF weights.

The inputs and outputs are those of the torch export (kit/causal_lm.py export_with_past, traced
through kit/grouped_attention.py): input_ids, attention_mask, position_ids,
past_key_values.{i}.key/.value and prefix_key_values.{i}.key/.value in; logits of the last
position and present.{i}.key/.value out, with the same names, dtypes and dynamic axes. The
operations are transformers' LlamaForCausalLM ones: RMSNorm, rotary embeddings on position_ids,
grouped-query attention that folds a group's query heads into rows (no repeated KV heads), a
shared prefix attended before each row's own cache in one softmax, a SiLU-gated MLP, and the
embedding matrix reused as the output projection (tied weights: one copy in the file).
build(appending=True) writes the appending export beside it (model_appending.onnx): the same
inputs and arithmetic, but each step's keys and values out instead of the concatenated cache.

Weights: gguf's numpy dequantization, with llama.cpp's Q/K row permutation undone as transformers'
GGUF loader undoes it (modeling_gguf_pytorch_utils.LlamaTensorProcessor), so the graph computes
the very float32 weights transformers loads from the same file.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .onnx_graph import FLOAT, INT64, INT64_MAX, Graph

# The torch exporter named logits' middle axis (always 1: the last position only) after the
# MatMul that made it; kept, so that the graph's signature is the export's, name for name.
LOGITS_AXIS_1 = "MatMullogits_dim_1"


class LlamaConfig(NamedTuple):
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    rms_eps: float
    rope_theta: float


def _field(reader, key: str):
    return reader.fields[key].contents()


def read_config(reader) -> LlamaConfig:
    hidden = int(_field(reader, "llama.embedding_length"))
    heads = int(_field(reader, "llama.attention.head_count"))
    return LlamaConfig(
        layers=int(_field(reader, "llama.block_count")),
        hidden=hidden,
        intermediate=int(_field(reader, "llama.feed_forward_length")),
        heads=heads,
        kv_heads=int(_field(reader, "llama.attention.head_count_kv")),
        head_dim=int(_field(reader, "llama.rope.dimension_count")),
        vocab=len(_field(reader, "tokenizer.ggml.tokens")),
        rms_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        rope_theta=float(_field(reader, "llama.rope.freq_base")),
    )


def _unpermute(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter interleaves each head's rotary halves in the Q and K rows; undo it."""
    half = weights.shape[0] // heads // 2
    return weights.reshape(heads, half, 2, *weights.shape[1:]).swapaxes(2, 1).reshape(weights.shape)


def read_weights(path: Path) -> tuple[LlamaConfig, dict[str, np.ndarray]]:
    """The GGUF file's tensors as float32 arrays in transformers' orientation ([out, in])."""
    from gguf import GGUFReader, dequantize

    reader = GGUFReader(str(path))
    config = read_config(reader)
    weights = {}
    for tensor in reader.tensors:
        array = np.asarray(dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        if ".attn_q." in tensor.name:
            array = _unpermute(array, config.heads)
        elif ".attn_k." in tensor.name:
            array = _unpermute(array, config.kv_heads)
        weights[tensor.name] = array
    return config, weights


def input_names(layers: int) -> tuple[list[str], list[str], list[str]]:
    past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    prefix = [f"prefix_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    return past, prefix, present


def inv_freq(config: LlamaConfig) -> np.ndarray:
    """transformers' default rope frequencies, computed in float32 as it computes them."""
    exponents = np.arange(0, config.head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(config.head_dim)
    return (np.float32(1.0) / np.power(np.float32(config.rope_theta), exponents)).astype(np.float32)


class _Dims(NamedTuple):
    batch: str
    seq: str
    total: str
    prefix: str
    past: str


def _rms_norm(g: Graph, x: str, weight: str, eps: float) -> str:
    variance = g.op("ReduceMean", g.op("Mul", x, x), axes=[-1], keepdims=1)
    inverse = g.op("Div", g.const(1.0, np.float32), g.op("Sqrt", g.op("Add", variance, g.const(eps, np.float32))))
    return g.op("Mul", weight, g.op("Mul", x, inverse))


def _rotate(g: Graph, x: str, cos: str, sin: str, half: int) -> str:
    """x * cos + rotate_half(x) * sin, with rotate_half(x) = [-x2, x1]."""
    x1 = g.op("Slice", x, g.const([0]), g.const([half]), g.const([-1]))
    x2 = g.op("Slice", x, g.const([half]), g.const([INT64_MAX]), g.const([-1]))
    rotated = g.op("Concat", g.op("Neg", x2), x1, axis=-1)
    return g.op("Add", g.op("Mul", x, cos), g.op("Mul", rotated, sin))


def _attention(g: Graph, c: LlamaConfig, h: str, w: dict[str, str], i: int, rope: tuple[str, str], mask: str, d: _Dims, appending: bool) -> str:
    cos, sin = rope
    groups = c.heads // c.kv_heads

    def heads_of(weight: str, count: int) -> str:
        split = g.const([0, 0, count, c.head_dim])
        return g.op("Transpose", g.op("Reshape", g.op("MatMul", h, weight), split), perm=[0, 2, 1, 3])

    q = _rotate(g, heads_of(w["q"], c.heads), cos, sin, c.head_dim // 2)
    k = _rotate(g, heads_of(w["k"], c.kv_heads), cos, sin, c.head_dim // 2)
    v = heads_of(w["v"], c.kv_heads)
    past_key, past_value = f"past_key_values.{i}.key", f"past_key_values.{i}.value"
    if appending:
        # The step's own keys and values are the outputs; the past is attended where it lies.
        k = g.op("Identity", k, name=f"step_key_values.{i}.key")
        v = g.op("Identity", v, name=f"step_key_values.{i}.value")
    else:
        key = g.op("Concat", past_key, k, axis=2, name=f"present.{i}.key")
        value = g.op("Concat", past_value, v, axis=2, name=f"present.{i}.value")

    # A group's query heads become rows: [batch, kv_heads, groups * seq, head_dim] against the
    # cache as it is. Shapes are spelt out, not -1: an empty prefix makes tensors empty.
    rows = g.op("Mul", d.seq, g.const([groups]))
    kv_shape = g.const([c.kv_heads])
    grouped = g.op("Reshape", q, g.op("Concat", d.batch, kv_shape, rows, g.const([c.head_dim]), axis=0))
    scale = g.const(1.0 / math.sqrt(c.head_dim), np.float32)

    def scores_against(keys: str, length: str) -> str:
        raw = g.op("MatMul", grouped, g.op("Transpose", keys, perm=[0, 1, 3, 2]))
        shape = g.op("Concat", d.batch, g.const([c.heads]), d.seq, length, axis=0)
        return g.op("Mul", g.op("Reshape", raw, shape), scale)

    if appending:
        own_scores = g.op("Concat", scores_against(past_key, d.past), scores_against(k, d.seq), axis=-1)
    else:
        own_scores = scores_against(key, d.total)
    own = g.op("Add", own_scores, mask)
    prefix = scores_against(f"prefix_key_values.{i}.key", d.prefix)
    probs = g.op("Softmax", g.op("Concat", prefix, own, axis=-1), axis=-1)

    def probs_for(start: str, end: str, length: str) -> str:
        part = g.op("Slice", probs, start, end, g.const([3]))
        return g.op("Reshape", part, g.op("Concat", d.batch, kv_shape, rows, length, axis=0))

    from_prefix = g.op("MatMul", probs_for(g.const([0]), d.prefix, d.prefix), f"prefix_key_values.{i}.value")
    if appending:
        past_end = g.op("Add", d.prefix, d.past)
        from_own = g.op(
            "Add",
            g.op("MatMul", probs_for(d.prefix, past_end, d.past), past_value),
            g.op("MatMul", probs_for(past_end, g.const([INT64_MAX]), d.seq), v),
        )
    else:
        from_own = g.op("MatMul", probs_for(d.prefix, g.const([INT64_MAX]), d.total), value)
    out = g.op("Reshape", g.op("Add", from_prefix, from_own), g.op("Concat", d.batch, g.const([c.heads]), d.seq, g.const([c.head_dim]), axis=0))
    out = g.op("Reshape", g.op("Transpose", out, perm=[0, 2, 1, 3]), g.const([0, 0, c.heads * c.head_dim]))
    return g.op("MatMul", out, w["o"])


def build(config: LlamaConfig, weights: dict[str, np.ndarray], appending: bool = False) -> Graph:
    """The decoder; with `appending`, outputs the step's keys and values, not the whole cache.

    An appending export takes the same inputs, but returns step_key_values.{i}.key/.value
    ([batch, kv_heads, sequence_length, head_dim]) where the other returns present.{i}.*: the
    caller writes them into its own cache buffer, whose columns past the rows' real ones are
    zeros that the attention mask hides. No step then copies the cache.
    """
    c = config
    g = Graph("llama")
    past_names, prefix_names, present_names = input_names(c.layers)
    g.input("input_ids", INT64, ["batch_size", "sequence_length"])
    g.input("attention_mask", INT64, ["batch_size", "total_sequence_length"])
    g.input("position_ids", INT64, ["batch_size", "sequence_length"])
    for name in past_names:
        g.input(name, FLOAT, ["batch_size", c.kv_heads, "past_sequence_length", c.head_dim])
    for name in prefix_names:
        g.input(name, FLOAT, [1, c.kv_heads, "prefix_length", c.head_dim])
    g.output("logits", FLOAT, ["batch_size", LOGITS_AXIS_1, c.vocab])
    for name in present_names:
        if appending:
            g.output(name.replace("present.", "step_key_values."), FLOAT, ["batch_size", c.kv_heads, "sequence_length", c.head_dim])
        else:
            g.output(name, FLOAT, ["batch_size", c.kv_heads, "total_sequence_length", c.head_dim])

    past_length = g.dim("past_key_values.0.key", 2)
    d = _Dims(g.dim("input_ids", 0), g.dim("input_ids", 1), g.dim("attention_mask", 1), g.dim("prefix_key_values.0.key", 2), past_length)

    # transformers' eager mask: a query at cache position past + j sees keys up to it that the
    # attention mask keeps; the rest get float32's lowest value added. The prefix is never masked.
    def scalar(t: str) -> str:
        return g.op("Squeeze", t, g.const([0]))

    query_positions = g.op("Range", scalar(past_length), scalar(d.total), g.const(1))
    key_positions = g.op("Range", g.const(0), scalar(d.total), g.const(1))
    causal = g.op("LessOrEqual", g.op("Unsqueeze", key_positions, g.const([0])), g.op("Unsqueeze", query_positions, g.const([1])))
    padding = g.op("Cast", g.op("Unsqueeze", "attention_mask", g.const([1, 2])), to=9)  # BOOL
    allowed = g.op("And", g.op("Unsqueeze", causal, g.const([0, 1])), padding)
    mask = g.op("Where", allowed, g.const(0.0, np.float32), g.const(np.finfo(np.float32).min, np.float32))

    # Rotary angles from position_ids, shared by every layer: [batch, 1, seq, head_dim].
    angles = g.op("Mul", g.op("Unsqueeze", g.op("Cast", "position_ids", to=FLOAT), g.const([2])), g.const(inv_freq(c), np.float32))
    angles = g.op("Unsqueeze", g.op("Concat", angles, angles, axis=-1), g.const([1]))
    rope = (g.op("Cos", angles), g.op("Sin", angles))

    embeddings = g.weight("model.embed_tokens.weight", weights["token_embd.weight"])
    x = g.op("Gather", embeddings, "input_ids")
    for i in range(c.layers):
        blk = f"blk.{i}"
        names = {"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"}
        w = {key: g.weight(f"model.layers.{i}.{gguf}.weight_t", weights[f"{blk}.{gguf}.weight"].T) for key, gguf in names.items()}
        attn_norm = g.weight(f"model.layers.{i}.input_layernorm.weight", weights[f"{blk}.attn_norm.weight"])
        ffn_norm = g.weight(f"model.layers.{i}.post_attention_layernorm.weight", weights[f"{blk}.ffn_norm.weight"])
        attended = _attention(g, c, _rms_norm(g, x, attn_norm, c.rms_eps), w, i, rope, mask, d, appending)
        x = g.op("Add", x, attended)
        h = _rms_norm(g, x, ffn_norm, c.rms_eps)
        gate = g.op("MatMul", h, w["gate"])
        gated = g.op("Mul", g.op("Mul", gate, g.op("Sigmoid", gate)), g.op("MatMul", h, w["up"]))
        x = g.op("Add", x, g.op("MatMul", gated, w["down"]))

    # Only the last position's logits (generation reads nothing else), through the tied embedding
    # matrix: Gemm's transB reads it as the output projection without a transposed second copy.
    last = g.op("Slice", x, g.const([-1]), g.const([INT64_MAX]), g.const([1]))
    norm = g.weight("model.norm.weight", weights["output_norm.weight"])
    flat = g.op("Reshape", _rms_norm(g, last, norm, c.rms_eps), g.const([-1, c.hidden]))
    head = g.weight("lm_head.weight", weights["output.weight"]) if "output.weight" in weights else embeddings
    logits = g.op("Gemm", flat, head, transB=1)
    # A Reshape to a shape computed at run time, not an Unsqueeze: shape inference then leaves the
    # middle axis symbolic, as the export declares it, instead of pinning it to 1.
    g.op("Reshape", logits, g.op("Concat", d.batch, g.const([-1]), g.const([c.vocab]), axis=0), name="logits")
    return g

