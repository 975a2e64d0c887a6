"""Tiny ViT image classifier with its preprocessor_config.json and synthetic PNG inputs."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .text_fixtures import compact_raw

NAME = "vit-image-classification"
SEED = 301
LABELS = ["cat", "dog", "bird", "car", "tree"]


def _images() -> dict[str, Any]:
    """Drawn from code, so they are reproducible and carry no licence; sizes and modes vary on purpose."""
    from PIL import Image, ImageDraw

    images = {}
    grad = np.zeros((40, 48, 3), np.uint8)
    grad[..., 0] = np.linspace(0, 255, 48, dtype=np.uint8)[None, :]
    grad[..., 1] = np.linspace(255, 0, 40, dtype=np.uint8)[:, None]
    grad[..., 2] = 96
    images["gradient_48x40_rgb.png"] = Image.fromarray(grad, "RGB")

    shapes = Image.new("RGB", (64, 64), (250, 250, 240))
    draw = ImageDraw.Draw(shapes)
    draw.ellipse((8, 8, 40, 40), fill=(200, 30, 30))
    draw.rectangle((30, 30, 60, 58), fill=(20, 90, 200))
    images["shapes_64x64_rgb.png"] = shapes

    rng = np.random.default_rng(SEED)
    noise = rng.integers(0, 256, size=(20, 24), dtype=np.uint8)
    images["noise_24x20_gray.png"] = Image.fromarray(noise, "L")

    rgba = np.zeros((32, 32, 4), np.uint8)
    rgba[..., 1] = 180
    rgba[..., 3] = np.linspace(0, 255, 32, dtype=np.uint8)[None, :]
    images["alpha_32x32_rgba.png"] = Image.fromarray(rgba, "RGBA")
    return images


def build() -> dict[str, Any]:
    from PIL import Image
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor, pipeline

    out_dir = FIXTURES / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "images").mkdir(parents=True)
    seed_everything(SEED)
    config = ViTConfig(
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        initializer_range=0.2,
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    model = ViTForImageClassification(config).eval()
    processor = ViTImageProcessor(
        do_resize=True,
        size={"height": 32, "width": 32},
        resample=2,  # PIL bilinear, the ViT default
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=True,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
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
        loaded = ViTForImageClassification.from_pretrained(source).eval()
        loaded_processor = ViTImageProcessor.from_pretrained(source)
        for name in ("config.json", "preprocessor_config.json"):
            shutil.copy(source / name, out_dir / name)

        # Images are read back from the committed PNGs, the same bytes a consumer reads.
        pil = [Image.open(p).convert("RGB") for p in paths]
        pixel_values = loaded_processor(images=pil, return_tensors="pt")["pixel_values"]
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(loaded, {"pixel_values": pixel_values[:2]}, ["logits"], {"pixel_values": {0: "batch_size"}, "logits": {0: "batch_size"}}, onnx_path)

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                return {"logits": loaded(pixel_values=torch.from_numpy(feed["pixel_values"])).logits.numpy()}

        feeds = [{"pixel_values": pixel_values.numpy()}, {"pixel_values": pixel_values[:1].numpy()}]
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("image-classification", model=str(source), device="cpu")
        rel = [f"images/{p.name}" for p in paths]
        cases = []
        for name, inputs, options in [
            ("default_top_5", rel[0], {}),
            ("top_k_2", rel[1], {"top_k": 2}),
            ("grayscale", rel[2], {"top_k": 3}),
            ("rgba", rel[3], {"top_k": 3}),
            ("sigmoid", rel[1], {"function_to_apply": "sigmoid"}),
            ("none", rel[1], {"function_to_apply": "none"}),
            ("batch", rel, {"top_k": 1}),
        ]:
            actual = [str(out_dir / r) for r in inputs] if isinstance(inputs, list) else str(out_dir / inputs)
            cases.append({"name": name, "task": "image-classification", "call": {"inputs": inputs, "options": options}, "output": pipe(actual, **options)})

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "image-classification",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["pixel_values"], "outputs": ["logits"], "parity": parity},
        "preprocessing": [
            {"image": f"images/{p.name}", "mode": Image.open(p).mode, "size": list(Image.open(p).size), "pixel_values": pixel_values[i]}
            for i, p in enumerate(paths)
        ],
        "pipeline": cases,
        "raw": [{"inputs": {"images": [f"images/{p.name}" for p in paths]}, "outputs": compact_raw(reference(feeds[0]))}],
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
