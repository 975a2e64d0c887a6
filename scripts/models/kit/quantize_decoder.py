"""Weight-only quantized copies of a causal-LM export, next to its float32 model.onnx.

- model_q4.onnx: every MatMul whose weight is a constant (the projections of every layer and
  the LM head) becomes ONNX Runtime's MatMulNBits: 4-bit weights in blocks of 32 along the input
  dimension, one float scale and one 4-bit zero point per block. Asymmetric blocks on purpose: the
  GGUF file SmolLM2's float weights come from is Q4_1 (a scale and a minimum per block of 32
  along the same dimension), so an asymmetric 4-bit grid sits closest to the levels those weights
  already take; llama.cpp runs that Q4_1 file directly. accuracy_level 4 lets the CPU kernel
  quantize activations to int8 per block and use int8 dot products (AVX-512 VNNI / AVX2).
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


def quantize_int8(fp32: Path, out: Path) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=True,
        op_types_to_quantize=["MatMul"],
    )
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


def quantize_folder(folder: Path, force: bool = False) -> list[dict[str, Any]]:
    """Both variants of folder/model.onnx, each skipped when it exists already (unless force)."""
    import logging

    # The quantizers log every tensor they leave alone at INFO on the root logger.
    logging.getLogger().setLevel(logging.WARNING)
    fp32 = folder / "model.onnx"
    made = []
    for name, step in ((Q4_FILE, quantize_q4), (INT8_FILE, quantize_int8)):
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
    args = parser.parse_args()
    for folder in args.folders:
        quantize_folder(folder, force=args.force)
