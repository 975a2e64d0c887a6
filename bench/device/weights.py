"""Carries a benchmark model to the GPU machine without its weights, which do not compress.

  python weights.py strip  SRC_FOLDER DEST_FOLDER   # here: graph + per-tensor statistics
  python weights.py refill FOLDER                   # there: seeded weights with those statistics

Every float (float32 or float16) initializer over 1,024 values is dropped from the graph and
noted with its shape, type, mean and standard deviation; refill draws it again from a normal with
the same moments (so LayerNorm scales stay near 1 and biases near 0), seeded by the tensor's name.
Speed does not depend on the values; the GPU run compares its outputs with the CPU path on the
same refilled model, never with the originals. Each of the folder's float graphs is carried
(model.onnx and its float16 copy model_fp16.onnx, whose initializers have the fp32 ones' names):
seeding by name refills the copy with the float16 rounding of the fp32 graph's new weights, so
the fp16 GPU pass can still be compared with the fp32 CPU engine.
"""
from __future__ import annotations

import json
import shutil
import sys
import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

SPEC = "weights.json"
SMALL = 1024
SEED = 20261130
GRAPHS = ("model.onnx", "model_fp16.onnx")
FLOATS = (np.float32, np.float16)


def strip(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for item in src.iterdir():
        if item.is_file() and item.suffix != ".onnx" and item.name != "goldens.json":
            shutil.copy(item, dest / item.name)
        elif item.is_dir():
            shutil.copytree(item, dest / item.name, dirs_exist_ok=True)
    specs = {}
    for graph in GRAPHS:
        if (src / graph).exists():
            specs[graph] = strip_graph(src / graph, dest / graph)
    (dest / SPEC).write_text(json.dumps(specs))


def strip_graph(src: Path, dest: Path) -> list[dict]:
    model = onnx.load(src)
    kept, dropped = [], []
    for tensor in model.graph.initializer:
        values = numpy_helper.to_array(tensor)
        if values.dtype in FLOATS and values.size > SMALL:
            wide = values.astype(np.float64)
            dropped.append({
                "name": tensor.name,
                "dims": list(values.shape),
                "dtype": str(values.dtype),
                "mean": float(wide.mean()),
                "std": float(wide.std()),
            })
        else:
            kept.append(tensor)
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    onnx.save(model, dest)
    print(f"{src.parent.name}/{src.name}: {len(dropped)} tensors dropped, graph {dest.stat().st_size} bytes")
    return dropped


def refill(folder: Path) -> None:
    specs = json.loads((folder / SPEC).read_text())
    for graph, dropped in specs.items():
        model = onnx.load(folder / graph)
        for spec in dropped:
            rng = np.random.default_rng([SEED, zlib.crc32(spec["name"].encode())])
            values = rng.normal(spec["mean"], spec["std"], spec["dims"]).astype(np.float32)
            model.graph.initializer.append(numpy_helper.from_array(values.astype(spec["dtype"]), spec["name"]))
        onnx.save(model, folder / graph)
        print(f"{folder.name}/{graph}: refilled, {(folder / graph).stat().st_size} bytes")


if __name__ == "__main__":
    if sys.argv[1] == "strip":
        strip(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "refill":
        refill(Path(sys.argv[2]))
    else:
        raise SystemExit("usage: weights.py strip SRC DEST | refill FOLDER")
