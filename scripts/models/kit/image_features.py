"""Tiny ViT and CLIP vision-tower encoders with goldens from the image-feature-extraction pipeline
(every token's hidden state, and the pooled output)."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import image_fixtures, onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json

VIT = "vit-image-features"
CLIP = "clip-vision-image-features"
SEEDS = {VIT: 321, CLIP: 322}
OUTPUTS = ["last_hidden_state", "pooler_output"]


def _vit() -> tuple[Any, Any]:
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    config = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        initializer_range=0.2,
    )
    processor = ViTImageProcessor(size={"height": 32, "width": 32}, resample=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return ViTModel(config, add_pooling_layer=True).eval(), processor


def _clip() -> tuple[Any, Any]:
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

    config = CLIPVisionConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        projection_dim=16,
    )
    # CLIP's own recipe at a tiny size: bicubic shortest-edge resize, centre crop, CLIP mean/std.
    processor = CLIPImageProcessor(
        size={"shortest_edge": 32},
        crop_size={"height": 32, "width": 32},
        resample=3,
        do_center_crop=True,
    )
    return CLIPVisionModel(config).eval(), processor


def build() -> list[dict[str, Any]]:
    return [_build(VIT, _vit), _build(CLIP, _clip)]


def _build(name: str, make: Any) -> dict[str, Any]:
    from transformers import AutoImageProcessor, AutoModel, pipeline

    out_dir = FIXTURES / name
    paths = image_fixtures.fresh_folder(out_dir)
    seed_everything(SEEDS[name])
    model, processor = make()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        image_fixtures.save_source(model, processor, source, out_dir)
        loaded = AutoModel.from_pretrained(source).eval()
        loaded_processor = AutoImageProcessor.from_pretrained(source)
        preprocessing = image_fixtures.preprocessing_goldens(loaded_processor, paths)
        batch = loaded_processor(images=image_fixtures.rgb(paths), return_tensors="pt")["pixel_values"]
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(
            loaded,
            {"pixel_values": batch[:2]},
            OUTPUTS,
            {"pixel_values": {0: "batch_size"}, **{o: {0: "batch_size"} for o in OUTPUTS}},
            onnx_path,
        )

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                out = loaded(pixel_values=torch.from_numpy(feed["pixel_values"]))
            return {o: getattr(out, o).numpy() for o in OUTPUTS}

        feeds = [{"pixel_values": batch.numpy()}, {"pixel_values": batch[:1].numpy()}]
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("image-feature-extraction", model=str(source), device="cpu")
        rel = image_fixtures.relative(paths)
        cases = []
        for case, inputs, options in [
            *[(f"tokens_{Path(r).stem}", r, {}) for r in rel],
            *[(f"pooled_{Path(r).stem}", r, {"pool": True}) for r in rel],
            ("batch_tokens", rel, {}),
            ("batch_pooled", rel, {"pool": True}),
        ]:
            actual = [str(out_dir / r) for r in inputs] if isinstance(inputs, list) else str(out_dir / inputs)
            cases.append({"name": case, "task": "image-feature-extraction", "call": {"inputs": inputs, "options": options}, "output": pipe(actual, **options)})

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": name,
        "task": "image-feature-extraction",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline"},
        "seed": SEEDS[name],
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["pixel_values"], "outputs": OUTPUTS, "parity": parity},
        "preprocessing": preprocessing,
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": name, "parity": parity}
