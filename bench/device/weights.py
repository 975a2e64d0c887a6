"""Carries a benchmark model to the GPU machine without its weights, which do not compress.

  python weights.py strip  SRC_FOLDER DEST_FOLDER   # here: graph + per-tensor statistics
  python weights.py refill FOLDER                   # there: seeded weights with those statistics

Every float initializer over 1,024 values is dropped from the graph and noted with its shape,
mean and standard deviation; refill draws it again from a seeded normal with the same moments (so
LayerNorm scales stay near 1 and biases near 0). Speed does not depend on the values; the GPU run
compares its outputs with the CPU path on the same refilled model, never with the originals.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

SPEC = "weights.json"
SMALL = 1024


def strip(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        if item.is_file() and item.suffix != ".onnx" and item.name != "goldens.json":
            shutil.copy(item, dest / item.name)
        elif item.is_dir():
            shutil.copytree(item, dest / item.name, dirs_exist_ok=True)
    model = onnx.load(src / "model.onnx")
    kept, dropped = [], []
    for tensor in model.graph.initializer:
        values = numpy_helper.to_array(tensor)
        if values.dtype == np.float32 and values.size > SMALL:
            dropped.append({
                "name": tensor.name,
                "dims": list(values.shape),
                "mean": float(values.mean()),
                "std": float(values.std()),
            })
        else:
            kept.append(tensor)
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    onnx.save(model, dest / "model.onnx")
    (dest / SPEC).write_text(json.dumps(dropped))
    print(f"{src.name}: {len(dropped)} tensors dropped, graph {(dest / 'model.onnx').stat().st_size} bytes")


def refill(folder: Path) -> None:
    model = onnx.load(folder / "model.onnx")
    rng = np.random.default_rng(20261130)
    for spec in json.loads((folder / SPEC).read_text()):
        values = rng.normal(spec["mean"], spec["std"], spec["dims"]).astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array(values, spec["name"]))
    onnx.save(model, folder / "model.onnx")
    print(f"{folder.name}: refilled, {(folder / 'model.onnx').stat().st_size} bytes")


if __name__ == "__main__":
    if sys.argv[1] == "strip":
        strip(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "refill":
        refill(Path(sys.argv[2]))
    else:
        raise SystemExit("usage: weights.py strip SRC DEST | refill FOLDER")
