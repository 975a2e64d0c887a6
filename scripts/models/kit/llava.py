"""Tiny Llava (CLIP vision tower + Llama text model, random weights) with goldens from the
image-text-to-text pipeline.

Exported as the three graphs transformers.js loads for a vision-language model:
- vision_encoder.onnx: pixel_values -> image_features (the vision tower's chosen hidden layer
  without its CLS position, through the multimodal projector), [batch, image tokens, hidden];
- embed_tokens.onnx: input_ids -> inputs_embeds;
- decoder_model_merged.onnx: inputs_embeds, attention_mask, position_ids and the KV cache in
  causal_lm.py's layout (an empty past on the first step) -> last-position logits and presents.
The runtime embeds the prompt, puts the image features on the `<image>` positions in order (Python's
masked_scatter) and decodes as text generation does.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from . import causal_lm, image_fixtures, onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .tokenizer_kit import sentencepiece_bpe

NAME = "llava-image-text-to-text"
SEED = 419
IMAGE_TOKEN = "<image>"
IMAGE_SIZE = 32
PATCH_SIZE = 8
MAX_NEW_TOKENS = 12

# Llava-1.5's turn layout (USER: / ASSISTANT:), written for content lists of image and text parts.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] != 'system' %}{{ message['role'] | upper }}{{ ': ' }}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<image>\\n' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


class VisionEncoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        config = self.model.config
        out = self.model.model.vision_tower(pixel_values, output_hidden_states=True)
        hidden = out.hidden_states[config.vision_feature_layer]
        if config.vision_feature_select_strategy == "default":
            hidden = hidden[:, 1:]
        return SimpleNamespace(image_features=self.model.model.multi_modal_projector(hidden))


class EmbedTokens(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.embed = model.get_input_embeddings()

    def forward(self, input_ids):
        return SimpleNamespace(inputs_embeds=self.embed(input_ids))


class DecoderWithPast(torch.nn.Module):
    """causal_lm.WithPast with inputs_embeds in place of input_ids; `.model` is the Llama text model
    so causal_lm._export can trace it through grouped attention."""

    def __init__(self, model, layers: int):
        super().__init__()
        self.model = model.model.language_model
        self.lm_head = model.lm_head
        self.layers = layers

    def forward(self, inputs_embeds, attention_mask, position_ids, *past):
        from transformers import DynamicCache

        cache = DynamicCache(ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(self.layers)])
        out = self.model(
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
        )
        flat = []
        for layer in out.past_key_values.layers:
            flat += [layer.keys, layer.values]
        return (self.lm_head(out.last_hidden_state[:, -1:, :]), *flat)


def _tokenizer(training: list[str]):
    tok = sentencepiece_bpe(training, vocab_size=1000)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>", IMAGE_TOKEN]})
    tok.chat_template = None
    return tok


def _model(tok):
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    vision = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        projection_dim=32,
        initializer_range=0.2,
    )
    text = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=0.2,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
        projector_hidden_act="gelu",
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    model = LlavaForConditionalGeneration(config).eval()
    with torch.no_grad():
        # As in causal_lm.py: a random head picking EOS would end goldens early.
        model.lm_head.weight[tok.eos_token_id].zero_()
        model.lm_head.weight[tok.eos_token_id] -= 1.0
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.bos_token_id = tok.bos_token_id
    return model


def build(training: list[str]) -> dict[str, Any]:
    from transformers import (
        AutoProcessor,
        CLIPImageProcessor,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        pipeline,
    )
    from transformers.image_utils import load_image

    out_dir = FIXTURES / NAME
    paths = image_fixtures.fresh_folder(out_dir)
    seed_everything(SEED)
    tok = _tokenizer(training)
    model = _model(tok)
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_center_crop=True,
        resample=3,
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    rel = image_fixtures.relative(paths)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        processor.save_pretrained(source)
        # transformers 5 nests the image processor in processor_config.json; the flat
        # preprocessor_config.json beside it is what transformers.js (and this house) reads.
        image_processor.save_pretrained(Path(tmp) / "image_processor")
        shutil.copy(Path(tmp) / "image_processor" / "preprocessor_config.json", out_dir / "preprocessor_config.json")
        for f in sorted(source.iterdir()):
            if f.suffix in (".json", ".jinja"):
                shutil.copy(f, out_dir / f.name)
        loaded = LlavaForConditionalGeneration.from_pretrained(source, attn_implementation="eager").eval()
        proc = AutoProcessor.from_pretrained(source)
        layers = loaded.config.text_config.num_hidden_layers

        def images(names: list[str]):
            return [load_image(str(out_dir / n)) for n in names]

        # Vision encoder.
        pixels = proc.image_processor(images=images(rel[:2]), return_tensors="np")["pixel_values"]
        vision = VisionEncoder(loaded).eval()
        vision_path = out_dir / "vision_encoder.onnx"
        onnx_export.export(
            vision,
            {"pixel_values": torch.from_numpy(pixels)},
            ["image_features"],
            {"pixel_values": {0: "batch_size"}, "image_features": {0: "batch_size"}},
            vision_path,
        )

        def vision_ref(feed):
            with torch.no_grad():
                return {"image_features": vision(torch.from_numpy(feed["pixel_values"])).image_features.numpy()}

        vision_parity = onnx_export.check_parity(vision_path, vision_ref, [{"pixel_values": pixels}, {"pixel_values": pixels[:1]}])

        # Token embeddings.
        embed = EmbedTokens(loaded).eval()
        embed_path = out_dir / "embed_tokens.onnx"
        ids = np.array([[1, 5, 9, 12], [1, 7, 3, 2]], np.int64)
        onnx_export.export(
            embed,
            {"input_ids": torch.from_numpy(ids)},
            ["inputs_embeds"],
            {"input_ids": {0: "batch_size", 1: "sequence_length"}, "inputs_embeds": {0: "batch_size", 1: "sequence_length"}},
            embed_path,
        )

        def embed_ref(feed):
            with torch.no_grad():
                return {"inputs_embeds": embed(torch.from_numpy(feed["input_ids"])).inputs_embeds.numpy()}

        embed_parity = onnx_export.check_parity(embed_path, embed_ref, [{"input_ids": ids}])

        # Decoder over embeddings with the KV cache.
        decoder = DecoderWithPast(loaded, layers).eval()
        past_names, present_names = causal_lm._names(layers)
        text_config = loaded.config.text_config
        head_dim = text_config.hidden_size // text_config.num_attention_heads

        def prefill_feed(names: list[str], prompts: list[str]) -> dict[str, np.ndarray]:
            proc.tokenizer.padding_side = "left"
            enc = proc(images=images(names), text=prompts, padding=True, return_tensors="pt")
            with torch.no_grad():
                embeds = loaded.model.get_input_embeddings()(enc["input_ids"])
                feats = vision(enc["pixel_values"]).image_features
                mask = (enc["input_ids"] == loaded.config.image_token_id).unsqueeze(-1).expand_as(embeds)
                embeds = embeds.masked_scatter(mask, feats)
            m = enc["attention_mask"].numpy().astype(np.int64)
            pos = np.where(m == 0, 1, np.cumsum(m, axis=1) - 1).astype(np.int64)
            feed = {"inputs_embeds": embeds.numpy(), "attention_mask": m, "position_ids": pos}
            empty = np.zeros((m.shape[0], text_config.num_key_value_heads, 0, head_dim), np.float32)
            feed.update({n: empty for n in past_names})
            return feed

        def decoder_ref(feed):
            with torch.no_grad():
                result = decoder(*[torch.from_numpy(v) for v in feed.values()])
            return dict(zip(["logits", *present_names], [t.numpy() for t in result]))

        prompts = [f"USER: {IMAGE_TOKEN}\nWhat is this?\nASSISTANT:", f"USER: {IMAGE_TOKEN}\nDescribe the colours of the picture.\nASSISTANT:"]
        prefill = prefill_feed(rel[:2], prompts)
        first = decoder_ref(prefill)
        next_ids = first["logits"][:, -1, :].argmax(-1)
        with torch.no_grad():
            next_embeds = loaded.model.get_input_embeddings()(torch.from_numpy(next_ids).reshape(-1, 1)).numpy()
        step = {
            "inputs_embeds": next_embeds,
            "attention_mask": np.concatenate([prefill["attention_mask"], np.ones((2, 1), np.int64)], axis=1),
            "position_ids": (prefill["position_ids"].max(axis=1, keepdims=True) + 1).astype(np.int64),
            **{n: first[p] for n, p in zip(past_names, present_names)},
        }
        dynamic = {
            "inputs_embeds": {0: "batch_size", 1: "sequence_length"},
            "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
            "position_ids": {0: "batch_size", 1: "sequence_length"},
            "logits": {0: "batch_size"},
            **{n: {0: "batch_size", 2: "past_sequence_length"} for n in past_names},
            **{n: {0: "batch_size", 2: "total_sequence_length"} for n in present_names},
        }
        decoder_path = out_dir / "decoder_model_merged.onnx"
        causal_lm._export(decoder, step, ["logits", *present_names], dynamic, decoder_path)
        decoder_parity = onnx_export.check_parity(decoder_path, decoder_ref, [prefill, step, prefill_feed(rel[2:3], prompts[:1])])

        pipe = pipeline("image-text-to-text", model=str(source), device="cpu")
        cases = _pipeline_cases(pipe, loaded, proc, out_dir, rel, images)
        preprocessing = image_fixtures.preprocessing_goldens(proc.image_processor, paths[:3])

    parities = [vision_parity, embed_parity, decoder_parity]
    parity = {"max_abs_diff": max(p["max_abs_diff"] for p in parities), "tolerance": parities[0]["tolerance"], "batches": sum(p["batches"] for p in parities)}
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "image-text-to-text",
        "reference": {"runtime": "torch", "implementation": "transformers image-text-to-text pipeline and generate()"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {
            "files": ["vision_encoder.onnx", "embed_tokens.onnx", "decoder_model_merged.onnx"],
            "image_token_id": loaded.config.image_token_id,
            "parity": {"vision_encoder": vision_parity, "embed_tokens": embed_parity, "decoder_model_merged": decoder_parity},
        },
        "preprocessing": preprocessing,
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}


def _pipeline_cases(pipe, model, proc, out_dir: Path, rel: list[str], images) -> list[dict[str, Any]]:
    options = {"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS}
    cases: list[dict[str, Any]] = []

    def generate(names: list[str], prompts: list[str]) -> tuple[list[list[int]], list[list[int]]]:
        """Prompt ids (padding dropped) and new ids per row, from generate() on a left-padded batch."""
        proc.tokenizer.padding_side = "left"
        enc = proc(images=images(names), text=prompts, padding=True, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**enc, **options)
        width = enc["input_ids"].shape[1]
        prompt_ids = [[i for i, m in zip(row, mask) if m] for row, mask in zip(enc["input_ids"].tolist(), enc["attention_mask"].tolist())]
        return prompt_ids, out[:, width:].tolist()

    text_inputs = [
        (rel[0], f"USER: {IMAGE_TOKEN}\nWhat is in the picture?\nASSISTANT:"),
        (rel[1], f"USER: {IMAGE_TOKEN}\nCrème brûlée 🍮 or sushi?\nASSISTANT:"),
        (rel[2], f"{IMAGE_TOKEN} Count the stripes"),
    ]
    for image, prompt in text_inputs:
        output = pipe(images=str(out_dir / image), text=prompt, return_full_text=False, **options)
        prompt_ids, new_ids = generate([image], [prompt])
        cases.append({
            "name": f"text:{Path(image).stem}",
            "task": "image-text-to-text",
            "call": {"inputs": {"image": image, "text": prompt}, "options": options},
            "prompt_ids": prompt_ids[0],
            "new_ids": new_ids[0],
            "output": output,
        })
    chats = [
        (rel[3], [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What shape is red?"}]}]),
        (rel[4], [
            {"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]},
            {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image"}, {"type": "text", "text": " is it raining?"}]},
        ]),
        # Ending in an assistant turn: the pipeline continues it (continue_final_message).
        (rel[5], [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How tall is it?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "It is"}]},
        ]),
    ]
    for image, messages in chats:
        with_image = [
            {**m, "content": [({"type": "image", "url": str(out_dir / image)} if p["type"] == "image" else p) for p in m["content"]]}
            for m in messages
        ]
        output = pipe(text=with_image, return_full_text=False, **options)
        prefill = messages[-1]["role"] == "assistant"
        template = {"add_generation_prompt": not prefill, "continue_final_message": prefill}
        rendered = proc.apply_chat_template(messages, tokenize=False, **template)
        inputs = proc.apply_chat_template(with_image, tokenize=True, return_dict=True, return_tensors="pt", **template)
        with torch.no_grad():
            out = model.generate(**inputs, **options)
        width = inputs["input_ids"].shape[1]
        cases.append({
            "name": f"chat:{Path(image).stem}",
            "task": "image-text-to-text",
            "call": {"inputs": {"image": image, "messages": messages}, "options": options},
            "rendered": rendered,
            "prompt_ids": inputs["input_ids"][0].tolist(),
            "new_ids": out[0, width:].tolist(),
            "output": output,
        })
    # A left-padded batch: every row's tokens must equal its tokens alone.
    names = [i for i, _ in text_inputs[:2]]
    prompt_ids, new_ids = generate(names, [p for _, p in text_inputs[:2]])
    cases.append({
        "name": "batch_left_padded",
        "task": "image-text-to-text",
        "call": {"inputs": [{"image": i, "text": p} for i, p in text_inputs[:2]], "options": options},
        "prompt_ids": prompt_ids,
        "new_ids": new_ids,
    })
    return cases
