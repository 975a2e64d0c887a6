"""A small helper for writing ONNX graphs by hand with onnx.helper (no torch).

build_weights.py writes the real-weight models (kit/graph_bert.py, kit/graph_llama.py) this way, so
CI needs neither torch nor its CUDA wheels. Names are made unique by a counter; weights become
initializers; small constants become initializers too (ONNX Runtime folds them either way).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The opset the torch exports use (kit/onnx_export.py OPSET): ReduceMean still takes its axes as
# an attribute, and every runtime the project tests on reads it.
OPSET = 17
INT64_MAX = np.iinfo(np.int64).max


class Graph:
    """Nodes, initializers, inputs and outputs of one ONNX graph, in the order they are added."""

    def __init__(self, name: str):
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._count = 0
        self._constants: dict[tuple, str] = {}

    def _fresh(self, hint: str) -> str:
        self._count += 1
        return f"/{hint}_{self._count}"

    def input(self, name: str, elem_type: int, shape: Sequence[int | str]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def output(self, name: str, elem_type: int, shape: Sequence[int | str]) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, list(shape)))

    def weight(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, value, dtype=np.int64) -> str:
        """A small constant tensor, shared by every node that asks for the same value."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            self._constants[key] = self.weight(self._fresh("const"), array)
        return self._constants[key]

    def op(self, op_type: str, *inputs: str, name: str | None = None, outputs: int = 1, **attrs):
        """Adds one node; returns its output name (or names when outputs > 1)."""
        result = [name] if name is not None and outputs == 1 else [self._fresh(op_type) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), result, name=self._fresh(op_type + "_node"), **attrs))
        return result[0] if outputs == 1 else result

    def dim(self, tensor: str, axis: int) -> str:
        """One dimension of a tensor's runtime shape, as a 1-D int64 tensor of length 1."""
        return self.op("Shape", tensor, start=axis, end=axis + 1)

    def model(self, producer: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=producer)
        # IR 8: what the torch exports carry, and what every ONNX Runtime the tests use reads.
        model.ir_version = 8
        return model


def save(model: onnx.ModelProto, path: Path) -> None:
    """Checks the model and writes it as one self-contained file (the models stay under 2 GB)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save_model(model, str(path), save_as_external_data=False)


FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64
