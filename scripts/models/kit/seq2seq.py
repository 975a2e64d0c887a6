"""Tiny encoder–decoder models (T5, BART) exported in Optimum's seq2seq layout, with goldens.

Files per folder (Optimum's names, so an `optimum-cli export onnx --task text2text-generation-with-past`
folder loads the same way):
  encoder_model.onnx            input_ids, attention_mask -> last_hidden_state
  decoder_model.onnx            encoder_attention_mask, input_ids, encoder_hidden_states
                                -> logits, present.{i}.decoder.key/.value, present.{i}.encoder.key/.value
  decoder_with_past_model.onnx  encoder_attention_mask, input_ids, past_key_values.{i}.{decoder,encoder}.{key,value}
                                -> logits, present.{i}.decoder.key/.value
Cache tensors are [batch, heads, length, head_dim]. The cross-attention (encoder) cache is made once
by decoder_model.onnx from the encoder's output and fed back unchanged at every later step.

transformers 5 removed the text2text-generation, summarization and translation pipelines. The
goldens therefore call `generate()` exactly as those pipelines did (transformers 4.x, and Optimum's
compatibility pipelines for 5.x): the task prefix (config.prefix, or task_specific_params[task].prefix)
before each text, no truncation, padding only for a batch, token_type_ids dropped, the pipeline's
generation defaults (max_new_tokens=256, num_beams=4) under the model's generation_config, and the
output decoded with skip_special_tokens=True and clean_up_tokenization_spaces=False.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from . import onnx_export, texts
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .text_fixtures import compact_raw, tokenization_cases
from .tokenizer_kit import save as save_tokenizer

# The generation defaults of the removed pipelines, applied under the model's generation_config.
PIPELINE_DEFAULTS = {"max_new_tokens": 256, "num_beams": 4}
MAX_NEW_TOKENS = 16

INPUTS = [
    texts.SHORT,
    "The quick brown fox jumps over the lazy dog near Kraków.",
    "Click here to claim your FREE prize before Friday!",
    texts.UNICODE,
]


class Fixture(NamedTuple):
    name: str
    family: str  # "t5" | "bart"
    seed: int
    # The pipeline tasks whose goldens the folder carries, with the Python task name of each.
    tasks: tuple[tuple[str, str], ...]


FIXTURE_LIST = [
    Fixture("t5-text2text", "t5", 301, (("text2text-generation", "text2text-generation"),
                                         ("translation", "translation_en_to_de"),
                                         ("summarization", "summarization"))),
    Fixture("bart-summarization", "bart", 302, (("summarization", "summarization"),
                                                ("text2text-generation", "text2text-generation"))),
]


def _config(fixture: Fixture, tokenizer):
    if fixture.family == "t5":
        from transformers import T5Config

        return T5Config(
            vocab_size=len(tokenizer),
            d_model=32,
            d_kv=8,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            relative_attention_num_buckets=8,
            relative_attention_max_distance=32,
            dropout_rate=0.0,
            # Larger random weights give varied outputs where the default init repeats one token;
            # much larger and the logits (~1e3) leave 1e-4 parity.
            initializer_factor=1.5,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            decoder_start_token_id=tokenizer.pad_token_id,
            # As in t5-small: the task prefixes the pipelines put before the text.
            task_specific_params={
                "summarization": {"prefix": "summarize: "},
                "translation_en_to_de": {"prefix": "translate English to German: "},
            },
        )
    from transformers import BartConfig

    return BartConfig(
        vocab_size=len(tokenizer),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=128,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        init_std=0.2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        # As in bart-large-cnn: generation starts from </s>, then <s> is forced as the first token.
        decoder_start_token_id=tokenizer.eos_token_id,
        forced_bos_token_id=tokenizer.bos_token_id,
        forced_eos_token_id=tokenizer.eos_token_id,
    )


def _model_class(fixture: Fixture):
    from transformers import BartForConditionalGeneration, T5ForConditionalGeneration

    return T5ForConditionalGeneration if fixture.family == "t5" else BartForConditionalGeneration


def _dims(config) -> tuple[int, int, int]:
    """(decoder layers, heads, head_dim) of the cache."""
    if config.model_type == "t5":
        return config.num_decoder_layers, config.num_heads, config.d_kv
    return config.decoder_layers, config.decoder_attention_heads, config.d_model // config.decoder_attention_heads


def _past_names(layers: int, prefix: str, kinds=("decoder", "encoder")) -> list[str]:
    return [f"{prefix}.{i}.{part}.{kv}" for i in range(layers) for part in kinds for kv in ("key", "value")]


class Encoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.encoder = model.get_encoder()

    def forward(self, input_ids, attention_mask):
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _flat(cache, with_cross: bool) -> list[torch.Tensor]:
    flat = []
    for self_layer, cross_layer in zip(cache.self_attention_cache.layers, cache.cross_attention_cache.layers):
        flat += [self_layer.keys, self_layer.values]
        if with_cross:
            flat += [cross_layer.keys, cross_layer.values]
    return flat


class Decoder(torch.nn.Module):
    """The first decoder step: computes both caches, the cross-attention one from the encoder output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, encoder_attention_mask, input_ids, encoder_hidden_states):
        out = self.model(
            attention_mask=encoder_attention_mask,
            decoder_input_ids=input_ids,
            encoder_outputs=(encoder_hidden_states,),
            use_cache=True,
        )
        return (out.logits, *_flat(out.past_key_values, with_cross=True))


class DecoderWithPast(torch.nn.Module):
    """Every later step: the cross-attention cache is read, never recomputed, so the encoder's
    output is not an input (a zero-length stand-in satisfies the model's signature)."""

    def __init__(self, model, layers: int):
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(self, encoder_attention_mask, input_ids, *past):
        from transformers import DynamicCache, EncoderDecoderCache

        self_cache = DynamicCache(ddp_cache_data=[(past[4 * i], past[4 * i + 1]) for i in range(self.layers)])
        cross_cache = DynamicCache(ddp_cache_data=[(past[4 * i + 2], past[4 * i + 3]) for i in range(self.layers)])
        stand_in = torch.zeros(input_ids.shape[0], encoder_attention_mask.shape[1], self.model.config.d_model)
        out = self.model(
            attention_mask=encoder_attention_mask,
            decoder_input_ids=input_ids,
            encoder_outputs=(stand_in,),
            past_key_values=EncoderDecoderCache(self_cache, cross_cache),
            use_cache=True,
        )
        return (out.logits, *_flat(out.past_key_values, with_cross=False))


def _export(wrapper, feed: dict[str, np.ndarray], output_names, dynamic, path: Path) -> None:
    import onnx

    with torch.no_grad():
        torch.onnx.export(
            wrapper.eval(),
            tuple(torch.from_numpy(v) for v in feed.values()),
            str(path),
            input_names=list(feed.keys()),
            output_names=output_names,
            dynamic_axes=dynamic,
            opset_version=onnx_export.OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    model.doc_string = ""
    onnx.save_model(model, str(path), save_as_external_data=False)


def _run(wrapper, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = wrapper(*[torch.from_numpy(v) for v in feed.values()])
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


class Exported(NamedTuple):
    encoder: Encoder
    decoder: Decoder
    with_past: DecoderWithPast
    parity: dict[str, Any]


def export_all(model, tok, out_dir: Path) -> Exported:
    """Writes the three graphs, traced on a right-padded batch of two, and checks each against torch."""
    layers, _, _ = _dims(model.config)
    start = model.config.decoder_start_token_id
    enc = tok(["Hello there", "The meeting is moved to Thursday because"], padding=True, return_tensors="np")
    enc_feed = {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64)}
    encoder, decoder, with_past = Encoder(model).eval(), Decoder(model).eval(), DecoderWithPast(model, layers).eval()
    _export(encoder, enc_feed, ["last_hidden_state"],
            {"input_ids": {0: "batch_size", 1: "encoder_sequence_length"},
             "attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
             "last_hidden_state": {0: "batch_size", 1: "encoder_sequence_length"}},
            out_dir / "encoder_model.onnx")
    hidden = _run(encoder, enc_feed)[0]
    # Two decoder tokens on the first step, so the graph keeps the decoder length symbolic.
    first = {"encoder_attention_mask": enc_feed["attention_mask"],
             "input_ids": np.array([[start, 5], [start, 6]], np.int64),
             "encoder_hidden_states": hidden}
    present_all = _past_names(layers, "present")
    present_self = _past_names(layers, "present", ("decoder",))
    past_all = _past_names(layers, "past_key_values")
    dynamic = {"encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
               "input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
               "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length"},
               "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
    for name in present_all:
        axis = "encoder_sequence_length" if ".encoder." in name else "decoder_sequence_length"
        dynamic[name] = {0: "batch_size", 2: axis}
    _export(decoder, first, ["logits", *present_all], dynamic, out_dir / "decoder_model.onnx")
    outs = _run(decoder, first)
    step = {"encoder_attention_mask": first["encoder_attention_mask"],
            "input_ids": outs[0][:, -1:, :].argmax(-1).astype(np.int64),
            **dict(zip(past_all, outs[1:]))}
    dynamic = {"encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
               "input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
               "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
    for name in past_all:
        axis = "encoder_sequence_length" if ".encoder." in name else "past_decoder_sequence_length"
        dynamic[name] = {0: "batch_size", 2: axis}
    for name in present_self:
        dynamic[name] = {0: "batch_size", 2: "past_decoder_sequence_length + 1"}
    _export(with_past, step, ["logits", *present_self], dynamic, out_dir / "decoder_with_past_model.onnx")

    def named(wrapper, names):
        return lambda feed: dict(zip(names, _run(wrapper, feed)))

    single = tok([texts.SHORT], return_tensors="np")
    single_feed = {"input_ids": single["input_ids"].astype(np.int64),
                   "attention_mask": single["attention_mask"].astype(np.int64)}
    parity = {
        "encoder_model.onnx": onnx_export.check_parity(
            out_dir / "encoder_model.onnx", named(encoder, ["last_hidden_state"]), [enc_feed, single_feed]),
        "decoder_model.onnx": onnx_export.check_parity(
            out_dir / "decoder_model.onnx", named(decoder, ["logits", *present_all]), [first]),
        "decoder_with_past_model.onnx": onnx_export.check_parity(
            out_dir / "decoder_with_past_model.onnx", named(with_past, ["logits", *present_self]), [step]),
    }
    parity["max_abs_diff"] = max(p["max_abs_diff"] for p in parity.values())
    return Exported(encoder, decoder, with_past, parity)


def _task_settings(model, python_task: str) -> tuple[str, dict[str, Any]]:
    """The prefix and generation parameters a pipeline for `python_task` starts from, as
    transformers 4.x's Pipeline read them from config.task_specific_params."""
    prefix = getattr(model.config, "prefix", None) or ""
    params = dict((getattr(model.config, "task_specific_params", None) or {}).get(python_task, {}))
    prefix = params.pop("prefix", prefix)
    return prefix, params


def _generate_kwargs(model, options: dict[str, Any], task_params: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's defaults where neither the call nor the model's generation_config sets them."""
    set_params = {**model.generation_config.to_diff_dict(), **task_params, **options}
    added = {k: v for k, v in PIPELINE_DEFAULTS.items()
             if k not in set_params and not (k == "max_new_tokens" and "max_length" in set_params)}
    return {**task_params, **added, **options}


def pipeline_call(model, tok, python_task: str, inputs: str | list[str], options: dict[str, Any]) -> dict[str, Any]:
    """What `pipeline(python_task)(inputs, **options)` returned before transformers 5; a list of
    inputs runs one input at a time, as the pipeline does without a batch_size."""
    prefix, task_params = _task_settings(model, python_task)
    return_name = {"text2text-generation": "generated", "summarization": "summary"}.get(python_task, "translation")
    outputs = []
    for text in inputs if isinstance(inputs, list) else [inputs]:
        enc = tok(prefix + text, padding=False, truncation=False, return_tensors="pt")
        enc.pop("token_type_ids", None)
        with torch.no_grad():
            ids = model.generate(**enc, **_generate_kwargs(model, options, task_params))
        outputs.append({f"{return_name}_text": tok.decode(ids[0], skip_special_tokens=True,
                                                           clean_up_tokenization_spaces=False)})
    return {"output": outputs if isinstance(inputs, list) else outputs, "python_task": python_task}


def _pipeline_cases(model, tok, fixture: Fixture) -> list[dict[str, Any]]:
    cases = []
    greedy = {"do_sample": False, "num_beams": 1, "max_new_tokens": MAX_NEW_TOKENS}
    beams = {"num_beams": 3, "max_new_tokens": MAX_NEW_TOKENS}
    for task, python_task in fixture.tasks:
        specs = [("greedy", INPUTS, greedy), ("beam_search", INPUTS[:2], beams)]
        if task == fixture.tasks[0][0]:
            specs += [
                ("beam_search_length_penalty", INPUTS[:2], {**beams, "length_penalty": 2.0, "early_stopping": True}),
                ("beam_search_never_stop_early", INPUTS[2:3], {**beams, "early_stopping": "never", "length_penalty": 0.5}),
                ("repetition_penalty", INPUTS[:1], {**greedy, "repetition_penalty": 1.5}),
                ("pipeline_defaults", INPUTS[:1], {"max_new_tokens": MAX_NEW_TOKENS}),
            ]
        for name, inputs, options in specs:
            result = pipeline_call(model, tok, python_task, list(inputs), options)
            cases.append({"name": f"{task}:{name}", "task": task, "python_task": python_task,
                          "call": {"inputs": list(inputs), "options": options}, "output": result["output"]})
    return cases


def _with_generation_config(model, keys: dict[str, Any], run):
    """Runs `run()` with `keys` in the model's generation_config, as a generation_config.json that
    sets them would; the config is restored after."""
    saved = {k: getattr(model.generation_config, k, None) for k in keys}
    for k, v in keys.items():
        setattr(model.generation_config, k, v)
    try:
        return run()
    finally:
        for k, v in saved.items():
            setattr(model.generation_config, k, v)


def _greedy_ids(model, tok, python_task: str, text: str) -> list[int]:
    prefix, _ = _task_settings(model, python_task)
    enc = tok(prefix + text, return_tensors="pt")
    enc.pop("token_type_ids", None)
    with torch.no_grad():
        ids = model.generate(**enc, do_sample=False, num_beams=1, max_new_tokens=MAX_NEW_TOKENS)
    return ids[0].tolist()


def processor_cases(model, tok, fixture: Fixture) -> list[dict[str, Any]]:
    """generate()'s logits processors that checkpoints set (bart-large-cnn's generation_config has
    no_repeat_ngram_size 3, min_length, length_penalty 2 and num_beams 4), on the fixture's first
    task: as options, and as generation_config.json keys (`call.generation_config`, which the
    parity test writes into a copy of the folder). Random weights repeat themselves a lot, so each
    ban changes the output; `differs_from_unbanned` records whether it did (the random T5 never
    copies an input token, so encoder_no_repeat_ngram_size changes only BART's)."""
    task, python_task = fixture.tasks[0]
    greedy = {"do_sample": False, "num_beams": 1, "max_new_tokens": MAX_NEW_TOKENS}
    beams = {"num_beams": 3, "max_new_tokens": MAX_NEW_TOKENS}
    special = {model.config.decoder_start_token_id, model.generation_config.forced_bos_token_id,
               *tok.all_special_ids}
    free = [t for t in _greedy_ids(model, tok, python_task, INPUTS[0])[1:] if t not in special]
    # Bans that bite: the output's commonest token, a pair it generates, another token, its first.
    common = max(set(free), key=lambda t: (free.count(t), -t))
    pair = next([a, b] for a, b in zip(free, free[1:]) if common not in (a, b))
    other = next(t for t in free if t != common and t not in pair)
    bans = {"bad_words_ids": [[common], pair], "suppress_tokens": [other], "begin_suppress_tokens": [free[0]]}
    cnn = {"no_repeat_ngram_size": 3, "min_length": 8, "length_penalty": 2.0, "num_beams": 4, "early_stopping": True}
    specs = [
        ("no_repeat_ngram_greedy", INPUTS, {**greedy, "no_repeat_ngram_size": 2}, {}, greedy),
        ("no_repeat_ngram_beam", INPUTS[:2], {**beams, "no_repeat_ngram_size": 3}, {}, beams),
        ("generation_config_cnn_style", INPUTS[:2], {"max_new_tokens": MAX_NEW_TOKENS}, cnn,
         {"max_new_tokens": MAX_NEW_TOKENS}),
        ("bad_and_suppressed_tokens_greedy", INPUTS, greedy, bans, greedy),
        ("bans_beam", INPUTS[:2], beams, {**bans, "no_repeat_ngram_size": 2}, beams),
        # Size 1: no token of the input; a random model seldom copies a whole pair of them.
        ("encoder_no_repeat_ngram_greedy", INPUTS, greedy, {"encoder_no_repeat_ngram_size": 1}, greedy),
        ("encoder_no_repeat_ngram_beam", INPUTS[:2], beams, {"encoder_no_repeat_ngram_size": 1}, beams),
    ]
    cases = []
    for name, inputs, options, config, unbanned in specs:
        result = _with_generation_config(
            model, config, lambda: pipeline_call(model, tok, python_task, list(inputs), options))
        plain = pipeline_call(model, tok, python_task, list(inputs), unbanned)
        call = {"inputs": list(inputs), "options": options}
        if config:
            call["generation_config"] = config
        cases.append({"name": f"{task}:{name}", "task": task, "python_task": python_task, "call": call,
                      "output": result["output"], "differs_from_unbanned": result["output"] != plain["output"]})
    return cases


def _generation_cases(model, tok) -> list[dict[str, Any]]:
    """Token ids of generate() alone and for a right-padded batch (the encoder pads on the right)."""
    cases = []
    options = {"do_sample": False, "num_beams": 1, "max_new_tokens": MAX_NEW_TOKENS}
    for text in INPUTS:
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**enc, **options)
        cases.append({"name": f"greedy:{text}", "inputs": [text], "options": options,
                      "input_ids": enc["input_ids"].tolist(), "output_ids": out.tolist()})
    enc = tok(INPUTS, padding=True, return_tensors="pt")
    for name, opts in (("greedy_batch", options), ("beam_batch", {"num_beams": 3, "max_new_tokens": MAX_NEW_TOKENS})):
        with torch.no_grad():
            out = model.generate(**enc, **opts)
        cases.append({"name": name, "inputs": INPUTS, "options": opts,
                      "input_ids": enc["input_ids"].tolist(), "attention_mask": enc["attention_mask"].tolist(),
                      "output_ids": out.tolist()})
    return cases


def _step_cases(exported: Exported, model, tok) -> list[dict[str, Any]]:
    """The first decoder logits and those of the next greedy steps, fed as ONNX is fed."""
    layers, _, _ = _dims(model.config)
    past_all = _past_names(layers, "past_key_values")
    enc = tok([texts.SHORT, texts.UNICODE], padding=True, return_tensors="np")
    mask = enc["attention_mask"].astype(np.int64)
    hidden = _run(exported.encoder, {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": mask})[0]
    ids = np.full((2, 1), model.config.decoder_start_token_id, np.int64)
    outs = _run(exported.decoder, {"encoder_attention_mask": mask, "input_ids": ids, "encoder_hidden_states": hidden})
    cross = [t for i, t in enumerate(outs[1:]) if (i // 2) % 2 == 1]
    records = []
    for step in range(4):
        logits = outs[0][:, -1, :]
        records.append({"step": step, "input_ids": ids, "last_logits": compact_raw({"logits": logits})["logits"]})
        ids = logits.argmax(-1).reshape(-1, 1).astype(np.int64)
        self_past = [t for i, t in enumerate(outs[1:]) if (i // 2) % 2 == 0] if step == 0 else outs[1:]
        past = []
        for layer in range(layers):
            past += [self_past[2 * layer], self_past[2 * layer + 1], cross[2 * layer], cross[2 * layer + 1]]
        outs = _run(exported.with_past, {"encoder_attention_mask": mask, "input_ids": ids, **dict(zip(past_all, past))})
    return [{"name": "steps:2", "inputs": [texts.SHORT, texts.UNICODE], "encoder_attention_mask": mask,
             "encoder_hidden_states": compact_raw({"h": hidden[:, :2, :]})["h"], "steps": records}]


def _greedy(model, tokenizer, text: str) -> list[int]:
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        return model.generate(**enc, do_sample=False, num_beams=1, max_new_tokens=MAX_NEW_TOKENS)[0].tolist()


def _end_somewhere(model, tokenizer) -> float:
    """A random head almost never picks </s> among ~1000 tokens, so no golden would end on it
    before max_new_tokens. BART adds final_logits_bias to its logits: the smallest </s> bias (in
    steps of 0.25) with which some input's greedy output ends mid-way, and another's does not,
    makes the goldens cover both, as a trained model's would. The bias is recorded in the goldens."""
    eos = tokenizer.eos_token_id
    for step in range(1, 200):
        bias = step * 0.25
        with torch.no_grad():
            model.final_logits_bias[0, eos] = bias
        ends = [len(_greedy(model, tokenizer, text)) for text in INPUTS]
        if min(ends) < MAX_NEW_TOKENS + 1 and max(ends) == MAX_NEW_TOKENS + 1:
            return bias
    raise RuntimeError("no </s> bias makes one golden input end early; change the fixture's seed")


def _tokenizer(fixture: Fixture, training: list[str]):
    from . import tokenizer_kit

    return tokenizer_kit.t5_unigram(training) if fixture.family == "t5" else tokenizer_kit.bart_bpe(training)


def build(fixture: Fixture, training: list[str]) -> dict[str, Any]:
    from transformers import AutoTokenizer

    out_dir = FIXTURES / fixture.name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    tokenizer = _tokenizer(fixture, training)
    seed_everything(fixture.seed)
    config = _config(fixture, tokenizer)
    config._attn_implementation = "eager"
    model = _model_class(fixture)(config).eval()
    if fixture.family == "bart":
        # transformers 5 no longer copies forced_bos_token_id from the config into generation_config.
        model.generation_config.forced_bos_token_id = tokenizer.bos_token_id
    eos_bias = _end_somewhere(model, tokenizer) if fixture.family == "bart" else None
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        save_tokenizer(tokenizer, source)
        tok = AutoTokenizer.from_pretrained(source)
        loaded = _model_class(fixture).from_pretrained(source, attn_implementation="eager").eval()
        for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                     "special_tokens_map.json"):
            if (source / name).exists():
                shutil.copy(source / name, out_dir / name)
        exported = export_all(loaded, tok, out_dir)
        layers, heads, head_dim = _dims(loaded.config)
        goldens = {
            "schema": GOLDENS_SCHEMA,
            "model": fixture.name,
            "task": fixture.tasks[0][0],
            "reference": {
                "runtime": "torch",
                "implementation": "transformers generate() called as the text2text-generation / summarization / "
                "translation pipelines did (removed in transformers 5; see kit/seq2seq.py)",
            },
            "seed": fixture.seed,
            "eos_final_logits_bias": eos_bias,
            "versions": tool_versions(),
            "onnx": {
                "files": ["encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx"],
                "kv_cache": {"num_layers": layers, "num_heads": heads, "head_dim": head_dim,
                             "layout": "[batch, num_heads, length, head_dim]"},
                "parity": exported.parity,
            },
            "tokenization": tokenization_cases(tok),
            "generation": _generation_cases(loaded, tok),
            "steps": _step_cases(exported, loaded, tok),
            "pipeline": _pipeline_cases(loaded, tok, fixture) + processor_cases(loaded, tok, fixture),
        }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": fixture.name, "parity": exported.parity}
