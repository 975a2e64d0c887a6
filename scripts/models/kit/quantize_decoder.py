"""Weight-only quantized copies of a causal-LM export, next to its float32 model.onnx.

- model_q4.onnx: every MatMul whose weight is a constant (the projections of every layer and
  the LM head) becomes ONNX Runtime's MatMulNBits: 4-bit weights in blocks of 32 along the input
  dimension. For a model whose float weights were dequantized from a GGUF file (SmolLM2), the
  file's own blocks are taken over (quantize_q4_from_gguf): the weights llama.cpp runs. Otherwise
  ONNX Runtime's quantizer rounds the float weights to the nearest of 16 levels per block, with
  one float scale and one 4-bit zero point each (asymmetric). accuracy_level 4 lets the CPU
  kernel quantize activations to int8 per block and use int8 dot products (AVX-512 VNNI / AVX2),
  as llama.cpp's Q4_1 kernels do.
- model_int8.onnx: ONNX Runtime's dynamic quantization of the same MatMuls, int8 weights with one
  scale per output channel, activations quantized per call (the int8 recipe of kit/minilm.py,
  reduce_range for the same reason: every x86 CPU computes the same integers).

Both keep every input and output of the float export (the KV cache, the shared prefix), so the
same engine loads either with `onnxFile` (or the loader's `variant:`); activations and the cache
stay float32. The embedding Gather stays float: it reads one row per token and costs nothing.
Parity goldens stay those of float32; how often the quantized models choose the same greedy
tokens is measured by `npm run bench:generate -- --passes versus` and floored by
test/parity/smollm2-quantized.test.ts.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

Q4_FILE = "model_q4.onnx"
INT8_FILE = "model_int8.onnx"
BLOCK_SIZE = 32
ACCURACY_LEVEL = 4


def quantize_q4(fp32: Path, out: Path) -> dict[str, Any]:
    import onnx
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    model = onnx.load(str(fp32))
    # No algo_config: the quantizer's default one, round-to-nearest per block.
    quantizer = MatMulNBitsQuantizer(
        model,
        bits=4,
        block_size=BLOCK_SIZE,
        is_symmetric=False,
        accuracy_level=ACCURACY_LEVEL,
        quant_format=QuantFormat.QOperator,
        op_types_to_quantize=("MatMul",),
    )
    quantizer.process()
    quantizer.model.save_model_to_file(str(out), use_external_data_format=False)
    return _ops(out, "MatMulNBits")


def quantize_q4_from_gguf(fp32: Path, gguf_path: Path, out: Path) -> dict[str, Any]:
    """model_q4.onnx holding the GGUF file's own blocks, for a float model dequantized from it.

    Requantizing dequantized Q4_1 weights cannot give them back: a Q4_1 block is d * q + m with a
    float minimum m, while MatMulNBits' grid is (q - zero_point) * scale with an integer zero
    point, so every weight would move by up to half a step (measured: 9 % of float32's first 16
    greedy tokens kept, against 92 % here). Float zero points would be exact but send ONNX
    Runtime to its unpacked kernel, which dequantizes every weight on every run (4x slower). So
    the block splits in two: d * (q - 8) is MatMulNBits with the file's codes and scales (zero
    point 8, the default), and the rest, (m + 8d) per block, multiplies the sum of the block's
    activations: A @ W = MatMulNBits(A) + blocksum(A) @ offsets, a [K/32, N] MatMul. Every MatMul
    whose weight columns are rows of a Q4_1 tensor of the file (found by their exact dequantized
    bytes, which also undoes the row permutation transformers applies to q/k) is rebuilt so. The
    tied LM head, Q8_0 in the file (d * q, q in int8), becomes an 8-bit MatMulNBits with the
    file's codes and zero point 128, exact without a second term. The result runs the weights
    llama.cpp runs.
    """
    import hashlib

    import numpy as np
    import onnx
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize
    from onnx import helper, numpy_helper

    def digest(row: np.ndarray) -> bytes:
        return hashlib.blake2b(np.ascontiguousarray(row).tobytes(), digest_size=16).digest()

    rows: dict[bytes, tuple[int, np.ndarray, np.ndarray, np.ndarray | None]] = {}
    for tensor in GGUFReader(str(gguf_path)).tensors:
        kind = tensor.tensor_type
        if kind not in (GGMLQuantizationType.Q4_1, GGMLQuantizationType.Q8_0):
            continue
        raw = np.asarray(tensor.data)
        values = dequantize(raw, kind).reshape(raw.shape[0], -1)
        if kind == GGMLQuantizationType.Q4_1:
            blocks = raw.reshape(raw.shape[0], -1, 20)
            d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
            m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
            qs = blocks[..., 4:20]
            # Q4_1 holds element j in the low nibble of byte j and element j + 16 in its high one.
            codes = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.uint8)
            bits, offset = 4, m + 8 * d
        else:
            blocks = raw.reshape(raw.shape[0], -1, 34)
            d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
            codes = (blocks[..., 2:34].view(np.int8).astype(np.int16) + 128).astype(np.uint8)
            bits, offset = 8, None
        for r in range(values.shape[0]):
            rows[digest(values[r])] = (bits, codes[r], d[r], None if offset is None else offset[r])

    model = onnx.load(str(fp32))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1
    nodes, new_inits, dropped, sums = [], [], set(), {}
    replaced = 0
    const = lambda name, array: new_inits.append(numpy_helper.from_array(array, name))  # noqa: E731
    for node in graph.node:
        weight = _constant_weight(node, inits)
        found = None if weight is None else [rows.get(digest(weight[:, n])) for n in range(weight.shape[1])]
        mixed = found is None or any(f is None for f in found) or len({f[0] for f in found}) != 1
        # The blocks' offset term below reshapes a [batch, sequence, K] input, which a Gemm's is not.
        if mixed or (node.op_type == "Gemm" and found[0][0] == 4):
            nodes.append(node)
            continue
        k, n = weight.shape
        bits, base, a = found[0][0], node.input[1], node.input[0]
        # A head read through the tied embedding (Gemm's transB) keeps that matrix for the Gather;
        # its quantized copy takes its own names.
        base = base if node.op_type == "MatMul" else f"{node.name}_{base}"
        codes = np.stack([f[1] for f in found])  # [N, blocks, 32]
        if bits == 4:
            codes = codes[..., 0::2] | (codes[..., 1::2] << 4)
        const(f"{base}_Q{bits}", codes.astype(np.uint8))
        const(f"{base}_scales", np.stack([f[2] for f in found]).reshape(-1).astype(np.float32))
        inputs = [a, f"{base}_Q{bits}", f"{base}_scales"]
        if bits == 8:
            const(f"{base}_zero_points", np.full(n * (k // BLOCK_SIZE), 128, np.uint8))
            inputs.append(f"{base}_zero_points")
        codes_out = node.output[0] if bits == 8 else f"{node.output[0]}_codes"
        nodes.append(
            helper.make_node(
                "MatMulNBits", inputs, [codes_out], name=f"{node.name}_Q{bits}", domain="com.microsoft",
                K=k, N=n, bits=bits, block_size=BLOCK_SIZE, accuracy_level=ACCURACY_LEVEL,
            )
        )
        if bits == 4:
            # The blocks' activation sums, once per input (q/k/v and gate/up share theirs).
            if a not in sums:
                shape, axes = f"{a}_blockshape", f"{a}_blockaxes"
                const(shape, np.array([0, 0, k // BLOCK_SIZE, BLOCK_SIZE], np.int64))
                const(axes, np.array([-1], np.int64))
                nodes.append(helper.make_node("Reshape", [a, shape], [f"{a}_blocks"], name=f"{a}_Reshape_blocks"))
                nodes.append(
                    helper.make_node("ReduceSum", [f"{a}_blocks", axes], [f"{a}_blocksum"], name=f"{a}_ReduceSum_blocks", keepdims=0)
                )
                sums[a] = f"{a}_blocksum"
            const(f"{base}_offsets", np.stack([f[3] for f in found], axis=1).astype(np.float32))  # [blocks, N]
            nodes.append(helper.make_node("MatMul", [sums[a], f"{base}_offsets"], [f"{node.output[0]}_offset"], name=f"{node.name}_offset"))
            nodes.append(
                helper.make_node("Add", [codes_out, f"{node.output[0]}_offset"], list(node.output), name=f"{node.name}_Add_offset")
            )
        if users.get(node.input[1], 0) == 1:
            dropped.add(node.input[1])
        replaced += 1
    kept = [i for i in graph.initializer if i.name not in dropped]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + new_inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save_model(model, str(out), save_as_external_data=False)
    report = _ops(out, "MatMulNBits")
    report["from_gguf"] = gguf_path.name
    return report


def _constant_weight(node, inits) -> "np.ndarray | None":
    """The [K, N] weight of a MatMul by a constant, or of a Gemm A @ B^T by one (no bias, no
    scaling): the torch-free graph (kit/graph_llama.py) reads its tied LM head so."""
    from onnx import helper, numpy_helper

    if len(node.input) < 2 or node.input[1] not in inits:
        return None
    if node.op_type == "MatMul":
        return numpy_helper.to_array(inits[node.input[1]])
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    plain = len(node.input) == 2 and attrs.get("transA", 0) == 0 and attrs.get("alpha", 1.0) == 1.0
    if node.op_type == "Gemm" and plain and attrs.get("transB", 0) == 1:
        return numpy_helper.to_array(inits[node.input[1]]).T
    return None


def _untied_gemm_weights(fp32: Path, out: Path) -> Path:
    """fp32, or (when a Gemm reads a weight another node reads too) a copy of it at out where each
    such Gemm has its own copy of the weight. quantize_dynamic rewrites a Gemm's weight in place
    (transposed, for MatMulInteger): the tied embedding of the torch-free graph would then hand
    the Gather transposed rows."""
    import onnx

    model = onnx.load(str(fp32))
    readers: dict[str, int] = {}
    for node in model.graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    inits = {i.name: i for i in model.graph.initializer}
    untied = 0
    for node in model.graph.node:
        if node.op_type == "Gemm" and len(node.input) > 1 and node.input[1] in inits and readers[node.input[1]] > 1:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[1]])
            copy.name = f"{node.name}_{node.input[1]}"
            model.graph.initializer.append(copy)
            node.input[1] = copy.name
            untied += 1
    if untied == 0:
        return fp32
    onnx.save_model(model, str(out), save_as_external_data=False)
    return out


def quantize_int8(fp32: Path, out: Path) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    staged = out.with_name(f"{out.stem}.untied.onnx")
    source = _untied_gemm_weights(fp32, staged)
    try:
        quantize_dynamic(
            str(source),
            str(out),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            op_types_to_quantize=["MatMul"],
        )
    finally:
        staged.unlink(missing_ok=True)
    return _ops(out, "MatMulInteger")


def _ops(path: Path, op: str) -> dict[str, Any]:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return {
        "file": path.name,
        "bytes": path.stat().st_size,
        "quantized": sum(1 for n in graph.node if n.op_type == op),
        "float_matmuls_left": sum(1 for n in graph.node if n.op_type == "MatMul"),
    }


def quantize_folder(folder: Path, force: bool = False, gguf: Path | None = None) -> list[dict[str, Any]]:
    """Both variants of folder/model.onnx, each skipped when it exists already (unless force).

    With `gguf` (the file the float weights were dequantized from), model_q4.onnx takes that
    file's blocks (quantize_q4_from_gguf) instead of quantizing the float weights again.
    """
    import logging

    # The quantizers log every node they pass over at INFO.
    for name in ("", "onnxruntime.quantization.matmul_nbits_quantizer"):
        logging.getLogger(name).setLevel(logging.WARNING)
    fp32 = folder / "model.onnx"
    made = []
    q4 = quantize_q4 if gguf is None else lambda fp32, out: quantize_q4_from_gguf(fp32, gguf, out)
    for name, step in ((Q4_FILE, q4), (INT8_FILE, quantize_int8)):
        out = folder / name
        if out.exists() and not force:
            continue
        started = time.time()
        report = step(fp32, out)
        report["seconds"] = round(time.time() - started, 1)
        print(f"  {folder.name}/{name}: {report}", flush=True)
        made.append(report)
    return made


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="quantized copies of causal-LM exports")
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--gguf", type=Path, help="the GGUF file the float weights came from")
    args = parser.parse_args()
    for folder in args.folders:
        quantize_folder(folder, force=args.force, gguf=args.gguf)
