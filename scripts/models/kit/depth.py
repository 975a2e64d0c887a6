"""Tiny GLPN depth estimator with goldens from the depth-estimation pipeline: the predicted depth
resized to the image (float32) and the depth image's 8-bit pixels."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import image_fixtures, onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json

NAME = "glpn-depth-estimation"
SEED = 331
SIZE_DIVISOR = 32


def _model() -> Any:
    from transformers import GLPNConfig, GLPNForDepthEstimation

    config = GLPNConfig(
        num_encoder_blocks=4,
        depths=[1, 1, 1, 1],
        sr_ratios=[4, 2, 1, 1],
        hidden_sizes=[8, 16, 24, 32],
        patch_sizes=[7, 3, 3, 3],
        strides=[4, 2, 2, 2],
        num_attention_heads=[1, 1, 2, 2],
        mlp_ratios=[2, 2, 2, 2],
        decoder_hidden_size=16,
        initializer_range=0.2,
        max_depth=10,
    )
    return GLPNForDepthEstimation(config).eval()


def _output(result: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's {predicted_depth: tensor, depth: PIL image} as exact JSON."""
    depth = result["predicted_depth"].numpy()
    image = np.asarray(result["depth"])
    return {
        "predicted_depth": {"shape": list(depth.shape), "f32le_base64": image_fixtures.f32_base64(depth)},
        "depth": {"mode": result["depth"].mode, "size": list(result["depth"].size), "u8_base64": image_fixtures.u8_base64(image)},
    }


def _dpt_preprocessing(paths: list[Path], tmp: Path) -> dict[str, Any]:
    """Depth Anything's processor recipe (DPT's, keep_aspect_ratio and ensure_multiple_of) at a tiny
    size, without a model: its exact pixel values for every synthetic image."""
    import json

    from transformers import AutoImageProcessor, DPTImageProcessor

    folder = tmp / "dpt"
    DPTImageProcessor(size={"height": 32, "width": 32}, keep_aspect_ratio=True, ensure_multiple_of=8, resample=3).save_pretrained(folder)
    return {
        "config": json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8")),
        "preprocessing": image_fixtures.preprocessing_goldens(AutoImageProcessor.from_pretrained(folder), paths),
    }


def build() -> dict[str, Any]:
    from transformers import AutoImageProcessor, AutoModelForDepthEstimation, GLPNImageProcessor, pipeline

    out_dir = FIXTURES / NAME
    every = image_fixtures.fresh_folder(out_dir)
    # GLPN rounds each side down to a multiple of 32: smaller images have nothing left. They stay
    # in the folder (the tests check that they are refused), out of the goldens.
    from PIL import Image

    paths = [p for p in every if min(Image.open(p).size) >= SIZE_DIVISOR]
    small = [p for p in every if p not in paths]
    seed_everything(SEED)
    model = _model()
    processor = GLPNImageProcessor(size_divisor=SIZE_DIVISOR, resample=2)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        image_fixtures.save_source(model, processor, source, out_dir)
        loaded = AutoModelForDepthEstimation.from_pretrained(source).eval()
        loaded_processor = AutoImageProcessor.from_pretrained(source)
        preprocessing = image_fixtures.preprocessing_goldens(loaded_processor, paths)
        singles = [loaded_processor(images=[image], return_tensors="np")["pixel_values"] for image in image_fixtures.rgb(paths)]
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(
            loaded,
            {"pixel_values": torch.from_numpy(singles[0])},
            ["predicted_depth"],
            {"pixel_values": {0: "batch_size", 2: "height", 3: "width"}, "predicted_depth": {0: "batch_size", 1: "height", 2: "width"}},
            onnx_path,
        )

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                return {"predicted_depth": loaded(pixel_values=torch.from_numpy(feed["pixel_values"])).predicted_depth.numpy()}

        feeds = [{"pixel_values": s} for s in singles]
        same = [s for s in singles if s.shape == singles[0].shape]
        feeds.append({"pixel_values": np.concatenate(same)})
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("depth-estimation", model=str(source), device="cpu")
        rel = image_fixtures.relative(paths)
        cases = [
            {"name": f"depth_{Path(r).stem}", "task": "depth-estimation", "call": {"inputs": r, "options": {}}, "output": _output(pipe(str(out_dir / r)))}
            for r in rel
        ]
        dpt = _dpt_preprocessing(every, Path(tmp))
        cases.append({
            "name": "batch",
            "task": "depth-estimation",
            "call": {"inputs": rel, "options": {}},
            "output": [_output(result) for result in pipe([str(out_dir / r) for r in rel])],
        })

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "depth-estimation",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["pixel_values"], "outputs": ["predicted_depth"], "parity": parity},
        "preprocessing": preprocessing,
        "too_small": image_fixtures.relative(small),
        "dpt_processor": dpt,
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity}
