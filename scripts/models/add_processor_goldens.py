"""Adds the logits-processor goldens (kit/seq2seq.processor_cases, kit/causal_lm.processor_cases)
to the committed t5-text2text, bart-summarization and llama-causal-lm fixtures without rebuilding
them, so their ONNX files and other goldens stay byte-identical: each torch model is remade from
the fixture's seed and committed tokenizer exactly as the kit's build() makes it, must reproduce the
committed generate() and pipeline goldens, and then only the processor cases are (re)placed.

    OMP_NUM_THREADS=1 .venv/models/bin/python scripts/models/add_processor_goldens.py
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from kit import causal_lm, seq2seq  # noqa: E402
from kit.common import FIXTURES, seed_everything, threads_for_determinism, write_json  # noqa: E402

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _copy_tokenizer(folder: Path, source: Path) -> None:
    for name in TOKENIZER_FILES:
        if (folder / name).exists():
            shutil.copy(folder / name, source / name)


def _check(name: str, got, want) -> None:
    if got != want:
        raise SystemExit(f"{name}: the remade torch model does not reproduce the committed goldens")


def _replace(goldens: dict, cases: list[dict], names: set[str]) -> None:
    kept = [c for c in goldens["pipeline"] if c["name"] not in names]
    goldens["pipeline"] = kept + cases
    for case in cases:
        print(f"  {case['name']}: differs from unbanned: {case['differs_from_unbanned']}", flush=True)


def seq2seq_fixture(fixture: seq2seq.Fixture) -> None:
    from transformers import AutoTokenizer

    folder = FIXTURES / fixture.name
    goldens = json.loads((folder / "goldens.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    seed_everything(fixture.seed)
    config = seq2seq._config(fixture, tokenizer)
    config._attn_implementation = "eager"
    model = seq2seq._model_class(fixture)(config).eval()
    if fixture.family == "bart":
        model.generation_config.forced_bos_token_id = tokenizer.bos_token_id
    eos_bias = seq2seq._end_somewhere(model, tokenizer) if fixture.family == "bart" else None
    _check(fixture.name, eos_bias, goldens["eos_final_logits_bias"])
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        _copy_tokenizer(folder, source)
        tok = AutoTokenizer.from_pretrained(source)
        loaded = seq2seq._model_class(fixture).from_pretrained(source, attn_implementation="eager").eval()
        _check(fixture.name, seq2seq._generation_cases(loaded, tok), goldens["generation"])
        old = seq2seq._pipeline_cases(loaded, tok, fixture)
        _check(fixture.name, old, [c for c in goldens["pipeline"] if c["name"] in {o["name"] for o in old}])
        cases = seq2seq.processor_cases(loaded, tok, fixture)
    print(fixture.name, flush=True)
    _replace(goldens, cases, {c["name"] for c in cases})
    write_json(folder / "goldens.json", goldens)


def causal_fixture() -> None:
    from transformers import AutoTokenizer, LlamaForCausalLM, pipeline

    folder = FIXTURES / causal_lm.NAME
    goldens = json.loads((folder / "goldens.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    seed_everything(causal_lm.SEED)
    config = causal_lm._config(tokenizer)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight[tokenizer.eos_token_id].zero_()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        _copy_tokenizer(folder, source)
        tok = AutoTokenizer.from_pretrained(source)
        loaded = LlamaForCausalLM.from_pretrained(source, attn_implementation="eager").eval()
        _check(causal_lm.NAME, causal_lm._generation_cases(tok, loaded), goldens["generation"])
        pipe = pipeline("text-generation", model=str(source), tokenizer=str(source), device="cpu")
        old = causal_lm._pipeline_cases(pipe)
        _check(causal_lm.NAME, old, [c for c in goldens["pipeline"] if c["name"] in {o["name"] for o in old}])
        cases = causal_lm.processor_cases(pipe)
    print(causal_lm.NAME, flush=True)
    _replace(goldens, cases, {c["name"] for c in cases})
    write_json(folder / "goldens.json", goldens)


def main() -> None:
    threads_for_determinism()
    for fixture in seq2seq.FIXTURE_LIST:
        seq2seq_fixture(fixture)
    causal_fixture()


if __name__ == "__main__":
    main()
