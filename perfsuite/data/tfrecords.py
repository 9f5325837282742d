"""TFRecord shards of an image dataset: written once per dataset, cached and verified.

The shards of dataset ``D`` split into ``N`` files live in the dataset cache beside
the JPEGs, in ``<D's folder name>.tfrecords-<N>/``: ``shard-00000-of-0000N.tfrecord``
files of ``tf.train.Example`` records (``image``: the JPEG's bytes, ``label``: int64)
and ``manifest.json`` (the dataset's hash, and the records, sha256 and size of every
shard). As for the JPEGs, the shards are written into a temporary folder and renamed
into place under a lock, and on reuse every shard is checked against the manifest; a
missing, truncated or altered shard gets the whole set rebuilt. TensorFlow is imported
only to write shards, so this module imports fast.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.data.datasets import ImageDataset, ensure_writable
from perfsuite.data.fsutil import build_dir_once, sha256_file
from perfsuite.errors import PerfsuiteError

MANIFEST = "manifest.json"
#: bumped whenever the bytes written for the same images would change
SHARD_FORMAT = 1
IMAGE_KEY = "image"
LABEL_KEY = "label"


@dataclass(frozen=True)
class TFRecordShards:
    """A dataset's images as TFRecord files, ready for ``tf.data.TFRecordDataset``."""

    root: Path
    paths: tuple[Path, ...]
    records: tuple[int, ...]
    dataset_hash: str
    total_bytes: int

    @property
    def count(self) -> int:
        """Records over all shards: the dataset's image count."""
        return sum(self.records)


def shard_ranges(count: int, shards: int) -> list[range]:
    """Split item indices ``0..count-1`` into ``shards`` contiguous, near-equal ranges."""
    if not isinstance(shards, int) or isinstance(shards, bool) or not 1 <= shards <= count:
        raise PerfsuiteError(
            f"tfrecord shards={shards!r}: must be a whole number from 1 to the dataset's "
            f"image count ({count}); choose fewer shards"
        )
    size, extra = divmod(count, shards)
    bounds = [0]
    for index in range(shards):
        bounds.append(bounds[-1] + size + (1 if index < extra else 0))
    return [range(bounds[i], bounds[i + 1]) for i in range(shards)]


def shard_count(images: int, wanted: int) -> int:
    """How many shards a dataset of ``images`` gets when ``wanted`` are asked: never more
    shards than images, so a one-image folder gets one shard."""
    if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 1:
        raise PerfsuiteError(f"tfrecord shards={wanted!r}: must be a whole number >= 1")
    return max(1, min(wanted, images))


def shards_dirname(dataset: ImageDataset, shards: int) -> str:
    """The shards' folder name in the cache: the dataset's folder name (or hash) and N."""
    key = (
        dataset.recipe.dirname if dataset.recipe is not None else f"user-{dataset.recipe_hash[:12]}"
    )
    return f"{key}.tfrecords-{shards}"


def shard_name(index: int, shards: int) -> str:
    return f"shard-{index:05d}-of-{shards:05d}.tfrecord"


def materialize_shards(dataset: ImageDataset, data_dir: Path, shards: int) -> TFRecordShards:
    """Up to ``shards`` TFRecord files of ``dataset`` in ``data_dir``: reused if intact, else built.

    The count follows the dataset (:func:`shard_count`): a dataset of fewer images than
    ``shards`` gets one shard per image; ``len(result.paths)`` says how many.

    Usage::

        shards = materialize_shards(image_dataset, perf_settings.data_dir, 4)
        tf.data.TFRecordDataset([str(p) for p in shards.paths])
    """
    shards = shard_count(dataset.count, shards)
    ranges = shard_ranges(dataset.count, shards)
    found = load_verified_shards(data_dir / shards_dirname(dataset, shards), dataset, shards)
    if found is not None:
        return found  # a read-only cache with good shards is fine
    ensure_writable(data_dir)
    return build_dir_once(
        data_dir / shards_dirname(dataset, shards),
        lambda root: load_verified_shards(root, dataset, shards),
        lambda tmp: _write(dataset, ranges, tmp),
        "TFRecord shards",
    )


def load_verified_shards(root: Path, dataset: ImageDataset, shards: int) -> TFRecordShards | None:
    """The shards at ``root`` if they are whole and hold ``dataset``'s images, else None."""
    try:
        manifest = json.loads((root / MANIFEST).read_text())
        if (
            manifest["format"] != SHARD_FORMAT
            or manifest["dataset_hash"] != dataset.recipe_hash
            or manifest["images"] != dataset.count
            or len(manifest["shards"]) != shards
        ):
            return None
        entries = manifest["shards"]
        for entry in entries:
            path = root / entry["path"]
            if path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
                return None
        records = tuple(int(e["records"]) for e in entries)
        if sum(records) != dataset.count:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return TFRecordShards(
        root=root,
        paths=tuple(root / e["path"] for e in entries),
        records=records,
        dataset_hash=dataset.recipe_hash,
        total_bytes=sum(int(e["bytes"]) for e in entries),
    )


def _write(dataset: ImageDataset, ranges: list[range], root: Path) -> None:
    import tensorflow as tf

    entries: list[dict[str, Any]] = []
    for index, part in enumerate(ranges):
        name = shard_name(index, len(ranges))
        with tf.io.TFRecordWriter(str(root / name)) as writer:
            for item in part:
                writer.write(_example(tf, dataset.files[item].read_bytes(), dataset.labels[item]))
        path = root / name
        entries.append(
            {
                "path": name,
                "records": len(part),
                "sha256": sha256_file(path),
                "bytes": path.stat().st_size,
            }
        )
    manifest = {
        "format": SHARD_FORMAT,
        "dataset": dataset.name,
        "dataset_hash": dataset.recipe_hash,
        "images": dataset.count,
        "shards": entries,
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1))


def _example(tf: Any, image: bytes, label: int) -> bytes:
    features = tf.train.Features(
        feature={
            IMAGE_KEY: tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
            LABEL_KEY: tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        }
    )
    data: bytes = tf.train.Example(features=features).SerializeToString()
    return data
