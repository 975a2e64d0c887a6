"""Writes test/fixtures/vectors/encodings.json: one real sentence embedding (from the committed
all-MiniLM-L6-v2-int8 goldens) in every compact form of output.vectors, each made by numpy, so
that the TypeScript encoder (src/route/vector-encoding.ts) is checked against an implementation
that is not its own. Python is a tool here: the product and its tests never run it.

    .venv/models/bin/python scripts/models/vector_encodings.py
"""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "models" / "all-MiniLM-L6-v2-int8" / "goldens.json"
OUT = ROOT / "test" / "fixtures" / "vectors" / "encodings.json"
# "Meeting moved to Thursday at noon.": an ordinary sentence, not an edge case of the goldens.
INPUT_INDEX = 3
DIMENSIONS = (256, 128, 64)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def int8_form(v: np.ndarray) -> dict:
    # Symmetric per-vector scaling in float64, as the encoder computes it: q = rint(v * 127 / max|v|).
    wide = v.astype(np.float64)
    top = float(np.max(np.abs(wide)))
    q = np.rint(wide * 127 / top).astype(np.int8)
    return {"int8": q.tolist(), "scale": top / 127}


def forms(v: np.ndarray) -> dict:
    return {
        "base64-f32": b64(v.astype("<f4").tobytes()),
        "base64-f16": b64(v.astype("<f2").tobytes()),
        "int8": int8_form(v),
        "binary": b64(np.packbits(v > 0).tobytes()),
    }


def main() -> None:
    goldens = json.loads(GOLDENS.read_text())
    case = goldens["pipeline"][0]
    vector = np.asarray(case["output"][INPUT_INDEX], dtype=np.float32)
    truncated = {}
    for n in DIMENSIONS:
        # Matryoshka: the first n values, L2-renormalised (the model normalises its embeddings).
        head = vector[:n].astype(np.float64)
        cut = (head / np.linalg.norm(head)).astype(np.float32)
        truncated[str(n)] = {"vector": cut.tolist(), "encodings": forms(cut)}
    fixture = {
        "source": f"{GOLDENS.relative_to(ROOT)} pipeline[0] ({case['name']}) output[{INPUT_INDEX}]",
        "numpy": np.__version__,
        "vector": vector.tolist(),
        "encodings": forms(vector),
        "dimensions": truncated,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, indent=1) + "\n")


if __name__ == "__main__":
    main()
