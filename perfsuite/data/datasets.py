"""Synthetic JPEG datasets built from recipes, cached and verified; and users' own folders.

A dataset folder holds ``<class>/<n>.jpg``, ``file_list.txt`` (``relative/path label``
per line, as DALI's file reader takes) and ``manifest.json`` (the recipe, and the
sha256 and size of every file). It is generated into a temporary folder beside its
final place and renamed into place, under a lock, so readers only ever see a whole
dataset; on reuse every file is checked against the manifest, and a dataset with a
missing, truncated or altered file is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.data.fsutil import atomic_write_text, build_dir_once, sha256_file
from perfsuite.data.recipes import Recipe
from perfsuite.data.workers import spawn_pool
from perfsuite.errors import PerfsuiteError

MANIFEST = "manifest.json"
FILE_LIST = "file_list.txt"
JPEG_SUFFIXES = {".jpg", ".jpeg"}
#: the benches crop 224x224: a user's image must be at least that on each side
MIN_SIDE = 224


@dataclass(frozen=True)
class ImageDataset:
    """A folder of JPEGs with labels, ready for tf.data, DALI or a torch Dataset.

    Usage::

        ds = make_image_dataset("imagenet-like", count=16)   # in a test or bench
        ds.count, ds.file_list.name                              # (16, 'file_list.txt')
    """

    name: str
    root: Path
    files: tuple[Path, ...]
    labels: tuple[int, ...]
    class_names: tuple[str, ...]
    file_list: Path
    total_bytes: int
    recipe_hash: str
    recipe: Recipe | None = None

    @property
    def count(self) -> int:
        return len(self.files)

    @property
    def synthetic(self) -> bool:
        return self.recipe is not None

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def extra_info(self) -> dict[str, Any]:
        """What every result that used this dataset records about it."""
        return {
            "dataset": self.name,
            "dataset_hash": self.recipe_hash,
            "dataset_images": self.count,
            "dataset_bytes": self.total_bytes,
        }


def ensure_writable(data_dir: Path) -> None:
    """Create ``data_dir`` or raise an error naming it and the option that changes it."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=data_dir, prefix=".probe-"):
            pass
    except OSError as exc:
        raise PerfsuiteError(
            f"dataset cache {data_dir} is not writable ({exc.strerror or exc}); "
            "choose another with --perf-data-dir or the perf_data_dir ini key"
        ) from None


def materialize(recipe: Recipe, data_dir: Path, workers: int | None = None) -> ImageDataset:
    """The dataset for ``recipe`` in ``data_dir``: reused if intact, else (re)built atomically."""
    _check_not_bootstrapping()
    found = load_verified(data_dir / recipe.dirname, recipe)
    if found is not None:
        return found  # a read-only cache with a good dataset is fine
    ensure_writable(data_dir)
    return build_dir_once(
        data_dir / recipe.dirname,
        lambda root: load_verified(root, recipe),
        lambda tmp: _generate(recipe, tmp, workers),
        "dataset",
    )


def _check_not_bootstrapping() -> None:
    """Refuse to build inside a spawned worker that is still importing its parent's script.

    Without this, a script that calls :func:`materialize` outside an
    ``if __name__ == "__main__":`` guard would hang: each generation worker re-runs
    the script and waits for the lock its parent holds.
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise PerfsuiteError(
            "a dataset was requested while a worker process was starting; guard the "
            "script's entry point with `if __name__ == '__main__':`"
        )


def _file_list_text(entries: list[dict[str, Any]]) -> str:
    return "".join(f"{e['path']} {e['label']}\n" for e in entries)


def _generate(recipe: Recipe, root: Path, workers: int | None) -> None:
    from perfsuite.data.imagegen import write_items

    indices = list(range(recipe.count))
    workers = max(1, min(workers or os.cpu_count() or 1, len(indices) // 16 or 1))
    chunk = max(1, min(64, len(indices) // (workers * 4) or 1))
    chunks = [indices[i : i + chunk] for i in range(0, len(indices), chunk)]
    results: list[tuple[int, str, int]] = []
    if workers == 1:
        for part in chunks:
            results.extend(write_items(recipe, part, root))
    else:
        # Spawned workers that die with this process, even when it is SIGKILLed.
        with spawn_pool(workers) as pool:
            for part_result in pool.map(
                write_items, [recipe] * len(chunks), chunks, [root] * len(chunks)
            ):
                results.extend(part_result)
    results.sort()
    entries: list[dict[str, Any]] = [
        {"path": recipe.relpath(i), "label": recipe.label(i), "sha256": digest, "bytes": size}
        for i, digest, size in results
    ]
    (root / FILE_LIST).write_text(_file_list_text(entries))
    manifest = {
        "recipe": recipe.to_dict(),
        "class_names": [f"class_{c:03d}" for c in range(recipe.classes)],
        "total_bytes": sum(int(e["bytes"]) for e in entries),
        "files": entries,
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1))


def load_verified(root: Path, recipe: Recipe) -> ImageDataset | None:
    """The dataset at ``root`` if it is whole and matches ``recipe``, else None."""
    try:
        manifest = json.loads((root / MANIFEST).read_text())
        if manifest["recipe"]["hash"] != recipe.hash:
            return None
        entries = manifest["files"]
        if len(entries) != recipe.count:
            return None
        if (root / FILE_LIST).read_text() != _file_list_text(entries):
            return None
        for entry in entries:
            path = root / entry["path"]
            if path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return ImageDataset(
        name=recipe.name,
        root=root,
        files=tuple(root / e["path"] for e in entries),
        labels=tuple(int(e["label"]) for e in entries),
        class_names=tuple(manifest["class_names"]),
        file_list=root / FILE_LIST,
        total_bytes=int(manifest["total_bytes"]),
        recipe_hash=recipe.hash,
        recipe=recipe,
    )


def describe_folder(folder: Path, data_dir: Path) -> ImageDataset:
    """Describe a user's folder of JPEGs, validating every file before any timing starts.

    Labels come from the first-level subfolder names (sorted); JPEGs directly in the
    folder get the class ``.``. ``file_list.txt`` is written into the cache, never
    into the user's folder.
    """
    from PIL import Image, UnidentifiedImageError

    where = f"--perf-images {folder}"
    if not folder.exists():
        raise PerfsuiteError(f"{where}: folder does not exist; pass a folder of .jpg files")
    if not folder.is_dir():
        raise PerfsuiteError(f"{where}: not a folder; pass a folder of .jpg files")
    folder = folder.resolve()
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in JPEG_SUFFIXES
    )
    if not files:
        raise PerfsuiteError(f"{where}: no .jpg or .jpeg files found; pass a folder of JPEGs")
    rel = [p.relative_to(folder) for p in files]
    class_of = [r.parts[0] if len(r.parts) > 1 else "." for r in rel]
    class_names = tuple(sorted(set(class_of)))
    labels = tuple(class_names.index(c) for c in class_of)
    digest = hashlib.sha256()
    total = 0
    for path, relpath in zip(files, rel, strict=True):
        if any(ch.isspace() for ch in str(relpath)):
            raise PerfsuiteError(f"{path}: whitespace in the path breaks file_list.txt; rename it")
        try:
            with Image.open(path) as image:
                if image.format != "JPEG":
                    raise PerfsuiteError(f"{path}: is {image.format}, not a JPEG; remove it")
                image.load()
                width, height = image.size
            if min(width, height) < MIN_SIDE:
                raise PerfsuiteError(
                    f"{path}: {width}x{height} px is smaller than the {MIN_SIDE}x{MIN_SIDE} crop "
                    "the benches take; remove or upscale it"
                )
        except PerfsuiteError:
            raise
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
            raise PerfsuiteError(
                f"{path}: corrupt or truncated JPEG ({exc}); fix or remove it"
            ) from None
        data = path.read_bytes()
        total += len(data)
        digest.update(f"{relpath}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    content_hash = digest.hexdigest()
    ensure_writable(data_dir)
    list_dir = data_dir / f"user-{hashlib.sha256(str(folder).encode()).hexdigest()[:12]}"
    file_list = list_dir / FILE_LIST
    atomic_write_text(
        file_list, "".join(f"{r} {lab}\n" for r, lab in zip(rel, labels, strict=True))
    )
    return ImageDataset(
        name=f"user:{folder.name}",
        root=folder,
        files=tuple(files),
        labels=labels,
        class_names=class_names,
        file_list=file_list,
        total_bytes=total,
        recipe_hash=content_hash,
    )
