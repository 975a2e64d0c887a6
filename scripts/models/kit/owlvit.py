"""Tiny OWL-ViT (text + vision in one ONNX file) with a trained CLIP-style tokenizer; goldens from
transformers' zero-shot-object-detection pipeline."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export, tokenizer_kit
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .vision import _images

NAME = "owlvit-zero-shot-object-detection"
SEED = 331
OUTPUTS = ["logits", "pred_boxes"]


def build(texts: list[str]) -> dict[str, Any]:
    from PIL import Image
    from transformers import CLIPTokenizer, OwlViTConfig, OwlViTForObjectDetection, OwlViTImageProcessor, pipeline

    out_dir = FIXTURES / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "images").mkdir(parents=True)
    seed_everything(SEED)
    tokenizer = tokenizer_kit.clip_bpe(texts, pad_token="!")
    config = OwlViTConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 16,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "image_size": 32,
            "patch_size": 8,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
        },
        # The class head compares vision features with text embeddings of the text hidden size.
        projection_dim=32,
        initializer_factor=1.0,
    )
    tokenizer.model_max_length = 16
    model = OwlViTForObjectDetection(config).eval()
    # Random logit shift/scale heads put every logit near +-30, where the sigmoid saturates and all
    # scores tie at 1.0; shrunk, the scores spread over (0, 1) and their order means something.
    with torch.no_grad():
        for head in (model.class_head.logit_shift, model.class_head.logit_scale):
            head.weight.mul_(0.05)
            head.bias.mul_(0.05)
    processor = OwlViTImageProcessor(
        do_resize=True,
        size={"height": 32, "width": 32},
        resample=3,  # PIL bicubic, OWL-ViT's
        do_center_crop=False,
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=True,
        image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711],
        do_convert_rgb=True,
    )
    paths = []
    for name, image in _images().items():
        path = out_dir / "images" / name
        image.save(path, format="PNG", optimize=False)
        paths.append(path)

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        model.save_pretrained(source)
        processor.save_pretrained(source)
        tokenizer_kit.save(tokenizer, source)
        loaded = OwlViTForObjectDetection.from_pretrained(source).eval()
        loaded_processor = OwlViTImageProcessor.from_pretrained(source)
        loaded_tokenizer = CLIPTokenizer.from_pretrained(source)
        for file in source.iterdir():
            if file.suffix == ".json":
                shutil.copy(file, out_dir / file.name)

        pil = [Image.open(p).convert("RGB") for p in paths]
        pixel_values = loaded_processor(images=pil, return_tensors="pt")["pixel_values"]

        def queries(labels: list[str], images: int) -> dict[str, np.ndarray]:
            # OWL-ViT reads input_ids as [images * queries, length]: every image gets the same queries.
            text = loaded_tokenizer(labels, padding=True, return_tensors="np")
            return {k: np.tile(text[k], (images, 1)) for k in ("input_ids", "attention_mask")}

        example = queries(["a cat", "a small red bird", "dog"], 2)
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(
            loaded,
            {
                "input_ids": torch.from_numpy(example["input_ids"]),
                "pixel_values": pixel_values[:2],
                "attention_mask": torch.from_numpy(example["attention_mask"]),
            },
            OUTPUTS,
            {
                "input_ids": {0: "text_batch_size", 1: "sequence_length"},
                "pixel_values": {0: "image_batch_size"},
                "attention_mask": {0: "text_batch_size", 1: "sequence_length"},
                "logits": {0: "image_batch_size", 2: "num_queries"},
                "pred_boxes": {0: "image_batch_size"},
            },
            onnx_path,
        )

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                result = loaded(**{k: torch.from_numpy(v) for k, v in feed.items()})
            return {name: getattr(result, name).numpy() for name in OUTPUTS}

        feeds = [
            {**queries(["a cat", "a small red bird", "dog"], 4), "pixel_values": pixel_values.numpy()},
            {**queries(["car"], 1), "pixel_values": pixel_values[1:2].numpy()},
            {**queries(["tree", "a large blue rectangle"], 3), "pixel_values": pixel_values[1:].numpy()},
        ]
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("zero-shot-object-detection", model=str(source), device="cpu")
        rel = [f"images/{p.name}" for p in paths]
        animals = ["cat", "dog", "bird"]
        cases = []
        for name, inputs, options in [
            ("default_threshold", rel[0], {"candidate_labels": animals}),
            ("threshold_top_k", rel[1], {"candidate_labels": animals, "threshold": 0.3, "top_k": 5}),
            ("one_label", rel[1], {"candidate_labels": ["a large blue rectangle"], "threshold": 0.0}),
            ("comma_string", rel[1], {"candidate_labels": "circle,square", "threshold": 0.2}),
            ("grayscale", rel[2], {"candidate_labels": ["noise", "gradient"], "threshold": 0.2}),
            ("rgba", rel[3], {"candidate_labels": ["green", "shapes"], "threshold": 0.2}),
            ("nothing_over_threshold", rel[0], {"candidate_labels": animals, "threshold": 0.999}),
            ("batch", rel, {"candidate_labels": animals, "threshold": 0.25}),
        ]:
            call = {k: v for k, v in options.items() if k != "candidate_labels"}
            if isinstance(inputs, list):
                output = pipe(
                    [{"image": str(out_dir / r), "candidate_labels": options["candidate_labels"]} for r in inputs], **call
                )
            else:
                output = pipe(str(out_dir / inputs), candidate_labels=options["candidate_labels"], **call)
            cases.append(
                {"name": name, "task": "zero-shot-object-detection", "call": {"inputs": inputs, "options": options}, "output": output}
            )

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "zero-shot-object-detection",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["input_ids", "pixel_values", "attention_mask"], "outputs": OUTPUTS, "parity": parity},
        "pipeline": cases,
        "raw": [
            {
                "inputs": {"images": rel, "candidate_labels": ["a cat", "a small red bird", "dog"]},
                "outputs": {k: v for k, v in reference(feeds[0]).items()},
            }
        ],
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
