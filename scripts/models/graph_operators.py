"""Writes test/fixtures/graph-operators.json: for every committed .onnx graph, the op types of its
top-level nodes and its input names, as the onnx library reads them (the reference for
src/models/onnx-operators.ts). Run by npm run models:build after the fixtures; alone with
`.venv/models/bin/python scripts/models/graph_operators.py`."""
from __future__ import annotations

import sys
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit.common import DEFAULT_MODELS, FIXTURES, ROOT, write_json  # noqa: E402

TARGET = ROOT / "test" / "fixtures" / "graph-operators.json"


def main() -> None:
    graphs = sorted([*FIXTURES.rglob("*.onnx"), *DEFAULT_MODELS.rglob("*.onnx")])
    facts = {}
    for path in graphs:
        model = onnx.load(str(path), load_external_data=False)
        facts[path.relative_to(ROOT).as_posix()] = {
            "operators": sorted({node.op_type for node in model.graph.node}),
            "inputs": [value.name for value in model.graph.input],
        }
    write_json(TARGET, {"onnx": onnx.__version__, "graphs": facts})
    print(f"{TARGET.relative_to(ROOT)}: {len(facts)} graphs")


if __name__ == "__main__":
    main()
