"""Exports a torch module to ONNX with Optimum's tensor names and proves ONNX Runtime agrees."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
import torch

from .common import PARITY_TOLERANCE

OPSET = 17


class ParityError(RuntimeError):
    pass


class NamedOutputs(torch.nn.Module):
    """Calls a transformers model with named tensors and returns the chosen outputs as a tuple.

    The TorchScript tracer binds inputs by position; going through this wrapper keeps the binding
    by name whatever order a model's forward() declares its parameters in.
    """

    def __init__(self, model: torch.nn.Module, input_names: list[str], output_names: list[str]):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.output_names = output_names

    def forward(self, *tensors: torch.Tensor):
        result = self.model(**dict(zip(self.input_names, tensors)))
        return tuple(getattr(result, name) for name in self.output_names)


def export(
    module: torch.nn.Module,
    example: dict[str, torch.Tensor],
    output_names: list[str],
    dynamic_axes: dict[str, dict[int, str]],
    path: Path,
) -> None:
    """TorchScript-based export: it gives the plain op graph Optimum produces and runs in seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    input_names = list(example.keys())
    # A fresh wrapper is in training mode, and the exporter restores that mode onto the wrapped model
    # afterwards: dropout would then silently perturb every later torch reference call.
    wrapped = NamedOutputs(module, input_names, output_names).eval()
    with torch.no_grad():
        torch.onnx.export(
            wrapped,
            tuple(example.values()),
            str(path),
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    module.eval()
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    # Keep the file self-contained (no external data) and free of anything that varies per run.
    model.doc_string = ""
    onnx.save_model(model, str(path), save_as_external_data=False)


def session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def check_parity(
    path: Path,
    reference: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]],
    feeds: list[dict[str, np.ndarray]],
    tolerance: float = PARITY_TOLERANCE,
) -> dict[str, float | int]:
    """Runs every feed through ORT and the torch reference; any output over tolerance fails the build."""
    sess = session(path)
    worst = 0.0
    for feed in feeds:
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feed)))
        want = reference(feed)
        for name, expected in want.items():
            actual = got[name]
            if actual.shape != expected.shape:
                raise ParityError(f"{path}: output {name} shape {actual.shape} != torch {expected.shape}")
            if actual.size:
                worst = max(worst, float(np.max(np.abs(actual.astype(np.float64) - expected))))
    if worst > tolerance:
        raise ParityError(f"{path}: ONNX Runtime differs from torch by {worst:.3g} (> {tolerance})")
    return {"max_abs_diff": worst, "tolerance": tolerance, "batches": len(feeds)}
