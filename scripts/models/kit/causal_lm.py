"""Tiny Llama-style causal LM exported with a KV cache (Optimum's decoder-with-past layout).

ONNX inputs: input_ids, attention_mask, position_ids, past_key_values.{i}.key / .value
ONNX outputs: logits (last position only, [batch, 1, vocab]), present.{i}.key / .value
Attention is traced through kit/grouped_attention.py, so the graph never repeats the KV heads.
Shapes: past/present are [batch, num_key_value_heads, past_sequence_length, head_dim]; the first step
feeds an empty past (past_sequence_length 0). attention_mask covers past + new tokens.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from . import grouped_attention, onnx_export, texts
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .text_fixtures import compact_raw, tokenization_cases
from .tokenizer_kit import save as save_tokenizer

NAME = "llama-causal-lm"
SEED = 201
MAX_NEW_TOKENS = 24


class WithPast(torch.nn.Module):
    """Flat tensors in and out, so the traced graph has one named input/output per cache tensor.

    The export also takes a shared prefix (`prefix_key_values.{i}.key/.value`, [1, kv heads,
    prefix, head dim]) after the past: prompt positions that every row of the batch starts with,
    attended by every row but held once, so a decode batch of requests built on the same
    instruction does not carry (and copy, each step) that instruction's cache per row. Positions
    count from the start of the prefix (position_ids are fed); attention_mask covers only the
    rows' own past and new tokens; presents hold only those. An empty prefix is the plain export.
    Traced through the grouped kernel, the prefix goes to each layer's attention as
    `shared_prefix`; under any other kernel (transformers' eager one, the parity reference) the
    prefix is spliced in front of every row's past instead, the layout it replaces.
    """

    def __init__(self, model: torch.nn.Module, layers: int):
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(self, input_ids, attention_mask, position_ids, *cache):
        from transformers import DynamicCache

        past, prefix = cache[: 2 * self.layers], cache[2 * self.layers :]
        shared = len(prefix) > 0
        prefix_length = prefix[0].shape[2] if shared else 0
        attention = [layer.self_attn for layer in self.model.model.layers]
        traced = self.model.config._attn_implementation == grouped_attention.NAME
        if shared and traced:
            for i, module in enumerate(attention):
                module.shared_prefix = (prefix[2 * i], prefix[2 * i + 1])
        elif shared and prefix_length > 0:
            rows = input_ids.shape[0]
            past = [torch.cat([p.expand(rows, -1, -1, -1), own], dim=2) for p, own in zip(prefix, past)]
            ones = torch.ones((rows, prefix_length), dtype=attention_mask.dtype)
            attention_mask = torch.cat([ones, attention_mask], dim=1)
        cache = DynamicCache(ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(self.layers)])
        try:
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                past_key_values=cache,
                use_cache=True,
                # Generation reads only the last position's logits; the vocabulary projection of every
                # other prompt position was ~13% of a prefill's compute, spent for nothing.
                logits_to_keep=1,
            )
        finally:
            for module in attention:
                module.shared_prefix = None
        flat = []
        for layer in out.past_key_values.layers:
            keys, values = layer.keys, layer.values
            if shared and not traced and prefix_length > 0:
                keys, values = keys[:, :, prefix_length:], values[:, :, prefix_length:]
            flat += [keys, values]
        return (out.logits, *flat)


def _config(tokenizer):
    from transformers import LlamaConfig

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        # Grouped-query attention: the cache has fewer heads than the queries, as in real Llamas.
        num_key_value_heads=2,
        max_position_embeddings=128,
        initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    # The eager kernel exports to plain MatMul/Softmax and matches torch bit for bit more often.
    config._attn_implementation = "eager"
    return config


def _names(layers: int) -> tuple[list[str], list[str]]:
    past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    return past, present


def _prefix_names(layers: int) -> list[str]:
    return [f"prefix_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]


def _with_prefix(feed: dict[str, np.ndarray], prefix: list[np.ndarray] | None, config) -> dict[str, np.ndarray]:
    """The feed with a shared prefix (empty when None) after its past, in the export's input order."""
    layers = config.num_hidden_layers
    if prefix is None:
        head_dim = feed["past_key_values.0.key"].shape[3]
        prefix = [np.zeros((1, config.num_key_value_heads, 0, head_dim), np.float32)] * (2 * layers)
    return {**feed, **dict(zip(_prefix_names(layers), prefix))}


def _feeds(tokenizer, prompts: list[str], config, past: list[np.ndarray] | None = None) -> dict[str, np.ndarray]:
    tokenizer.padding_side = "left"
    enc = tokenizer(prompts, padding=True, return_tensors="np")
    ids = enc["input_ids"].astype(np.int64)
    mask = enc["attention_mask"].astype(np.int64)
    layers = config.num_hidden_layers
    head_dim = config.hidden_size // config.num_attention_heads
    if past is None:
        past = [np.zeros((ids.shape[0], config.num_key_value_heads, 0, head_dim), np.float32)] * (2 * layers)
    # Optimum's rule: positions count real tokens only; padding positions get a harmless 1.
    positions = np.cumsum(mask, axis=1) - 1
    positions = np.where(mask == 0, 1, positions).astype(np.int64)
    feed = {"input_ids": ids, "attention_mask": mask, "position_ids": positions}
    names, _ = _names(layers)
    feed.update(dict(zip(names, past)))
    return feed


def _decode_feed(prev: dict[str, np.ndarray], presents: list[np.ndarray], next_ids: np.ndarray, layers: int):
    mask = np.concatenate([prev["attention_mask"], np.ones((next_ids.shape[0], 1), np.int64)], axis=1)
    positions = (prev["position_ids"].max(axis=1, keepdims=True) + 1).astype(np.int64)
    feed = {"input_ids": next_ids.reshape(-1, 1).astype(np.int64), "attention_mask": mask, "position_ids": positions}
    names, _ = _names(layers)
    feed.update(dict(zip(names, presents)))
    return feed


SHARED_PREFIX_TEXT = "Label the message that follows as spam or ham, and say why in one line."


def _shared_prefix_feeds(tokenizer, wrapper, config) -> list[dict[str, np.ndarray]]:
    """A left-padded prefill of two prompts after a shared prefix, then their decode step: the
    prefix, the rows' own past and the padding all non-empty, so the trace bakes in none of them."""
    layers = config.num_hidden_layers
    with torch.no_grad():
        prefix = [t.numpy() for t in wrapper(*[torch.from_numpy(v) for v in _feeds(tokenizer, [SHARED_PREFIX_TEXT], config).values()])[1:]]
    offset = prefix[0].shape[2]
    tail = _feeds(tokenizer, ["Hello there", "The meeting is moved to Thursday because"], config)
    tail["position_ids"] = tail["position_ids"] + offset
    prefill = _with_prefix(tail, prefix, config)
    with torch.no_grad():
        first = wrapper(*[torch.from_numpy(v) for v in prefill.values()])
    decode = _decode_feed(tail, [t.numpy() for t in first[1:]], first[0][:, -1, :].argmax(-1).numpy(), layers)
    return [prefill, _with_prefix(decode, prefix, config)]


def build(tokenizer) -> dict[str, Any]:
    from transformers import AutoTokenizer, LlamaForCausalLM, pipeline

    out_dir = FIXTURES / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    seed_everything(SEED)
    config = _config(tokenizer)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        # A random head would pick EOS now and then and end generations early; pushing its logit
        # down keeps every golden generation at its full length (and the fact is recorded).
        model.lm_head.weight[tokenizer.eos_token_id].zero_()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    layers = config.num_hidden_layers
    past_names, present_names = _names(layers)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        save_tokenizer(tokenizer, source)
        tok = AutoTokenizer.from_pretrained(source)
        loaded = LlamaForCausalLM.from_pretrained(source, attn_implementation="eager").eval()
        for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(source / name, out_dir / name)

        wrapper = WithPast(loaded, layers).eval()
        prompts = ["Hello there", "The meeting is moved to Thursday because"]
        head_dim = config.hidden_size // config.num_attention_heads
        # Traced on a decode step with a shared prefix, a non-empty past and left padding, so no
        # shortcut is baked into the graph; both steps are parity feeds too.
        shared_feeds = _shared_prefix_feeds(tok, wrapper, config)
        dynamic = {
            "input_ids": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size"},
        }
        for name in past_names:
            dynamic[name] = {0: "batch_size", 2: "past_sequence_length"}
        for name in present_names:
            dynamic[name] = {0: "batch_size", 2: "total_sequence_length"}
        for name in _prefix_names(layers):
            dynamic[name] = {2: "prefix_length"}
        onnx_path = out_dir / "model.onnx"
        _export(wrapper, shared_feeds[1], ["logits", *present_names], dynamic, onnx_path)

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                result = wrapper(*[torch.from_numpy(v) for v in feed.values()])
            return dict(zip(["logits", *present_names], [t.numpy() for t in result]))

        step1 = _feeds(tok, prompts, config)
        ref1 = reference(step1)
        next_ids = ref1["logits"][:, -1, :].argmax(-1)
        step2 = _decode_feed(step1, [ref1[n] for n in present_names], next_ids, layers)
        single = _feeds(tok, [texts.SHORT], config)
        plain = [_with_prefix(feed, None, config) for feed in (step1, step2, single)]
        parity = onnx_export.check_parity(onnx_path, reference, [*plain, *shared_feeds])

        generation = _generation_cases(tok, loaded)
        steps = _step_cases(tok, config, reference, present_names)
        pipe = pipeline("text-generation", model=str(source), tokenizer=str(source), device="cpu")
        pipeline_cases = _pipeline_cases(pipe) + processor_cases(pipe)

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "text-generation",
        "reference": {"runtime": "torch", "implementation": "transformers generate() and pipeline"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {
            "file": "model.onnx",
            "inputs": ["input_ids", "attention_mask", "position_ids", *past_names, *_prefix_names(layers)],
            "outputs": ["logits", *present_names],
            "kv_cache": {
                "num_layers": layers,
                "num_key_value_heads": config.num_key_value_heads,
                "head_dim": head_dim,
                "layout": "[batch, num_key_value_heads, past_sequence_length, head_dim]",
                "empty_past_first_step": True,
                "position_ids": "cumsum(attention_mask) - 1, padding positions set to 1",
                "shared_prefix": "prefix_key_values.{i}.key/.value [1, num_key_value_heads, prefix_length, head_dim], "
                "attended before every row's past; positions count from the prefix's start; empty = none",
            },
            "parity": parity,
        },
        "tokenization": tokenization_cases(tok) + _chat_cases(tok),
        "generation": generation,
        "steps": steps,
        "pipeline": pipeline_cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}


class ExportedWithPast(NamedTuple):
    """What export_with_past leaves for the caller's parity checks and goldens."""

    wrapper: "WithPast"
    prefill: dict[str, np.ndarray]
    decode: dict[str, np.ndarray]
    past_names: list[str]
    present_names: list[str]
    #: A prefill and a decode step with a non-empty shared prefix, for the parity check.
    shared: list[dict[str, np.ndarray]]

    def reference(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.no_grad():
            result = self.wrapper(*[torch.from_numpy(v) for v in feed.values()])
        return dict(zip(["logits", *self.present_names], [t.numpy() for t in result]))


def export_with_past(model, tokenizer, path: Path) -> ExportedWithPast:
    """Exports a causal LM with past/present KV inputs and outputs, traced on a decode step after
    a two-prompt prefill; the layout the text-generation pipeline reads."""
    config = model.config
    layers = config.num_hidden_layers
    past_names, present_names = _names(layers)
    wrapper = WithPast(model, layers).eval()
    prefill = _feeds(tokenizer, ["Hello there", "The meeting is moved to Thursday because"], config)
    with torch.no_grad():
        first = wrapper(*[torch.from_numpy(v) for v in prefill.values()])
    decode = _decode_feed(prefill, [t.numpy() for t in first[1:]], first[0][:, -1, :].argmax(-1).numpy(), layers)
    shared = _shared_prefix_feeds(tokenizer, wrapper, config)
    dynamic = {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
        "position_ids": {0: "batch_size", 1: "sequence_length"},
        "logits": {0: "batch_size"},
        **{n: {0: "batch_size", 2: "past_sequence_length"} for n in past_names},
        **{n: {0: "batch_size", 2: "total_sequence_length"} for n in present_names},
        **{n: {2: "prefix_length"} for n in _prefix_names(layers)},
    }
    _export(wrapper, shared[1], ["logits", *present_names], dynamic, path)
    return ExportedWithPast(
        wrapper,
        _with_prefix(prefill, None, config),
        _with_prefix(decode, None, config),
        past_names,
        present_names,
        shared,
    )


def _export(wrapper, feed, output_names, dynamic, path: Path) -> None:
    """Traces through grouped attention (no repeated KV heads in the graph), then puts the model
    back on transformers' own eager kernel, which the parity check and the goldens then use."""
    path.parent.mkdir(parents=True, exist_ok=True)
    import onnx

    config = wrapper.model.config
    reference_kernel = config._attn_implementation
    config._attn_implementation = grouped_attention.register()
    try:
        with torch.no_grad():
            torch.onnx.export(
                wrapper,
                tuple(torch.from_numpy(v) for v in feed.values()),
                str(path),
                input_names=list(feed.keys()),
                output_names=output_names,
                dynamic_axes=dynamic,
                opset_version=onnx_export.OPSET,
                do_constant_folding=True,
                dynamo=False,
            )
    finally:
        config._attn_implementation = reference_kernel
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    model.doc_string = ""
    onnx.save_model(model, str(path), save_as_external_data=False)


GEN_PROMPTS = [
    "Hello there",
    "The meeting is moved to Thursday because",
    "Crème brûlée 🍮 和 寿司",
    "Click here to claim your FREE",
]


def _generation_cases(tok, model) -> list[dict[str, Any]]:
    cases = []
    options = {"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS}
    for prompt in GEN_PROMPTS:
        enc = tok(prompt, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**enc, **options)
        prompt_ids = enc["input_ids"][0].tolist()
        new_ids = out[0, len(prompt_ids):].tolist()
        cases.append(
            {
                "name": f"greedy:{prompt}",
                "call": {"prompt": prompt, "options": options},
                "prompt_ids": prompt_ids,
                "new_ids": new_ids,
                "text": tok.decode(new_ids, skip_special_tokens=True),
                "stopped_by_eos": tok.eos_token_id in new_ids,
            }
        )
    # A left-padded batch must give each row the same tokens as running it alone.
    tok.padding_side = "left"
    enc = tok(GEN_PROMPTS[:2], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, **options)
    cases.append(
        {
            "name": "greedy_batch_left_padded",
            "call": {"prompt": GEN_PROMPTS[:2], "options": {**options, "padding_side": "left"}},
            "prompt_ids": enc["input_ids"].tolist(),
            "attention_mask": enc["attention_mask"].tolist(),
            "new_ids": out[:, enc["input_ids"].shape[1]:].tolist(),
            "stopped_by_eos": bool((out[:, enc["input_ids"].shape[1]:] == tok.eos_token_id).any()),
        }
    )
    return cases


def _step_cases(tok, config, reference, present_names) -> list[dict[str, Any]]:
    """Top-10 logits of the prefill and the next greedy decode steps, fed exactly as ONNX is fed."""
    cases = []
    for prompts in (["Hello there"], GEN_PROMPTS[:2]):
        feed = _feeds(tok, prompts, config)
        records = []
        for step in range(4):
            result = reference(feed)
            last = result["logits"][:, -1, :]
            records.append(
                {
                    "step": step,
                    "input_ids": feed["input_ids"],
                    "attention_mask": feed["attention_mask"],
                    "position_ids": feed["position_ids"],
                    "past_sequence_length": int(feed[f"past_key_values.0.key"].shape[2]),
                    "last_logits": compact_raw({"logits": last})["logits"],
                }
            )
            next_ids = last.argmax(-1)
            feed = _decode_feed(feed, [result[n] for n in present_names], next_ids, config.num_hidden_layers)
        cases.append({"name": f"steps:{len(prompts)}", "prompts": prompts, "steps": records})
    return cases


def _chat_cases(tok) -> list[dict[str, Any]]:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Is this mail spam?"},
    ]
    rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tok(rendered, add_special_tokens=False)["input_ids"]
    return [
        {
            "name": "chat_template",
            "call": {"messages": messages, "options": {"add_generation_prompt": True}},
            "output": {"text": rendered, "input_ids_without_special_tokens": ids},
        }
    ]


def processor_cases(pipe) -> list[dict[str, Any]]:
    """generate()'s logits processors over prompt + output, as the text-generation pipeline runs
    them: no_repeat_ngram_size as an option and as a generation_config.json key, bad_words_ids,
    suppress_tokens, begin_suppress_tokens and encoder_no_repeat_ngram_size (over the prompt) as keys (`call.generation_config`, which the parity
    test writes into a copy of the folder). `differs_from_unbanned` records that each ban bit."""
    model, tok = pipe.model, pipe.tokenizer
    # The random model seldom repeats itself; after this prompt it repeats a bigram at token 24.
    prompt = "a b a b a b a b"
    greedy = {"do_sample": False, "max_new_tokens": 32}
    enc = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, **greedy)[0, enc["input_ids"].shape[1]:].tolist()
    free = [t for t in out if t not in tok.all_special_ids]
    common = max(set(free), key=lambda t: (free.count(t), -t))
    pair = next([a, b] for a, b in zip(free, free[1:]) if common not in (a, b))
    other = next(t for t in free if t != common and t not in pair)
    bans = {"bad_words_ids": [[common], pair], "suppress_tokens": [other], "begin_suppress_tokens": [free[0]]}
    cases = []
    # Of the kit's prompts only this one is continued with one of its own tokens.
    copied = "Click here to claim your FREE"
    for name, text, options, config in [
        ("no_repeat_ngram", prompt, {**greedy, "no_repeat_ngram_size": 2}, {}),
        ("generation_config_no_repeat_ngram", prompt, greedy, {"no_repeat_ngram_size": 2}),
        ("bad_and_suppressed_tokens", prompt, greedy, bans),
        ("encoder_no_repeat_ngram", copied, greedy, {"encoder_no_repeat_ngram_size": 1}),
    ]:
        saved = {k: getattr(model.generation_config, k, None) for k in config}
        for k, v in config.items():
            setattr(model.generation_config, k, v)
        try:
            output = pipe(text, **options)
        finally:
            for k, v in saved.items():
                setattr(model.generation_config, k, v)
        call = {"inputs": text, "options": options, **({"generation_config": config} if config else {})}
        cases.append({"name": name, "task": "text-generation", "call": call, "output": output,
                      "differs_from_unbanned": output != pipe(text, **greedy)})
    return cases


def _pipeline_cases(pipe) -> list[dict[str, Any]]:
    cases = []
    for name, inputs, options in [
        ("greedy", "Hello there", {"do_sample": False, "max_new_tokens": 20}),
        ("greedy_new_text_only", "Hello there", {"do_sample": False, "max_new_tokens": 20, "return_full_text": False}),
        ("chat", [{"role": "user", "content": "Is this mail spam?"}], {"do_sample": False, "max_new_tokens": 20}),
    ]:
        cases.append({"name": name, "task": "text-generation", "call": {"inputs": inputs, "options": options}, "output": pipe(inputs, **options)})
    return cases
