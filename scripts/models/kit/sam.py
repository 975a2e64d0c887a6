"""Tiny SAM (vision encoder + prompt encoder/mask decoder, two ONNX graphs as Optimum names them).

transformers' `mask-generation` pipeline is SAM's *automatic* generator (a grid of points, crops,
NMS); it takes no user prompts. Prompted masks are what SamModel + SamProcessor give, so the goldens
come from them: the processor's pixel values and prompt coordinates, the model's iou_scores and
pred_masks, and the processor's post_process_masks (upscale to the original size, > 0.0).

The decoder graph takes prompts the way the original SAM ONNX export does: points with labels,
box corners as two points labelled 2 and 3, and the caller appends the (0, 0) / -1 padding point
when a prompt has no box (what SamPromptEncoder does itself). It returns all four mask tokens'
masks and scores, so multimask_output (tokens 1-3, or token 0) is a slice after the graph. The kit
proves the graph equals SamModel's forward on points, boxes, and both, with either multimask_output.
"""
from __future__ import annotations

import tempfile
from types import SimpleNamespace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import image_fixtures, onnx_export
from .common import FIXTURES, GOLDENS_SCHEMA, seed_everything, tool_versions, write_json

NAME = "sam-mask-generation"
SEED = 331


def _model():
    from transformers import SamConfig, SamMaskDecoderConfig, SamModel, SamPromptEncoderConfig, SamVisionConfig

    vision = SamVisionConfig(
        hidden_size=32,
        output_channels=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=64,
        patch_size=8,
        mlp_dim=64,
        window_size=4,
        global_attn_indexes=[1],
        num_pos_feats=8,
        initializer_range=0.2,
    )
    prompt = SamPromptEncoderConfig(hidden_size=16, image_size=64, patch_size=8, mask_input_channels=4)
    decoder = SamMaskDecoderConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, mlp_dim=32, iou_head_hidden_dim=16
    )
    config = SamConfig(
        vision_config=vision.to_dict(),
        prompt_encoder_config=prompt.to_dict(),
        mask_decoder_config=decoder.to_dict(),
        initializer_range=0.2,
    )
    model = SamModel(config).eval()
    # Random init leaves the embeddings and norms near identity; spread them so the prompts matter.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "prompt_encoder" in name or "iou_token" in name or "mask_tokens" in name:
                p.normal_(0, 1.0)
    return model


def _processor():
    from transformers import SamProcessor
    from transformers.models.sam.image_processing_pil_sam import SamImageProcessorPil

    image_processor = SamImageProcessorPil(
        size={"longest_edge": 64},
        pad_size={"height": 64, "width": 64},
        mask_size={"longest_edge": 16},
        mask_pad_size={"height": 16, "width": 16},
    )
    return SamProcessor(image_processor=image_processor)


class VisionEncoder(torch.nn.Module):
    def __init__(self, sam):
        super().__init__()
        self.sam = sam

    def forward(self, pixel_values):
        return SimpleNamespace(image_embeddings=self.sam.vision_encoder(pixel_values).last_hidden_state)


class PromptDecoder(torch.nn.Module):
    """SamPromptEncoder + SamMaskDecoder with prompts as labelled points and every mask token kept."""

    def __init__(self, sam):
        super().__init__()
        self.sam = sam

    def forward(self, image_embeddings, input_points, input_labels):
        sam = self.sam
        pe = sam.prompt_encoder
        labels = input_labels[..., None]
        emb = pe.shared_embedding(input_points + 0.5, (pe.input_image_size, pe.input_image_size))
        emb = torch.where(labels == -1, pe.not_a_point_embed.weight, emb)
        emb = torch.where(labels != -10, emb, torch.zeros_like(emb))
        for k in range(4):
            emb = torch.where(labels == k, emb + pe.point_embed[k].weight, emb)
        batch, _, height, width = image_embeddings.shape
        dense = pe.no_mask_embed.weight.reshape(1, -1, 1, 1).expand(batch, -1, height, width)
        positional = sam.get_image_wide_positional_embeddings().repeat(batch, 1, 1, 1)
        iou_scores, pred_masks = _decode(sam.mask_decoder, image_embeddings, positional, emb, dense)
        # Named as SamModel names them, so onnx_export's wrapper reads them by name.
        return SimpleNamespace(iou_scores=iou_scores, pred_masks=pred_masks)


def _decode(dec, image_embeddings, positional, sparse, dense):
    """SamMaskDecoder.forward up to its multimask slice (transformers 5.23), all tokens kept."""
    batch_size, num_channels, height, width = image_embeddings.shape
    point_batch_size = sparse.shape[1]
    output_tokens = torch.cat([dec.iou_token.weight, dec.mask_tokens.weight], dim=0)
    output_tokens = output_tokens.repeat(batch_size, point_batch_size, 1, 1)
    tokens = torch.cat((output_tokens, sparse), dim=2)
    image_embeddings = (image_embeddings + dense).repeat_interleave(point_batch_size, 0)
    positional = positional.repeat_interleave(point_batch_size, 0)
    point_embedding, image_embeddings = dec.transformer(
        point_embeddings=tokens, image_embeddings=image_embeddings, image_positional_embeddings=positional,
        attention_similarity=None, target_embedding=None,
    )
    iou_token_out = point_embedding[:, :, 0, :]
    mask_tokens_out = point_embedding[:, :, 1 : (1 + dec.num_mask_tokens), :]
    image_embeddings = image_embeddings.transpose(2, 3).reshape(batch_size * point_batch_size, num_channels, height, width)
    up = dec.upscale_conv1(image_embeddings)
    up = dec.activation(dec.upscale_layer_norm(up))
    up = dec.activation(dec.upscale_conv2(up))
    hyper_in = torch.stack([dec.output_hypernetworks_mlps[i](mask_tokens_out[:, :, i, :]) for i in range(dec.num_mask_tokens)], dim=2)
    _, c, h, w = up.shape
    up = up.reshape(batch_size, point_batch_size, c, h * w)
    masks = (hyper_in @ up).reshape(batch_size, point_batch_size, -1, h, w)
    return dec.iou_prediction_head(iou_token_out), masks


def _graph_prompts(points, labels, boxes):
    """The decoder graph's points/labels for one image's prompts, from the processor's tensors."""
    parts, part_labels = [], []
    if points is not None:
        parts.append(points)
        part_labels.append(labels.to(torch.int64))
    if boxes is not None:
        corners = boxes.reshape(boxes.shape[0], boxes.shape[1], 2, 2)
        parts.append(corners)
        part_labels.append(torch.tensor([2, 3], dtype=torch.int64).expand(boxes.shape[0], boxes.shape[1], 2))
    else:
        shape = parts[0].shape
        parts.append(torch.zeros(shape[0], shape[1], 1, 2))
        part_labels.append(-torch.ones(shape[0], shape[1], 1, dtype=torch.int64))
    return torch.cat(parts, dim=2).float(), torch.cat(part_labels, dim=2)


def _mask_json(mask: torch.Tensor) -> dict[str, Any]:
    array = mask.numpy().astype(np.uint8) * 255
    return {"size": [int(array.shape[1]), int(array.shape[0])], "pixels_base64": image_fixtures.u8_base64(array)}


CASES = [
    # (name, image index, call options)
    ("one_point", 1, {"points": [[20, 20]]}),
    ("two_points_with_negative", 1, {"points": [[20, 20], [50, 45]], "labels": [1, 0]}),
    ("point_single_mask", 0, {"points": [[10, 30]], "multimask_output": False}),
    ("one_box", 1, {"boxes": [[8, 8, 40, 40]]}),
    ("two_boxes", 0, {"boxes": [[2, 3, 30, 20], [20, 10, 47, 39]]}),
    ("box_and_points", 1, {"boxes": [[28, 28, 62, 60]], "points": [[45, 44]], "labels": [1]}),
    ("grayscale_point", 2, {"points": [[12, 9]]}),
    ("rgba_box", 3, {"boxes": [[4, 4, 28, 20]], "multimask_output": False}),
    ("wide_point", 4, {"points": [[75, 20]]}),
    ("tall_box", 5, {"boxes": [[5, 20, 25, 50]]}),
]


def build() -> dict[str, Any]:
    from transformers import SamModel, SamProcessor

    seed_everything(SEED)
    out_dir = FIXTURES / NAME
    paths = image_fixtures.fresh_folder(out_dir)
    model = _model()
    processor = _processor()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "source"
        # The image processor's own save writes preprocessor_config.json, which the folder ships.
        image_fixtures.save_source(model, processor.image_processor, source, out_dir)
        processor.save_pretrained(source)
        loaded = SamModel.from_pretrained(source).eval()
        processor = SamProcessor.from_pretrained(source, use_fast=False)
    assert type(processor.image_processor).__name__ == "SamImageProcessorPil", type(processor.image_processor)
    images = image_fixtures.rgb(paths)
    pixel_values = processor(images=images, return_tensors="pt")["pixel_values"]

    encoder, decoder = VisionEncoder(loaded).eval(), PromptDecoder(loaded).eval()
    with torch.no_grad():
        embeddings = encoder(pixel_values).image_embeddings
    enc_path, dec_path = out_dir / "vision_encoder.onnx", out_dir / "prompt_encoder_mask_decoder.onnx"
    onnx_export.export(encoder, {"pixel_values": pixel_values[:2]}, ["image_embeddings"],
                       {"pixel_values": {0: "batch_size"}, "image_embeddings": {0: "batch_size"}}, enc_path)
    example_points = torch.tensor([[[[10.0, 12.0], [30.0, 40.0], [0.0, 0.0]]]])
    example_labels = torch.tensor([[[1, 0, -1]]], dtype=torch.int64)
    onnx_export.export(
        decoder,
        {"image_embeddings": embeddings[:1], "input_points": example_points, "input_labels": example_labels},
        ["iou_scores", "pred_masks"],
        {
            "image_embeddings": {0: "batch_size"},
            "input_points": {0: "batch_size", 1: "point_batch_size", 2: "num_points"},
            "input_labels": {0: "batch_size", 1: "point_batch_size", 2: "num_points"},
            "iou_scores": {0: "batch_size", 1: "point_batch_size"},
            "pred_masks": {0: "batch_size", 1: "point_batch_size"},
        },
        dec_path,
    )

    def run(module, names):
        def reference(feed):
            with torch.no_grad():
                out = module(**{k: torch.from_numpy(v) for k, v in feed.items()})
            return {n: getattr(out, n).numpy() for n in names}
        return reference

    parity = {
        "vision_encoder": onnx_export.check_parity(
            enc_path, run(encoder, ["image_embeddings"]),
            [{"pixel_values": pixel_values.numpy()}, {"pixel_values": pixel_values[:1].numpy()}]),
    }
    dec_feeds = []

    cases = []
    for name, index, options in CASES:
        image = images[index]
        inputs_kwargs: dict[str, Any] = {}
        if "points" in options:
            inputs_kwargs["input_points"] = [[options["points"]]]
            inputs_kwargs["input_labels"] = [[options.get("labels", [1] * len(options["points"]))]]
        if "boxes" in options:
            inputs_kwargs["input_boxes"] = [options["boxes"]]
        encoded = processor(images=image, return_tensors="pt", **inputs_kwargs)
        multimask = options.get("multimask_output", True)
        with torch.no_grad():
            out = loaded(
                pixel_values=encoded["pixel_values"],
                input_points=encoded.get("input_points"),
                input_labels=encoded.get("input_labels"),
                input_boxes=encoded.get("input_boxes"),
                multimask_output=multimask,
            )
            # The graph reproduces SamModel: same scores and masks, either multimask choice.
            points, labels = _graph_prompts(encoded.get("input_points"), encoded.get("input_labels"), encoded.get("input_boxes"))
            decoded = decoder(encoder(encoded["pixel_values"]).image_embeddings, points, labels)
            iou_all, masks_all = decoded.iou_scores, decoded.pred_masks
            pick = slice(1, None) if multimask else slice(0, 1)
            assert torch.allclose(iou_all[:, :, pick], out.iou_scores, atol=1e-5), name
            assert torch.allclose(masks_all[:, :, pick], out.pred_masks, atol=1e-5), name
        dec_feeds.append({"image_embeddings": embeddings[index : index + 1].numpy(), "input_points": points.numpy(), "input_labels": labels.numpy()})
        masks = processor.post_process_masks(out.pred_masks, encoded["original_sizes"], encoded["reshaped_input_sizes"])[0]
        # Logits this close to 0.0 may flip in a float32 re-implementation of the two upsamplings.
        low = processor.post_process_masks(out.pred_masks, encoded["original_sizes"], encoded["reshaped_input_sizes"], binarize=False)[0]
        near = int((low.abs() < 1e-5).sum())
        cases.append({
            "name": name,
            "task": "mask-generation",
            "call": {"inputs": f"images/{paths[index].name}", "options": options},
            "processor": {
                "original_size": encoded["original_sizes"][0].tolist(),
                "reshaped_input_size": encoded["reshaped_input_sizes"][0].tolist(),
                "graph_points": points[0].tolist(),
                "graph_labels": labels[0].tolist(),
            },
            "near_threshold_pixels": near,
            "output": [
                {"scores": out.iou_scores[0, p].tolist(), "masks": [_mask_json(m) for m in masks[p]]}
                for p in range(masks.shape[0])
            ],
        })
    parity["prompt_encoder_mask_decoder"] = onnx_export.check_parity(dec_path, run(decoder, ["iou_scores", "pred_masks"]), dec_feeds)
    worst = max(p["max_abs_diff"] for p in parity.values())
    goldens = {
        "schema": GOLDENS_SCHEMA,
        "model": NAME,
        "task": "mask-generation",
        "reference": {"runtime": "torch", "implementation": "transformers SamModel + SamProcessor (SamImageProcessorPil) post_process_masks"},
        "seed": SEED,
        "versions": tool_versions(),
        "onnx": {"files": ["vision_encoder.onnx", "prompt_encoder_mask_decoder.onnx"], "parity": parity},
        "preprocessing": image_fixtures.preprocessing_goldens(processor.image_processor, paths),
        "pipeline": cases,
    }
    write_json(out_dir / "goldens.json", goldens)
    return {"name": NAME, "parity": {"max_abs_diff": worst, **parity}}
