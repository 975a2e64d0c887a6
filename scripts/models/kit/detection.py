"""Tiny DETR (transformers' own ResNet backbone, no timm) and YOLOS object detectors with goldens
from the object-detection pipeline, plus the image processor's float boxes before the pipeline
truncates them."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import image_fixtures, onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json
from .vision import LABELS

DETR = "detr-object-detection"
YOLOS = "yolos-object-detection"
SEEDS = {DETR: 311, YOLOS: 312}
# Random weights give near-uniform class scores, under every threshold worth testing; a sharper
# classifier spreads them so that the default threshold (0.5) keeps some boxes and drops others.
CLASSIFIER_GAIN = {DETR: 3.0, YOLOS: 8.0}


def _detr() -> Any:
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

    backbone = ResNetConfig(
        num_channels=3,
        embedding_size=8,
        hidden_sizes=[8, 16, 16, 32],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        out_features=["stage4"],
    )
    config = DetrConfig(
        backbone_config=backbone,
        use_timm_backbone=False,
        use_pretrained_backbone=False,
        num_queries=8,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        init_std=0.2,
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    model = DetrForObjectDetection(config).eval()
    with torch.no_grad():
        model.class_labels_classifier.weight.mul_(CLASSIFIER_GAIN[DETR])
    return model


def _yolos() -> Any:
    from transformers import YolosConfig, YolosForObjectDetection

    config = YolosConfig(
        image_size=[48, 64],
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_detection_tokens=6,
        initializer_range=0.2,
        id2label=dict(enumerate(LABELS)),
        label2id={label: i for i, label in enumerate(LABELS)},
    )
    model = YolosForObjectDetection(config).eval()
    with torch.no_grad():
        model.class_labels_classifier.layers[-1].weight.mul_(CLASSIFIER_GAIN[YOLOS])
        # YOLOS starts its detection tokens at zero, which makes every query answer alike.
        model.vit.embeddings.detection_tokens.normal_()
    return model


def build() -> list[dict[str, Any]]:
    from transformers import DetrImageProcessor, YolosImageProcessor

    size = {"shortest_edge": 48, "longest_edge": 64}
    return [
        _build(DETR, _detr, lambda: DetrImageProcessor(size=size, resample=2, do_pad=True)),
        _build(YOLOS, _yolos, lambda: YolosImageProcessor(size=size, resample=2, do_pad=True)),
    ]


def _build(name: str, make_model: Any, make_processor: Any) -> dict[str, Any]:
    from transformers import AutoImageProcessor, AutoModelForObjectDetection, pipeline

    out_dir = FIXTURES / name
    paths = image_fixtures.fresh_folder(out_dir)
    seed_everything(SEEDS[name])
    model = make_model()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        image_fixtures.save_source(model, make_processor(), source, out_dir)
        loaded = AutoModelForObjectDetection.from_pretrained(source).eval()
        loaded_processor = AutoImageProcessor.from_pretrained(source)

        preprocessing = image_fixtures.preprocessing_goldens(loaded_processor, paths)
        # The model's inputs are what the processor returns that its forward() takes.
        takes = ["pixel_values", "pixel_mask"] if name == DETR else ["pixel_values"]
        singles = [
            {k: v for k, v in loaded_processor(images=[image], return_tensors="np").items() if k in takes}
            for image in image_fixtures.rgb(paths)
        ]
        onnx_path = out_dir / "model.onnx"
        axes = {"pixel_values": {0: "batch_size", 2: "height", 3: "width"}, "pixel_mask": {0: "batch_size", 1: "height", 2: "width"}}
        onnx_export.export(
            loaded,
            {k: torch.from_numpy(singles[0][k]) for k in takes},
            ["logits", "pred_boxes"],
            {**{k: axes[k] for k in takes}, "logits": {0: "batch_size"}, "pred_boxes": {0: "batch_size"}},
            onnx_path,
        )

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                out = loaded(**{k: torch.from_numpy(v) for k, v in feed.items()})
            return {"logits": out.logits.numpy(), "pred_boxes": out.pred_boxes.numpy()}

        # Every image alone (its own size), and a padded batch as the processor pads one.
        feeds = list(singles)
        padded = loaded_processor(images=image_fixtures.rgb(paths), return_tensors="np")
        feeds.append({k: v for k, v in padded.items() if k in takes})
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("object-detection", model=str(source), device="cpu")
        rel = image_fixtures.relative(paths)
        cases = []
        for case, inputs, options in [
            *[(f"default_{Path(r).stem}", r, {}) for r in rel],
            ("threshold_0.2", rel[1], {"threshold": 0.2}),
            ("threshold_0.95", rel[1], {"threshold": 0.95}),
            ("batch_threshold_0.3", rel, {"threshold": 0.3}),
        ]:
            actual = [str(out_dir / r) for r in inputs] if isinstance(inputs, list) else str(out_dir / inputs)
            cases.append({"name": case, "task": "object-detection", "call": {"inputs": inputs, "options": options}, "output": pipe(actual, **options)})

        # The pipeline truncates boxes to whole pixels; these are the processor's float boxes.
        exact = []
        for r, g, feed in zip(rel, preprocessing, singles):
            with torch.no_grad():
                out = loaded(**{k: torch.from_numpy(v) for k, v in feed.items()})
            width, height = g["size"]
            post = loaded_processor.post_process_object_detection(out, threshold=0.1, target_sizes=[(height, width)])[0]
            exact.append({
                "image": r,
                "threshold": 0.1,
                "output": [
                    {"score": s, "label": loaded.config.id2label[int(l)], "box": dict(zip(["xmin", "ymin", "xmax", "ymax"], b))}
                    for s, l, b in zip(post["scores"].tolist(), post["labels"].tolist(), post["boxes"].tolist())
                ],
            })

    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": name,
        "task": "object-detection",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline"},
        "seed": SEEDS[name],
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": takes, "outputs": ["logits", "pred_boxes"], "parity": parity},
        "preprocessing": preprocessing,
        "pipeline": cases,
        "float_boxes": exact,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": name, "parity": parity}
