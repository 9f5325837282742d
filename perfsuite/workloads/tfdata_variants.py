"""The tf.data study's pipeline variants, all doing the same per-image work.

Every variant reads JPEGs (from files, or from TFRecord shards), decodes them, crops
224x224x3 at random, casts to float32 and divides by 255 (:mod:`tf_image`); they differ
only in how the pipeline is arranged. ``decode_roofline`` decodes in-memory JPEGs and
nothing else, in parallel on every core: the limit for any pipeline that decodes on
the host, which the others' efficiency is measured against. Each builder takes the
dataset and a :class:`~perfsuite.workloads.tfdata_spec.PipelineSpec`; options are applied
by :func:`perfsuite.workloads.tfdata_pipelines.build`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from perfsuite.bench.machine import usable_cpus as host_cores
from perfsuite.data.datasets import ImageDataset
from perfsuite.data.tfrecords import IMAGE_KEY, LABEL_KEY
from perfsuite.errors import PerfsuiteError
from perfsuite.workloads.tf_image import (
    CROP,
    crop_and_scale,
    decode,
    preprocess,
    preprocess_fused,
    random_crop,
    read_and_decode,
    scale,
)
from perfsuite.workloads.tfdata_spec import Pipeline, PipelineSpec, common_params

AUTOTUNE = tf.data.AUTOTUNE
#: records a TFRecord pipeline shuffles among (the JPEG-path variants shuffle every path)
RECORD_SHUFFLE_BUFFER = 1024


def paths(data: ImageDataset) -> tf.data.Dataset:
    """The (path, label) pairs every JPEG-path variant starts from, in file order."""
    return tf.data.Dataset.from_tensor_slices(([str(p) for p in data.files], list(data.labels)))


def baseline(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """The study's order: shuffle -> map -> repeat -> batch -> prefetch, map sequential."""
    ds = (
        paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .map(preprocess)
        .repeat()
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    return Pipeline(
        "baseline",
        ds,
        common_params(
            spec,
            "shuffle -> map -> repeat -> batch -> prefetch",
            num_parallel_calls=1,
            prefetch="AUTOTUNE",
        ),
    )


def _parallel(
    name: str,
    data: ImageDataset,
    spec: PipelineSpec,
    fn: Callable[..., Any],
    shape: str,
    **extra: Any,
) -> Pipeline:
    """shuffle -> repeat -> map(fn, num_parallel_calls=AUTOTUNE) -> batch -> prefetch."""
    ds = (
        paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .repeat()
        .map(fn, num_parallel_calls=AUTOTUNE)
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    params = common_params(spec, shape, num_parallel_calls="AUTOTUNE", prefetch="AUTOTUNE", **extra)
    return Pipeline(name, ds, params)


def parallel_map(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """shuffle -> repeat -> map(num_parallel_calls=AUTOTUNE) -> batch -> prefetch."""
    shape = "shuffle -> repeat -> map -> batch -> prefetch"
    return _parallel("parallel_map", data, spec, preprocess, shape)


def decode_and_crop(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """:func:`parallel_map` with the random crop fused into the decode (decode_and_crop_jpeg)."""
    return _parallel(
        "decode_and_crop",
        data,
        spec,
        preprocess_fused,
        "shuffle -> repeat -> map(decode_and_crop) -> batch -> prefetch",
        why="decodes only the crop window's part of each JPEG, so it does less work than "
        "the full decode the roofline measures and can pass 100% of it",
    )


def cache_after_batch(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """The study's cache placement (after repeat, map and batch): a documented pitfall."""
    if spec.cache_batches <= 0:
        raise PerfsuiteError(
            "cache_after_batch needs PipelineSpec.cache_batches > 0 "
            "(use cache_bound()) so its cache cannot exhaust memory"
        )
    # Bounded with take(): unbounded, as in the study, the cache grows until memory runs out.
    ds = (
        paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .repeat()
        .map(preprocess, num_parallel_calls=AUTOTUNE)
        .batch(spec.batch)
        .take(spec.cache_batches)
        .cache()
        .repeat()
    )
    batch_mb = spec.batch * CROP[0] * CROP[1] * CROP[2] * 4 / 2**20
    return Pipeline(
        "cache_after_batch",
        ds,
        common_params(
            spec,
            "shuffle -> repeat -> map -> batch -> take(k) -> cache -> repeat",
            num_parallel_calls="AUTOTUNE",
            prefetch=None,
            cache="after batch",
            cache_bound_batches=spec.cache_batches,
            cache_bound_mb=round(spec.cache_batches * batch_mb, 1),
            why="the cache sits after repeat, random crop and batch on a stream that never ends "
            "while timed, so it never serves a batch: every batch still pays the full decode, "
            "plus storing float32 batches in a cache that only grows (and a replay would "
            "repeat the same crops)",
        ),
    )


def cache_decoded(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """Decode once, cache the decoded uint8 images, then shuffle and random-crop per epoch.

    The cache holds every decoded image (about 250 MB for 512 images of ~400x400, 4 GB
    for 8192), so it suits datasets that fit in memory.
    """
    ds = (
        paths(data)
        .map(lambda p, y: (read_and_decode(p), y), num_parallel_calls=AUTOTUNE)
        .cache()
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .repeat()
        .map(
            lambda im, y: (crop_and_scale(im), tf.cast(y, tf.float32)), num_parallel_calls=AUTOTUNE
        )
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    # The shuffle buffer pulls a whole epoch before its first element, which fills the
    # cache: after the warm batches every epoch is served from memory.
    return Pipeline(
        "cache_decoded",
        ds,
        common_params(
            spec,
            "map(decode) -> cache -> shuffle -> repeat -> map(crop, scale) -> batch -> prefetch",
            num_parallel_calls="AUTOTUNE",
            prefetch="AUTOTUNE",
            cache="after decode",
            why="decodes each image once; later epochs only crop, cast and scale",
        ),
    )


def preprocess_batch(paths: Any, labels: Any) -> tuple[Any, Any]:
    """The per-image work over a whole batch: decode and crop each, then cast and scale once."""
    images = tf.map_fn(
        lambda p: random_crop(read_and_decode(p)),
        paths,
        fn_output_signature=tf.TensorSpec(CROP, tf.uint8),
    )
    return scale(images), tf.cast(labels, tf.float32)


def vectorized(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """Batch the paths first, then one map over the whole batch."""
    ds = (
        paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .repeat()
        .batch(spec.batch)
        .map(preprocess_batch, num_parallel_calls=AUTOTUNE)
        .prefetch(AUTOTUNE)
    )
    return Pipeline(
        "vectorized",
        ds,
        common_params(
            spec,
            "shuffle -> repeat -> batch -> map(batch) -> prefetch",
            num_parallel_calls="AUTOTUNE",
            prefetch="AUTOTUNE",
            why="images differ in size, so decode and crop stay per image; only the cast and "
            "scale run once per batch",
        ),
    )


def parse_record(record: Any) -> tuple[Any, Any]:
    """One ``tf.train.Example`` of the shards: the JPEG's bytes and its int64 label."""
    features = tf.io.parse_single_example(
        record,
        {
            IMAGE_KEY: tf.io.FixedLenFeature([], tf.string),
            LABEL_KEY: tf.io.FixedLenFeature([], tf.int64),
        },
    )
    return features[IMAGE_KEY], features[LABEL_KEY]


def preprocess_record(record: Any) -> tuple[Any, Any]:
    """The same per-image work as :func:`preprocess`, from a TFRecord record."""
    data, label = parse_record(record)
    return crop_and_scale(decode(data)), tf.cast(label, tf.float32)


def tfrecord(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """The images read from TFRecord shards with a parallel interleave."""
    shards = spec.shards
    if shards is None:
        raise PerfsuiteError(
            "the tfrecord variant needs PipelineSpec.shards "
            "(perfsuite.data.tfrecords.materialize_shards)"
        )
    if shards.dataset_hash != data.recipe_hash:
        raise PerfsuiteError(
            f"TFRecord shards {shards.root} hold another dataset than "
            f"{data.name}; rebuild them with materialize_shards"
        )
    buffer = min(data.count, RECORD_SHUFFLE_BUFFER)
    files = tf.data.Dataset.from_tensor_slices([str(p) for p in shards.paths])
    ds = (
        files.shuffle(len(shards.paths), seed=spec.seed)
        .interleave(
            tf.data.TFRecordDataset, cycle_length=len(shards.paths), num_parallel_calls=AUTOTUNE
        )
        .shuffle(buffer, seed=spec.seed)
        .repeat()
        .map(preprocess_record, num_parallel_calls=AUTOTUNE)
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    params = common_params(
        spec,
        "shuffle(shards) -> interleave -> shuffle -> repeat -> map -> batch -> prefetch",
        num_parallel_calls="AUTOTUNE",
        prefetch="AUTOTUNE",
        shards=len(shards.paths),
        shards_bytes=shards.total_bytes,
    )
    params["shuffle_buffer"] = buffer
    return Pipeline("tfrecord", ds, params, warm_batches=2)


def decode_roofline(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """JPEG decoding alone, of in-memory bytes, in parallel on every core.

    Each element is the decoded image's shape, so batching copies 12 bytes per image
    instead of the pixels: what is timed is the decode.
    """
    cores = host_cores()
    blobs = tf.constant([p.read_bytes() for p in data.files])
    ds = (
        tf.data.Dataset.from_tensor_slices(blobs)
        .repeat()
        .map(lambda b: tf.shape(decode(b)), num_parallel_calls=cores, deterministic=False)
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    params = common_params(
        spec,
        "repeat -> map(decode) -> batch -> prefetch",
        num_parallel_calls=cores,
        prefetch="AUTOTUNE",
        deterministic=False,
        source="JPEG bytes in memory",
    )
    params["shuffle_buffer"] = 0
    return Pipeline("decode_roofline", ds, params)
