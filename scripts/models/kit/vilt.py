"""Tiny ViLT visual-question-answering model with goldens from the visual-question-answering pipeline.

transformers 5 removed the visual-question-answering pipeline (its registry now points to
image-text-to-text), so the reference below is that pipeline's classification path as transformers
4.x ran it, step for step: load_image, the tokenizer on the question alone (no padding, no
truncation unless asked), the image processor on the image alone, one forward pass, sigmoid over the
answer logits and the top_k answers (top_k clamped to the number of labels, default 5).

ViLT's visual embedding samples the image patches with torch.multinomial. With every pixel valid
(one image alone is never padded) it keeps every patch, in a random order that self-attention cannot
see; the exported graph takes them in grid order instead, which is the same computation without the
random op ONNX lacks. The parity check compares that graph with the unmodified torch model.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from . import image_fixtures, onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .tokenizer_kit import MAX_LENGTH, save as save_tokenizer

NAME = "vilt-visual-question-answering"
SEED = 321
ANSWERS = ["yes", "no", "0", "1", "2", "3", "red", "blue", "green", "circle", "square", "stripes"]
INPUTS = ["input_ids", "attention_mask", "token_type_ids", "pixel_values", "pixel_mask"]


def vqa_reference(model, tokenizer, processor, image: Any, question: str, top_k: int = 5, truncation: bool = False) -> list[dict[str, Any]]:
    """transformers 4.x VisualQuestionAnsweringPipeline (classifier models), one input."""
    from transformers.image_utils import load_image

    encoded = tokenizer(question, return_tensors="pt", padding=False, truncation=truncation)
    encoded.update(processor(images=load_image(image), return_tensors="pt"))
    with torch.no_grad():
        logits = model(**encoded).logits
    top_k = min(top_k, model.config.num_labels)
    scores, ids = logits.sigmoid()[0].topk(top_k)
    return [{"score": s, "answer": model.config.id2label[i]} for s, i in zip(scores.tolist(), ids.tolist())]


def _grid_visual_embed(self, pixel_values, pixel_mask, max_image_length=200):
    """ViltEmbeddings.visual_embed for an all-valid pixel_mask, patches in grid order (export only)."""
    x = self.patch_embeddings(pixel_values)
    batch_size, num_channels, height, width = x.shape
    x_mask = nn.functional.interpolate(pixel_mask[:, None, :, :].float(), size=(height, width)).long()
    patch_dim = self.config.image_size // self.config.patch_size
    spatial_pos = self.position_embeddings[:, 1:, :].transpose(1, 2).view(1, num_channels, patch_dim, patch_dim)
    pos_embed = nn.functional.interpolate(spatial_pos, size=(height, width), mode="bilinear", align_corners=True)
    pos_embed = pos_embed.flatten(2).transpose(1, 2).expand(batch_size, -1, -1)
    x = x.flatten(2).transpose(1, 2)
    x_mask = x_mask.flatten(1)
    cls_tokens = self.cls_token.expand(batch_size, -1, -1)
    x = torch.cat((cls_tokens, x), dim=1)
    pos_embed = torch.cat((self.position_embeddings[:, 0, :][:, None, :].expand(batch_size, -1, -1), pos_embed), dim=1)
    x = self.dropout(x + pos_embed)
    x_mask = torch.cat([torch.ones(x_mask.shape[0], 1).to(x_mask), x_mask], dim=1)
    return x, x_mask, None


def _model(vocab_size: int, pad_token_id: int):
    from transformers import ViltConfig, ViltForQuestionAnswering

    config = ViltConfig(
        vocab_size=vocab_size,
        pad_token_id=pad_token_id,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=MAX_LENGTH,
        image_size=64,
        patch_size=16,
        max_image_length=-1,
        # Wide initialisation spreads the answer scores, so the top-k order is not float noise.
        initializer_range=0.2,
        id2label=dict(enumerate(ANSWERS)),
        label2id={a: i for i, a in enumerate(ANSWERS)},
    )
    return ViltForQuestionAnswering(config).eval()


def build(tokenizer) -> dict[str, Any]:
    from transformers import AutoTokenizer, ViltForQuestionAnswering, ViltImageProcessor
    from transformers.image_utils import load_image

    out_dir = FIXTURES / NAME
    paths = image_fixtures.fresh_folder(out_dir)
    seed_everything(SEED)
    model = _model(len(tokenizer), tokenizer.pad_token_id)
    # ViLT's own recipe at a tiny scale: shortest edge 64 (longer edge capped at 1333/800 of it),
    # each side floored to a multiple of 16 (the patch size), bicubic, mean/std 0.5, padded batches.
    processor = ViltImageProcessor(size={"shortest_edge": 64}, size_divisor=16, resample=3, do_pad=True)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        image_fixtures.save_source(model, processor, source, out_dir)
        save_tokenizer(tokenizer, source)
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            (out_dir / name).write_bytes((source / name).read_bytes())
        loaded = ViltForQuestionAnswering.from_pretrained(source).eval()
        loaded_tok = AutoTokenizer.from_pretrained(source)
        loaded_processor = ViltImageProcessor.from_pretrained(source)
        rel = image_fixtures.relative(paths)

        def feed(images: list[str], questions: list[str]) -> dict[str, np.ndarray]:
            text = loaded_tok(questions, padding=True, return_tensors="np")
            pixels = loaded_processor(images=[load_image(str(out_dir / r)) for r in images], return_tensors="np")
            return {**{k: text[k].astype(np.int64) for k in INPUTS[:3]}, "pixel_values": pixels["pixel_values"], "pixel_mask": pixels["pixel_mask"].astype(np.int64)}

        questions = ["What colour is the circle?", "How many stripes are there?", "Is it raining?", "Crème brûlée 🍮?"]
        feeds = [feed([r], [questions[i % len(questions)]]) for i, r in enumerate(rel)]
        # Same-size images share a run with their questions padded to the longest.
        same = [r for r, f in zip(rel, feeds) if f["pixel_values"].shape == feeds[0]["pixel_values"].shape]
        feeds.append(feed(same, [questions[i % len(questions)] for i in range(len(same))]))

        embeddings = loaded.vilt.embeddings
        embeddings.visual_embed = _grid_visual_embed.__get__(embeddings)
        onnx_path = out_dir / "model.onnx"
        axes = {
            **{k: {0: "batch_size", 1: "sequence_length"} for k in INPUTS[:3]},
            "pixel_values": {0: "batch_size", 2: "height", 3: "width"},
            "pixel_mask": {0: "batch_size", 1: "height", 2: "width"},
            "logits": {0: "batch_size"},
        }
        onnx_export.export(loaded, {k: torch.from_numpy(v) for k, v in feeds[-1].items()}, ["logits"], axes, onnx_path)
        del embeddings.visual_embed  # back to the class's own (sampling) method for every reference

        def reference(f: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                return {"logits": loaded(**{k: torch.from_numpy(v) for k, v in f.items()}).logits.numpy()}

        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        def case(name: str, image: str, question: str, options: dict[str, Any]) -> dict[str, Any]:
            output = vqa_reference(loaded, loaded_tok, loaded_processor, str(out_dir / image), question, **options)
            scores = [a["score"] for a in output]
            # Random weights can put two answers within float noise; such a golden would be a coin toss.
            gaps = [a - b for a, b in zip(scores, scores[1:])]
            if gaps and min(gaps) < 1e-5:
                raise RuntimeError(f"{NAME} case {name}: answer scores {scores} too close to order reliably")
            return {"name": name, "task": "visual-question-answering", "call": {"inputs": {"image": image, "question": question}, "options": options}, "output": output}

        cases = [case(f"default_{Path(r).stem}", r, questions[i % len(questions)], {}) for i, r in enumerate(rel)]
        cases += [
            case("top_k_2", rel[1], "Which shape is red?", {"top_k": 2}),
            case("top_k_past_labels", rel[0], "Is there a gradient?", {"top_k": 50}),
            case("long_question_truncated", rel[2], " ".join(["is the noise grey or white"] * 12), {"truncation": True, "top_k": 3}),
        ]
        preprocessing = image_fixtures.preprocessing_goldens(loaded_processor, paths)

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "visual-question-answering",
        "reference": {"runtime": "torch", "implementation": "kit/vilt.py vqa_reference (transformers 4.x VisualQuestionAnsweringPipeline; transformers 5 has none)"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": INPUTS, "outputs": ["logits"], "parity": parity},
        "preprocessing": preprocessing,
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
