"""Tiny CLIP (text + vision towers in one ONNX file, as Optimum exports CLIPModel) with a trained
CLIP-style tokenizer; goldens from transformers' zero-shot-image-classification pipeline."""
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

NAME = "clip-zero-shot-image-classification"
SPLIT = "clip-split-towers"
SEED = 321
OUTPUTS = ["logits_per_image", "logits_per_text", "text_embeds", "image_embeds"]


def build(texts: list[str]) -> dict[str, Any]:
    from PIL import Image
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPTokenizer, pipeline

    out_dir = FIXTURES / NAME
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "images").mkdir(parents=True)
    seed_everything(SEED)
    tokenizer = tokenizer_kit.clip_bpe(texts)
    config = CLIPConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 32,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
            "initializer_range": 0.2,
        },
        vision_config={
            "image_size": 32,
            "patch_size": 8,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "initializer_range": 0.2,
        },
        projection_dim=16,
    )
    model = CLIPModel(config).eval()
    processor = CLIPImageProcessor(
        do_resize=True,
        size={"shortest_edge": 32},
        resample=3,  # PIL bicubic, CLIP's
        do_center_crop=True,
        crop_size={"height": 32, "width": 32},
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
        loaded = CLIPModel.from_pretrained(source).eval()
        loaded_processor = CLIPImageProcessor.from_pretrained(source)
        loaded_tokenizer = CLIPTokenizer.from_pretrained(source)
        for file in source.iterdir():
            if file.suffix == ".json" and file.name != "model.safetensors.index.json":
                shutil.copy(file, out_dir / file.name)

        pil = [Image.open(p).convert("RGB") for p in paths]
        pixel_values = loaded_processor(images=pil, return_tensors="pt")["pixel_values"]
        text = loaded_tokenizer(
            ["a photo of a cat", "a dog", "This is a photo of a small red bird."], padding=True, return_tensors="pt"
        )
        onnx_path = out_dir / "model.onnx"
        onnx_export.export(
            loaded,
            {"input_ids": text["input_ids"], "pixel_values": pixel_values[:2], "attention_mask": text["attention_mask"]},
            OUTPUTS,
            {
                "input_ids": {0: "text_batch_size", 1: "sequence_length"},
                "pixel_values": {0: "image_batch_size"},
                "attention_mask": {0: "text_batch_size", 1: "sequence_length"},
                "logits_per_image": {0: "image_batch_size", 1: "text_batch_size"},
                "logits_per_text": {0: "text_batch_size", 1: "image_batch_size"},
                "text_embeds": {0: "text_batch_size"},
                "image_embeds": {0: "image_batch_size"},
            },
            onnx_path,
        )

        def reference(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            with torch.no_grad():
                result = loaded(**{k: torch.from_numpy(v) for k, v in feed.items()})
            return {name: getattr(result, name).numpy() for name in OUTPUTS}

        short = loaded_tokenizer(["a cat", "a truck"], padding=True, return_tensors="np")
        feeds = [
            {"input_ids": text["input_ids"].numpy(), "pixel_values": pixel_values.numpy(), "attention_mask": text["attention_mask"].numpy()},
            {"input_ids": short["input_ids"], "pixel_values": pixel_values[:1].numpy(), "attention_mask": short["attention_mask"]},
        ]
        parity = onnx_export.check_parity(onnx_path, reference, feeds)

        pipe = pipeline("zero-shot-image-classification", model=str(source), device="cpu")
        rel = [f"images/{p.name}" for p in paths]
        animals = ["cat", "dog", "bird"]
        cases = []
        for name, inputs, options in [
            ("default_template", rel[0], {"candidate_labels": animals}),
            ("custom_template", rel[1], {"candidate_labels": animals, "hypothesis_template": "a drawing of a {}"}),
            ("one_label", rel[1], {"candidate_labels": ["car"]}),
            ("labels_of_different_lengths", rel[1], {"candidate_labels": ["red", "a large blue rectangle", "circle"]}),
            ("grayscale", rel[2], {"candidate_labels": ["noise", "gradient", "shapes", "green"]}),
            ("rgba", rel[3], {"candidate_labels": ["noise", "gradient", "shapes", "green"]}),
            ("unicode_labels", rel[0], {"candidate_labels": ["café", "東京", "🚀 rocket"]}),
            ("batch", rel, {"candidate_labels": animals}),
        ]:
            actual = [str(out_dir / r) for r in inputs] if isinstance(inputs, list) else str(out_dir / inputs)
            cases.append(
                {
                    "name": name,
                    "task": "zero-shot-image-classification",
                    "call": {"inputs": inputs, "options": options},
                    "output": pipe(actual, **options),
                }
            )

        split = _export_split(source, paths, pixel_values, text, cases)


    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "zero-shot-image-classification",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"file": "model.onnx", "inputs": ["input_ids", "pixel_values", "attention_mask"], "outputs": OUTPUTS, "parity": parity},
        "preprocessing": [
            {"image": f"images/{p.name}", "mode": Image.open(p).mode, "size": list(Image.open(p).size), "pixel_values": pixel_values[i]}
            for i, p in enumerate(paths)
        ],
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": parity, "split": split}


def _export_split(source: Path, paths: list[Path], pixel_values, text, cases: list[dict]) -> dict[str, Any]:
    """The same weights as two graphs, as Optimum names them (clip-text-with-projection ->
    text_model.onnx, clip-vision-with-projection -> vision_model.onnx). The towers give unnormalized
    embeddings; the logit scale, a trained weight of CLIPModel, is not in either graph, so the
    goldens record it for the pipeline's logitScale option."""
    from transformers import CLIPModel, CLIPTextModelWithProjection, CLIPVisionModelWithProjection

    out_dir = FIXTURES / SPLIT
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "images").mkdir(parents=True)
    for path in paths:
        shutil.copy(path, out_dir / "images" / path.name)
    for file in source.iterdir():
        if file.suffix == ".json":
            shutil.copy(file, out_dir / file.name)
    full = CLIPModel.from_pretrained(source).eval()
    text_config, vision_config = full.config.text_config, full.config.vision_config
    text_config.projection_dim = vision_config.projection_dim = full.config.projection_dim
    text_tower = CLIPTextModelWithProjection(text_config).eval()
    text_tower.text_model.load_state_dict(full.text_model.state_dict())
    text_tower.text_projection.load_state_dict(full.text_projection.state_dict())
    vision_tower = CLIPVisionModelWithProjection(vision_config).eval()
    vision_tower.vision_model.load_state_dict(full.vision_model.state_dict())
    vision_tower.visual_projection.load_state_dict(full.visual_projection.state_dict())
    towers = {
        "text_model": (
            text_tower,
            {"input_ids": text["input_ids"], "attention_mask": text["attention_mask"]},
            ["text_embeds", "last_hidden_state"],
            {"input_ids": {0: "batch_size", 1: "sequence_length"}, "attention_mask": {0: "batch_size", 1: "sequence_length"},
             "text_embeds": {0: "batch_size"}, "last_hidden_state": {0: "batch_size", 1: "sequence_length"}},
        ),
        "vision_model": (
            vision_tower,
            {"pixel_values": pixel_values[:2]},
            ["image_embeds", "last_hidden_state"],
            {"pixel_values": {0: "batch_size"}, "image_embeds": {0: "batch_size"}, "last_hidden_state": {0: "batch_size"}},
        ),
    }
    parity = {}
    for name, (tower, example, outputs, axes) in towers.items():
        onnx_path = out_dir / f"{name}.onnx"
        onnx_export.export(tower, example, outputs, axes, onnx_path)

        def reference(feed: dict[str, np.ndarray], tower=tower, outputs=outputs) -> dict[str, np.ndarray]:
            with torch.no_grad():
                result = tower(**{k: torch.from_numpy(v) for k, v in feed.items()})
            return {o: getattr(result, o).numpy() for o in outputs}

        feed = {k: v.numpy() for k, v in example.items()}
        if name == "vision_model":
            feeds = [{"pixel_values": pixel_values.numpy()}, {"pixel_values": pixel_values[:1].numpy()}]
        else:
            feeds = [feed, {k: v[:1] for k, v in feed.items()}]
        parity[name] = onnx_export.check_parity(onnx_path, reference, feeds)

    # The towers give what CLIPModel computes inside: its logits from their embeddings.
    with torch.no_grad():
        want = full(**{k: v for k, v in text.items()}, pixel_values=pixel_values).logits_per_image
        t = towers["text_model"][0](**text).text_embeds
        v = towers["vision_model"][0](pixel_values=pixel_values).image_embeds
        scale = full.logit_scale.exp()
        got = scale * (v / v.norm(dim=-1, keepdim=True)) @ (t / t.norm(dim=-1, keepdim=True)).T
        assert torch.allclose(got, want, atol=1e-5), "split towers do not reproduce CLIPModel"
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": SPLIT,
        "task": "zero-shot-image-classification",
        "reference": {"runtime": "torch", "implementation": "transformers.pipeline (on the CLIPModel the towers come from)"},
        "seed": SEED,
        "versions": tool_versions(),
        "logit_scale": float(scale),
        "onnx": {"files": ["text_model.onnx", "vision_model.onnx"], "parity": parity},
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": SPLIT, "parity": parity}
