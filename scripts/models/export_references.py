"""Writes the real-weight references the parity tests read into test/fixtures/real-weights/ (committed).

`npm run models:references`, after `npm run models:fetch -- --tests` has built .cache/models with
torch: the references need torch (sentence-transformers' embeddings, transformers' greedy
generations), the graphs CI runs do not (build_weights.py writes them without torch). What is
committed per model:

- all-MiniLM-L6-v2: references.json (the corpus ids, the options and sentence-transformers'
  embeddings as little-endian float32 in base64) and LICENSE (its terms come from
  sentence-transformers' distribution, which the torch-free tools do not install).
- smollm2-135m-instruct: goldens.json, the small files transformers writes from the GGUF file
  (config.json, generation_config.json, tokenizer_config.json, special_tokens_map.json, LICENSE),
  and tokenizer.json without its vocabulary and merges (tokenizer-skeleton.json): build_weights.py
  fills them back in from the GGUF file and checks the sha256 of the whole file recorded here.

Needs only numpy; runs in either tools venv.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit.common import CACHE_MODELS, ROOT  # noqa: E402

REFERENCES = ROOT / "test" / "fixtures" / "real-weights"
MINILM = "all-MiniLM-L6-v2"
SMOLLM2 = "smollm2-135m-instruct"
SMOLLM2_FILES = ["config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json", "LICENSE", "goldens.json"]
SKELETON = "tokenizer-skeleton.json"
REFERENCES_SCHEMA = "hugot-stream/real-weight-references@1"


def float32_base64(rows) -> dict:
    array = np.asarray(rows, dtype="<f4")
    return {"dtype": "float32", "byte_order": "little", "shape": list(array.shape), "base64": base64.b64encode(array.tobytes()).decode("ascii")}


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def minilm(source: Path, dest: Path) -> None:
    goldens = json.loads((source / "goldens.json").read_text(encoding="utf-8"))
    case = goldens["pipeline"][0]
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "LICENSE", dest / "LICENSE")
    write_json(
        dest / "references.json",
        {
            "schema": REFERENCES_SCHEMA,
            "model": goldens["model"],
            "task": goldens["task"],
            "reference": goldens["reference"],
            "source": goldens["source"],
            "versions": goldens["versions"],
            "corpus": goldens["corpus"],
            "call": case["call"],
            "embeddings": float32_base64(case["output"]),
            # How close the torch export came; recorded, not tested (the tests measure their own).
            "min_cosine_onnx_fp32": float(min(case["cosine_onnx_fp32"])),
        },
    )


def smollm2(source: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in SMOLLM2_FILES:
        shutil.copy(source / name, dest / name)
    raw = (source / "tokenizer.json").read_bytes()
    tokenizer = json.loads(raw)
    tokenizer["model"]["vocab"] = {}
    tokenizer["model"]["merges"] = []
    write_json(
        dest / SKELETON,
        {
            "sha256": hashlib.sha256(raw).hexdigest(),
            "fill": "model.vocab from the GGUF file's tokenizer.ggml.tokens (token -> index), model.merges from "
            "tokenizer.ggml.merges (split at the space); written as json.dumps(indent=2, ensure_ascii=False)",
            "tokenizer": tokenizer,
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--from", dest="source", type=Path, default=CACHE_MODELS, help="a torch-built models folder")
    args = parser.parse_args()
    minilm(args.source / MINILM, REFERENCES / MINILM)
    smollm2(args.source / SMOLLM2, REFERENCES / SMOLLM2)
    for path in sorted(REFERENCES.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
