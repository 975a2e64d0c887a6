"""Tiny SegFormer fixtures: semantic segmentation (4 classes) and background removal (1 class).

Semantic goldens come from transformers' own `image-segmentation` pipeline (subtask semantic).
Background removal has no transformers pipeline (RMBG ships it as remote code), so its goldens come
from `remove_background` below: the RMBG recipe (model -> sigmoid -> bilinear upsampling to the
image size -> min-max stretch -> uint8) on the torch model, with the mask put in as alpha
(PIL's putalpha).
"""
from __future__ import annotations

import base64
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .text_fixtures import compact_raw
from .vision import _images

SEMANTIC = "segformer-semantic-segmentation"
BACKGROUND = "segformer-background-removal"
SEED = 311
LABELS = ["background", "person", "car", "sky"]


def _model(num_labels: int, labels: list[str], initializer_range: float):
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    config = SegformerConfig(
        num_channels=3,
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        patch_sizes=[7, 3],
        strides=[4, 2],
        num_attention_heads=[1, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=32,
        initializer_range=initializer_range,
        num_labels=num_labels,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    model = SegformerForSemanticSegmentation(config).eval()
    # Random batch-norm statistics, so the decode head's fused norm is exercised with real numbers.
    with torch.no_grad():
        bn = model.decode_head.batch_norm
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5)
    return model


def _processor():
    from transformers import SegformerImageProcessor

    return SegformerImageProcessor(
        do_resize=True,
        size={"height": 32, "width": 32},
        resample=2,  # PIL bilinear, SegFormer's default
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=True,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
        do_reduce_labels=False,
    )


def _mask_json(image) -> dict[str, Any]:
    """A mask as its raw 8-bit pixels (base64): decoders, not PNG encoders, must agree."""
    array = np.asarray(image, dtype=np.uint8)
    return {"mode": image.mode, "size": [image.width, image.height], "pixels_base64": base64.b64encode(array.tobytes()).decode()}


def _export(out_dir: Path, name: str, num_labels: int, labels: list[str], initializer_range: float):
    """Saves config + processor, exports model.onnx, proves ORT == torch; returns (source, model, pixels, paths, parity)."""
    from PIL import Image
    from transformers import SegformerForSemanticSegmentation, SegformerImageProcessor

    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "images").mkdir(parents=True)
    model = _model(num_labels, labels, initializer_range)
    paths = []
    for image_name, image in _images().items():
        path = out_dir / "images" / image_name
        image.save(path, format="PNG", optimize=False)
        paths.append(path)
    tmp = tempfile.TemporaryDirectory()
    source = Path(tmp.name) / "source"
    model.save_pretrained(source)
    _processor().save_pretrained(source)
    loaded = SegformerForSemanticSegmentation.from_pretrained(source).eval()
    processor = SegformerImageProcessor.from_pretrained(source)
    for file_name in ("config.json", "preprocessor_config.json"):
        shutil.copy(source / file_name, out_dir / file_name)
    pil = [Image.open(p).convert("RGB") for p in paths]
    pixel_values = processor(images=pil, return_tensors="pt")["pixel_values"]
    onnx_path = out_dir / "model.onnx"
    onnx_export.export(
        loaded,
        {"pixel_values": pixel_values[:2]},
        ["logits"],
        {"pixel_values": {0: "batch_size"}, "logits": {0: "batch_size"}},
        onnx_path,
    )

    def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.no_grad():
            return {"logits": loaded(pixel_values=torch.from_numpy(feed["pixel_values"])).logits.numpy()}

    feeds = [{"pixel_values": pixel_values.numpy()}, {"pixel_values": pixel_values[:1].numpy()}]
    parity = onnx_export.check_parity(onnx_path, reference, feeds)
    raw = [{"inputs": {"images": [f"images/{p.name}" for p in paths]}, "outputs": compact_raw(reference(feeds[0]))}]
    return tmp, source, loaded, processor, paths, parity, raw


def build_semantic() -> dict[str, Any]:
    from transformers import pipeline

    seed_everything(SEED)
    out_dir = FIXTURES / SEMANTIC
    tmp, source, _, _, paths, parity, raw = _export(out_dir, SEMANTIC, len(LABELS), LABELS, 0.08)
    with tmp:
        pipe = pipeline("image-segmentation", model=str(source), device="cpu")
        rel = [f"images/{p.name}" for p in paths]
        cases = []
        for case_name, inputs in [
            ("gradient", rel[0]),
            ("shapes", rel[1]),
            ("grayscale", rel[2]),
            ("rgba", rel[3]),
            ("batch", rel),
        ]:
            actual = [str(out_dir / r) for r in inputs] if isinstance(inputs, list) else str(out_dir / inputs)
            output = pipe(actual, subtask="semantic")
            per_image = output if isinstance(inputs, list) else [output]
            shaped = [[{**s, "mask": _mask_json(s["mask"])} for s in segments] for segments in per_image]
            cases.append(
                {
                    "name": case_name,
                    "task": "image-segmentation",
                    "call": {"inputs": inputs, "options": {"subtask": "semantic"}},
                    "output": shaped if isinstance(inputs, list) else shaped[0],
                }
            )
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": SEMANTIC,
        "task": "image-segmentation",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["pixel_values"], "outputs": ["logits"], "parity": parity},
        "pipeline": cases,
        "raw": raw,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": SEMANTIC, "parity": parity}


def remove_background(model, processor, path: str, activation: str = "sigmoid", min_max: bool = True):
    """The RMBG recipe on a torch model; returns (cut-out RGBA image, mask L image)."""
    import torch.nn.functional as F
    from PIL import Image
    from transformers.image_utils import load_image

    image = load_image(path)
    pixel_values = processor(images=[image], return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        logits = model(pixel_values=pixel_values).logits
        probs = torch.sigmoid(logits) if activation == "sigmoid" else logits
        up = F.interpolate(probs, size=(image.height, image.width), mode="bilinear", align_corners=False)[0, 0]
        if min_max:
            high, low = torch.max(up), torch.min(up)
            up = (up - low) / (high - low)
    mask = Image.fromarray((up * 255).numpy().astype(np.uint8), mode="L")
    cut = image.convert("RGB")
    cut.putalpha(mask)
    return cut, mask


def build_background() -> dict[str, Any]:
    seed_everything(SEED + 1)
    out_dir = FIXTURES / BACKGROUND
    tmp, _, loaded, processor, paths, parity, raw = _export(out_dir, BACKGROUND, 1, ["foreground"], 0.08)
    with tmp:
        rel = [f"images/{p.name}" for p in paths]
        cases = []
        for case_name, inputs, options in [
            ("gradient", rel[0], {}),
            ("shapes", rel[1], {}),
            ("grayscale", rel[2], {}),
            ("rgba", rel[3], {}),
            ("no_min_max", rel[1], {"min_max": False}),
            ("batch", rel, {}),
        ]:
            outputs = []
            for r in inputs if isinstance(inputs, list) else [inputs]:
                cut, mask = remove_background(loaded, processor, str(out_dir / r), **options)
                outputs.append({"image": _mask_json(cut), "mask": _mask_json(mask)})
            cases.append(
                {
                    "name": case_name,
                    "task": "background-removal",
                    "call": {"inputs": inputs, "options": options},
                    "output": outputs if isinstance(inputs, list) else outputs[0],
                }
            )
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": BACKGROUND,
        "task": "background-removal",
        "reference": {
            "runtime": "torch",
            "implementation": "scripts/models/kit/segmentation.py remove_background (RMBG recipe; transformers has no such pipeline)",
        },
        "seed": SEED + 1,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["pixel_values"], "outputs": ["logits"], "parity": parity},
        "pipeline": cases,
        "raw": raw,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": BACKGROUND, "parity": parity}
