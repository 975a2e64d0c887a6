"""Paths, seeding and JSON writing shared by every fixture builder."""
from __future__ import annotations

import hashlib
import json
import os
import platform
import random
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "test" / "fixtures" / "models"
DEFAULT_MODELS = ROOT / "models"
CACHE_MODELS = ROOT / ".cache" / "models"
CORPUS_JSONL = ROOT / ".cache" / "corpus" / "spam-assassin.jsonl"
SAMPLE_JSONL = ROOT / "test" / "fixtures" / "corpus" / "sample.jsonl"

GOLDENS_SCHEMA = "hugot-stream/goldens@1"
# The tolerance the issue sets for "ONNX Runtime reproduces torch".
PARITY_TOLERANCE = 1e-4


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def tool_versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import tokenizers
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "numpy": np.__version__,
    }


def jsonable(value: Any) -> Any:
    """Turns what Python pipelines return (numpy scalars, tuples, tensors) into plain JSON values."""
    import torch

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, torch.Tensor):
        return jsonable(value.detach().cpu().numpy())
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        # JSON has no NaN/Infinity; a string keeps the fact visible to the consumer.
        return str(value)
    return value


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(jsonable(data), indent=1, ensure_ascii=False, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def threads_for_determinism() -> None:
    """Single-threaded math keeps float reductions in a fixed order, so rebuilds match bit for bit."""
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("RAYON_NUM_THREADS", "1")


def sha256_file(path: Path) -> str:
    """The file's sha256, read in 1 MiB chunks (model files are hundreds of MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
