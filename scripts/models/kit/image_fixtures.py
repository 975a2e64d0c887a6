"""Steps every image-model fixture shares: a fresh folder with the synthetic PNGs, the model and
its image processor saved and read back as a consumer would, and the processor's pixel values as
preprocessing goldens."""
from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from . import vision


def extra_images() -> dict[str, Any]:
    """Aspect ratios the square-ish set lacks: one wide past a 4:3 cap, one tall."""
    from PIL import Image, ImageDraw

    images = {}
    wide = Image.new("RGB", (100, 40), (30, 30, 60))
    draw = ImageDraw.Draw(wide)
    for x in range(0, 100, 20):
        draw.rectangle((x, 0, x + 9, 39), fill=(240, 200, 40))
    draw.ellipse((60, 5, 90, 35), fill=(40, 160, 90))
    images["stripes_100x40_rgb.png"] = wide

    tall = np.zeros((70, 30, 3), np.uint8)
    tall[..., 0] = np.linspace(20, 230, 70, dtype=np.uint8)[:, None]
    tall[..., 2] = np.linspace(200, 10, 30, dtype=np.uint8)[None, :]
    tall[20:50, 5:25, 1] = 255
    images["tower_30x70_rgb.png"] = Image.fromarray(tall, "RGB")
    return images


def fresh_folder(out_dir: Path, with_extra: bool = True) -> list[Path]:
    """Empties out_dir and writes the synthetic images under out_dir/images; returns their paths."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "images").mkdir(parents=True)
    images = dict(vision._images())
    if with_extra:
        images.update(extra_images())
    paths = []
    for name, image in images.items():
        path = out_dir / "images" / name
        image.save(path, format="PNG", optimize=False)
        paths.append(path)
    return paths


def save_source(model: Any, processor: Any, source: Path, out_dir: Path) -> None:
    """save_pretrained both into source; the folder ships their config files."""
    model.save_pretrained(source)
    processor.save_pretrained(source)
    for name in ("config.json", "preprocessor_config.json"):
        shutil.copy(source / name, out_dir / name)


def rgb(paths: list[Path]) -> list[Any]:
    """The committed PNGs read back as Python's load_image reads them."""
    from PIL import Image

    return [Image.open(p).convert("RGB") for p in paths]


def preprocessing_goldens(processor: Any, paths: list[Path]) -> list[dict[str, Any]]:
    """One image at a time, as the pipelines call the processor: the exact model input per image."""
    from PIL import Image

    goldens = []
    for path, image in zip(paths, rgb(paths)):
        encoded = processor(images=[image], return_tensors="np")
        golden: dict[str, Any] = {
            "image": f"images/{path.name}",
            "mode": Image.open(path).mode,
            "size": list(Image.open(path).size),
            "shape": list(encoded["pixel_values"].shape[1:]),
            "pixel_values_f32le_base64": f32_base64(encoded["pixel_values"][0]),
        }
        if "pixel_mask" in encoded:
            # One image alone is never padded: the mask is all ones, and its count says so.
            golden["pixel_mask_ones"] = int(encoded["pixel_mask"][0].sum())
        goldens.append(golden)
    return goldens


def f32_base64(values: np.ndarray) -> str:
    """An exact float32 tensor in a fraction of the JSON a nested list takes (row-major, little-endian)."""
    return base64.b64encode(np.ascontiguousarray(values, dtype="<f4").tobytes()).decode("ascii")


def u8_base64(values: np.ndarray) -> str:
    """8-bit pixels, row-major, as base64."""
    return base64.b64encode(np.ascontiguousarray(values, dtype=np.uint8).tobytes()).decode("ascii")


def from_f32_base64(text: str, shape: list[int]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").reshape(shape)


def relative(paths: list[Path]) -> list[str]:
    return [f"images/{p.name}" for p in paths]
