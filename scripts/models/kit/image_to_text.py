"""Tiny VisionEncoderDecoder (ViT encoder + GPT-2 decoder with cross-attention) in Optimum's
vision-encoder-decoder layout, with image-to-text goldens.

Files (Optimum's names, as `optimum-cli export onnx --task image-to-text-with-past` writes them):
  encoder_model.onnx            pixel_values -> last_hidden_state
  decoder_model.onnx            input_ids, encoder_hidden_states
                                -> logits, present.{i}.decoder.key/.value, present.{i}.encoder.key/.value
  decoder_with_past_model.onnx  input_ids, past_key_values.{i}.{decoder,encoder}.{key,value}
                                -> logits, present.{i}.decoder.key/.value

transformers 5 removed the image-to-text pipeline (`pipeline("image-to-text")` now builds an
image-text-to-text pipeline, which takes chat-template processors, not a VisionEncoderDecoder). The
goldens therefore call `generate()` as transformers 4.x's ImageToTextPipeline did for a
vision-encoder-decoder model: the image processor on one image at a time, generate(pixel_values)
with the pipeline's default max_new_tokens=256 under the model's generation_config (no num_beams
default, so greedy), and the output decoded with skip_special_tokens=True. That pipeline refused a
`prompt` for this model type ("does not support conditional text generation"), so no case has one.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import image_fixtures, onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .seq2seq import _export, _past_names, _run

NAME = "vit-gpt2-image-to-text"
SEED = 501
MAX_NEW_TOKENS = 12
PIPELINE_DEFAULTS = {"max_new_tokens": 256}
LAYERS = 2


class Encoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model.encoder(pixel_values=pixel_values).last_hidden_state


def _flat(cache, with_cross: bool) -> list[torch.Tensor]:
    flat = []
    for self_layer, cross_layer in zip(cache.self_attention_cache.layers, cache.cross_attention_cache.layers):
        flat += [self_layer.keys, self_layer.values]
        if with_cross:
            flat += [cross_layer.keys, cross_layer.values]
    return flat


class Decoder(torch.nn.Module):
    """The first step: both caches, the cross-attention one from the encoder's output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, encoder_hidden_states):
        out = self.model(decoder_input_ids=input_ids, encoder_outputs=(encoder_hidden_states,), use_cache=True)
        return (out.logits, *_flat(out.past_key_values, with_cross=True))


class DecoderWithPast(torch.nn.Module):
    """Every later step reads the cross-attention cache; the encoder output is a zero stand-in."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, *past):
        from transformers import DynamicCache, EncoderDecoderCache

        self_cache = DynamicCache(ddp_cache_data=[(past[4 * i], past[4 * i + 1]) for i in range(LAYERS)])
        cross_cache = DynamicCache(ddp_cache_data=[(past[4 * i + 2], past[4 * i + 3]) for i in range(LAYERS)])
        stand_in = torch.zeros(input_ids.shape[0], past[2].shape[2], self.model.config.encoder.hidden_size)
        out = self.model(
            decoder_input_ids=input_ids,
            encoder_outputs=(stand_in,),
            past_key_values=EncoderDecoderCache(self_cache, cross_cache),
            use_cache=True,
        )
        return (out.logits, *_flat(out.past_key_values, with_cross=False))


def _model(tokenizer):
    from transformers import GPT2Config, ViTConfig, VisionEncoderDecoderConfig, VisionEncoderDecoderModel

    encoder = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, initializer_range=0.2)
    decoder = GPT2Config(vocab_size=len(tokenizer), n_positions=512, n_embd=32, n_layer=LAYERS, n_head=4,
                         n_inner=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, initializer_range=0.2,
                         add_cross_attention=True, is_decoder=True, tie_word_embeddings=False,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    # As nlpconnect/vit-gpt2-image-captioning: generation starts from the decoder's BOS.
    config.decoder_start_token_id = tokenizer.bos_token_id
    config.pad_token_id = tokenizer.pad_token_id
    config.eos_token_id = tokenizer.eos_token_id
    model = VisionEncoderDecoderModel(config=config).eval()
    model.generation_config.decoder_start_token_id = tokenizer.bos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def _processor():
    from transformers import ViTImageProcessor

    return ViTImageProcessor(do_resize=True, size={"height": 32, "width": 32}, resample=2, do_rescale=True,
                             rescale_factor=1 / 255, do_normalize=True, image_mean=[0.5, 0.5, 0.5],
                             image_std=[0.5, 0.5, 0.5])


def _greedy(model, pixel_values: torch.Tensor) -> list[list[int]]:
    with torch.no_grad():
        return model.generate(pixel_values=pixel_values, do_sample=False, num_beams=1,
                              max_new_tokens=MAX_NEW_TOKENS).tolist()


def _end_somewhere(model, pixel_values: torch.Tensor, eos: int) -> float:
    """A random head almost never picks EOS, so no golden would end before the limit. The decoder's
    head (untied from its embeddings) reads hidden unit 0 only for EOS, and ln_f sets that unit to a
    constant: a bias on the EOS logit. The smallest bias (in steps of 0.25) with which some image's
    greedy output ends mid-way, and another's does not, makes the goldens cover both, as a trained
    model's would. Weights saved by save_pretrained, so the folder carries it."""
    head = model.decoder.lm_head
    norm = model.decoder.transformer.ln_f
    with torch.no_grad():
        norm.weight[0] = 0.0
        head.weight[:, 0] = 0.0
        head.weight[eos, 0] = 1.0
    for step in range(1, 400):
        with torch.no_grad():
            norm.bias[0] = step * 0.25
        lengths = []
        for ids in _greedy(model, pixel_values):
            tail = ids[1:]
            lengths.append(tail.index(eos) + 1 if eos in tail else len(tail))
        if min(lengths) < MAX_NEW_TOKENS and max(lengths) == MAX_NEW_TOKENS:
            return step * 0.25
    raise RuntimeError("no EOS bias makes one image end early; change the fixture's seed")


def _pipeline_call(model, processor, tok, images: list[Any], options: dict[str, Any]) -> list[list[dict[str, str]]]:
    """What transformers 4.x's pipeline("image-to-text")(images, **options) returned: one image at a time."""
    set_params = {**model.generation_config.to_diff_dict(), **options}
    added = {k: v for k, v in PIPELINE_DEFAULTS.items()
             if k not in set_params and not (k == "max_new_tokens" and "max_length" in set_params)}
    outputs = []
    for image in images:
        pixel_values = processor(images=image, return_tensors="pt")["pixel_values"]
        with torch.no_grad():
            ids = model.generate(pixel_values=pixel_values, **added, **options)
        outputs.append([{"generated_text": tok.decode(ids[0], skip_special_tokens=True)}])
    return outputs


def build(training: list[str]) -> dict[str, Any]:
    from transformers import AutoTokenizer, VisionEncoderDecoderModel, ViTImageProcessor

    from . import tokenizer_kit

    out_dir = FIXTURES / NAME
    paths = image_fixtures.fresh_folder(out_dir)
    tokenizer = tokenizer_kit.bart_bpe(training)
    seed_everything(SEED)
    model = _model(tokenizer)
    processor = _processor()
    images = image_fixtures.rgb(paths)
    batch = processor(images=images, return_tensors="pt")["pixel_values"]
    eos_bias = _end_somewhere(model, batch, tokenizer.eos_token_id)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        image_fixtures.save_source(model, processor, source, out_dir)
        tokenizer_kit.save(tokenizer, source)
        for name in ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if (source / name).exists():
                shutil.copy(source / name, out_dir / name)
        tok = AutoTokenizer.from_pretrained(source)
        loaded = VisionEncoderDecoderModel.from_pretrained(source, attn_implementation="eager").eval()
        loaded_processor = ViTImageProcessor.from_pretrained(source)
        parity = _export_all(loaded, batch.numpy(), out_dir)

        pixel = loaded_processor(images=images, return_tensors="pt")["pixel_values"]
        rel = [f"images/{p.name}" for p in paths]
        greedy = {"do_sample": False, "num_beams": 1, "max_new_tokens": MAX_NEW_TOKENS}
        beams = {"num_beams": 3, "max_new_tokens": MAX_NEW_TOKENS}
        cases = []
        for name, picks, options in [
            ("greedy", list(range(len(paths))), greedy),
            ("beam_search", [0, 1, 2], beams),
            ("beam_search_length_penalty", [3, 4], {**beams, "length_penalty": 2.0, "early_stopping": True}),
            ("repetition_penalty", [1], {**greedy, "repetition_penalty": 1.5}),
            ("pipeline_defaults", [0], {}),
        ]:
            output = _pipeline_call(loaded, loaded_processor, tok, [images[i] for i in picks], options)
            cases.append({"name": name, "task": "image-to-text",
                          "call": {"inputs": [rel[i] for i in picks], "options": options}, "output": output})
        generation = []
        for name, opts in (("greedy_batch", greedy), ("beam_batch", beams)):
            with torch.no_grad():
                out = loaded.generate(pixel_values=pixel, **opts)
            generation.append({"name": name, "inputs": rel, "options": opts, "output_ids": out.tolist()})

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "image-to-text",
        "reference": {
            "runtime": "torch",
            "implementation": "transformers generate() called as the image-to-text pipeline did for a "
            "vision-encoder-decoder model (removed in transformers 5; see kit/image_to_text.py)",
        },
        "seed": SEED,
        "eos_head_bias": eos_bias,
        "versions": tool_versions(),
        "onnx": {"files": ["encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx"],
                 "parity": parity},
        "preprocessing": image_fixtures.preprocessing_goldens(loaded_processor, paths),
        "generation": generation,
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}


def _export_all(model, pixel_values: np.ndarray, out_dir: Path) -> dict[str, Any]:
    encoder, decoder, with_past = Encoder(model).eval(), Decoder(model).eval(), DecoderWithPast(model).eval()
    enc_feed = {"pixel_values": pixel_values[:2]}
    _export(encoder, enc_feed, ["last_hidden_state"],
            {"pixel_values": {0: "batch_size"}, "last_hidden_state": {0: "batch_size", 1: "encoder_sequence_length"}},
            out_dir / "encoder_model.onnx")
    hidden = _run(encoder, enc_feed)[0]
    start = model.config.decoder_start_token_id
    first = {"input_ids": np.array([[start, 5], [start, 6]], np.int64), "encoder_hidden_states": hidden}
    present_all = _past_names(LAYERS, "present")
    present_self = _past_names(LAYERS, "present", ("decoder",))
    past_all = _past_names(LAYERS, "past_key_values")
    dynamic = {"input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
               "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length"},
               "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
    for name in present_all:
        axis = "encoder_sequence_length" if ".encoder." in name else "decoder_sequence_length"
        dynamic[name] = {0: "batch_size", 2: axis}
    _export(decoder, first, ["logits", *present_all], dynamic, out_dir / "decoder_model.onnx")
    outs = _run(decoder, first)
    step = {"input_ids": outs[0][:, -1:, :].argmax(-1).astype(np.int64), **dict(zip(past_all, outs[1:]))}
    dynamic = {"input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
               "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
    for name in past_all:
        axis = "encoder_sequence_length" if ".encoder." in name else "past_decoder_sequence_length"
        dynamic[name] = {0: "batch_size", 2: axis}
    for name in present_self:
        dynamic[name] = {0: "batch_size", 2: "past_decoder_sequence_length + 1"}
    _export(with_past, step, ["logits", *present_self], dynamic, out_dir / "decoder_with_past_model.onnx")

    def named(wrapper, names):
        return lambda feed: dict(zip(names, _run(wrapper, feed)))

    parity = {
        "encoder_model.onnx": onnx_export.check_parity(
            out_dir / "encoder_model.onnx", named(encoder, ["last_hidden_state"]),
            [enc_feed, {"pixel_values": pixel_values[2:3]}]),
        "decoder_model.onnx": onnx_export.check_parity(
            out_dir / "decoder_model.onnx", named(decoder, ["logits", *present_all]), [first]),
        "decoder_with_past_model.onnx": onnx_export.check_parity(
            out_dir / "decoder_with_past_model.onnx", named(with_past, ["logits", *present_self]), [step]),
    }
    parity["max_abs_diff"] = max(p["max_abs_diff"] for p in parity.values())
    return parity
