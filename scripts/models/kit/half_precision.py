"""model_fp16.onnx: a float16 copy of an encoder's float32 model.onnx, for CUDA shards.

Model repositories publish such files (Optimum's and Xenova's exports, `model_fp16.onnx`); this
makes the same kind for the models the repository builds, with ONNX Runtime's own converter
(onnxruntime.transformers.float16): every float initializer and activation becomes float16, the
integer inputs stay, and the outputs are float16 too (keep_io_types=False), as in the published
files, so the engine's fp16 output path is what the tests exercise. The copy is checked against
float32 on the same feeds in ONNX Runtime's CPU provider, which runs float16 graphs (slowly: its
float16 kernels are few and unvectorized; the copy is for GPUs, the check for correctness).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

FP16_FILE = "model_fp16.onnx"
# float16 keeps ~3 decimal digits; a 6-layer encoder's hidden states (|h| up to ~10) drift by a
# few thousandths. Past this the conversion is wrong, not imprecise.
HIDDEN_TOLERANCE = 0.05


def fp16_copy(folder: Path, feeds: list[dict[str, np.ndarray]], session) -> dict[str, Any]:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    started = time.time()
    out = folder / FP16_FILE
    partial = out.with_suffix(".partial")
    model = convert_float_to_float16(onnx.load(str(folder / "model.onnx")), keep_io_types=False)
    onnx.save(model, str(partial))
    fp32, fp16 = session(folder / "model.onnx"), session(partial)
    worst = 0.0
    for feed in feeds:
        (a,) = fp32.run(None, feed)[:1]
        (b,) = fp16.run(None, feed)[:1]
        if b.dtype != np.float16:
            raise RuntimeError(f"{FP16_FILE}: the first output is {b.dtype}, not float16")
        worst = max(worst, float(np.abs(a - b.astype(np.float32)).max()))
    if not worst <= HIDDEN_TOLERANCE:
        raise RuntimeError(f"{FP16_FILE}: float16 differs from float32 by {worst} (tolerance {HIDDEN_TOLERANCE})")
    partial.rename(out)
    return {"file": FP16_FILE, "bytes": out.stat().st_size, "max_abs_diff_vs_fp32": round(worst, 6), "seconds": round(time.time() - started, 1)}
