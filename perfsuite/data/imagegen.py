"""Deterministic photo-like JPEGs: smooth regions, hard edges and texture, never white noise.

White noise compresses badly and decodes slowly, so it would make every pipeline
look decode-bound; these images sit near real photos in size (about 55 KB at
300-500 px, quality 90) and in decode cost (about 1.2 ms each on one x86 core).
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

from perfsuite.data.recipes import SUBSAMPLING, Recipe


def render_jpeg(recipe: Recipe, index: int) -> bytes:
    """The JPEG bytes of item ``index``: the same recipe and index give the same bytes."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter

    height, width = recipe.shape(index)
    rng = np.random.default_rng([recipe.seed, index, 1])

    # Smooth regions: a coarse grid of colours, upsampled bicubically.
    grid = rng.integers(
        0, 256, (int(rng.integers(2, 6)), int(rng.integers(2, 6)), 3), dtype=np.uint8
    )
    image = Image.fromarray(grid, "RGB").resize((width, height), Image.Resampling.BICUBIC)

    # Edges: a few filled shapes with hard borders, then a slight blur like a lens.
    draw = ImageDraw.Draw(image)
    for _ in range(int(rng.integers(4, 10))):
        x0, x1 = sorted(int(v) for v in rng.integers(-width // 4, width + width // 4, 2))
        y0, y1 = sorted(int(v) for v in rng.integers(-height // 4, height + height // 4, 2))
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1 + 1, y1 + 1), fill=fill)
        else:
            points = [
                (int(rng.integers(0, width)), int(rng.integers(0, height)))
                for _ in range(int(rng.integers(3, 6)))
            ]
            draw.polygon(points, fill=fill)
    image = image.filter(ImageFilter.GaussianBlur(radius=0.8))

    # Texture: mid-frequency shading plus fine grain.
    coarse = rng.normal(0.0, 14.0, (height // 3 + 2, width // 3 + 2)).astype(np.float32)
    shading = np.asarray(
        Image.fromarray(coarse, "F").resize((width, height), Image.Resampling.BILINEAR)
    )
    grain = rng.integers(-9, 10, (height, width, 1), dtype=np.int16)
    pixels = np.asarray(image, dtype=np.int16) + shading[..., None].astype(np.int16) + grain
    final = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")

    out = io.BytesIO()
    final.save(
        out,
        format="JPEG",
        quality=recipe.quality,
        subsampling=SUBSAMPLING[recipe.subsampling],
        optimize=False,
    )
    return out.getvalue()


def write_items(recipe: Recipe, indices: list[int], root: Path) -> list[tuple[int, str, int]]:
    """Render and write items under ``root``; returns (index, sha256, size) per item."""
    written = []
    for index in indices:
        data = render_jpeg(recipe, index)
        path = root / recipe.relpath(index)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append((index, hashlib.sha256(data).hexdigest(), len(data)))
    return written
