"""The tf.data study's pipeline variants, all doing the same per-image work.

Every variant reads JPEGs (from files, or from TFRecord shards), decodes them, crops
224x224x3 at random, casts to float32 and divides by 255 (:mod:`tf_image`); they differ
only in how the pipeline is arranged. ``decode_roofline`` decodes in-memory JPEGs and
nothing else, in parallel on every core: the limit for any pipeline that decodes on
the host, which the others' efficiency is measured against.

tf.data's own benchmark harness turns its default static optimizations off; here they
stay on, as every user gets them (among them ``parallel_batch``, which copies a
batch's elements in parallel), except ``map_parallelization``, which would be free to
turn the baseline's sequential map into a parallel one. Autotuning stays on, and an
autotuned pipeline is warmed long enough to settle before timing (:meth:`Pipeline.warm`).
Each :class:`Pipeline` records these choices in its ``params``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from perfsuite.bench.machine import usable_cpus as host_cores
from perfsuite.data.datasets import ImageDataset
from perfsuite.data.tfrecords import IMAGE_KEY, LABEL_KEY, TFRecordShards
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

AUTOTUNE = tf.data.AUTOTUNE
#: decode_roofline first, so the limit is measured before the variants compared with it
VARIANTS = (
    "decode_roofline",
    "baseline",
    "parallel_map",
    "decode_and_crop",
    "cache_after_batch",
    "cache_decoded",
    "vectorized",
    "tfrecord",
)
#: the best pipeline that still decodes every image every epoch (cache_decoded skips the
#: decode, so it only applies while the decoded dataset fits in memory)
BEST = "parallel_map"
#: records a TFRecord pipeline shuffles among (the JPEG-path variants shuffle every path)
RECORD_SHUFFLE_BUFFER = 1024
DEFAULT_OPTIMIZATIONS = True
MAP_PARALLELIZATION = False


@dataclass(frozen=True)
class PipelineSpec:
    """What every variant shares: batch size, shuffling, and the variant-specific inputs.

    ``cache_batches`` bounds ``cache_after_batch``: the number of batches it may put in
    its cache, which must exceed the batches the bench will ever pull (see
    :func:`cache_bound`). ``shards`` are the TFRecord files the ``tfrecord`` variant reads.
    """

    batch: int
    shuffle_buffer: int
    seed: int = 0
    cache_batches: int = 0
    shards: TFRecordShards | None = None


@dataclass
class Pipeline:
    """A built variant: its dataset, the parameters to record, and how much to warm it."""

    variant: str
    dataset: tf.data.Dataset
    params: dict[str, Any]
    warm_batches: int = 2
    warmed: int = 0

    def warm(self, min_seconds: float = 0.0, max_batches: int | None = None) -> Iterator[Any]:
        """An iterator over the pipeline, past its start-up (buffers filled, caches built).

        Pulls at least :attr:`warm_batches`, then keeps pulling until ``min_seconds``
        have passed (autotuning settles) or ``max_batches`` were pulled, whichever
        comes first; :attr:`warmed` says how many it pulled.
        """
        limit = max(self.warm_batches, max_batches if max_batches is not None else 1 << 62)
        iterator: Iterator[Any] = iter(self.dataset)
        start = time.perf_counter()
        take_batches(iterator, self.warm_batches)
        self.warmed = self.warm_batches
        while self.warmed < limit and time.perf_counter() - start < min_seconds:
            next(iterator)
            self.warmed += 1
        return iterator


def take_batches(iterator: Iterator[Any], count: int) -> Any:
    """Pull ``count`` batches (one timed call); returns the last."""
    batch = None
    for _ in range(count):
        batch = next(iterator)
    return batch


def cache_bound(warm_batches: int, calls: int, batches_per_call: int) -> int:
    """Batches ``cache_after_batch`` may cache: more than a bench pulls, so it never replays.

    ``warm_batches`` is the most :meth:`Pipeline.warm` may pull, ``calls`` the warm-up
    and measured calls, each pulling ``batches_per_call``.
    """
    if min(warm_batches, calls, batches_per_call) < 0 or calls * batches_per_call == 0:
        raise ValueError("cache_bound needs a positive number of calls and batches per call")
    return warm_batches + calls * batches_per_call + 1


def options() -> tf.data.Options:
    """The tf.data options every variant runs with (see the module docstring)."""
    opts = tf.data.Options()
    opts.experimental_optimization.apply_default_optimizations = DEFAULT_OPTIMIZATIONS
    opts.experimental_optimization.map_parallelization = MAP_PARALLELIZATION
    opts.autotune.enabled = True
    return opts


def _paths(data: ImageDataset) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(([str(p) for p in data.files], list(data.labels)))


def _common(spec: PipelineSpec, order: str, **params: Any) -> dict[str, Any]:
    return {
        "order": order,
        "batch": spec.batch,
        "shuffle_buffer": spec.shuffle_buffer,
        "shuffle_seed": spec.seed,
        "tfdata_default_optimizations": DEFAULT_OPTIMIZATIONS,
        "tfdata_map_parallelization": MAP_PARALLELIZATION,
        "tfdata_autotune": True,
        "host_cores": host_cores(),
        "deterministic": True,
        **params,
    }


def baseline(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """The study's order: shuffle -> map -> repeat -> batch -> prefetch, map sequential."""
    ds = (
        _paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .map(preprocess)
        .repeat()
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    return Pipeline(
        "baseline",
        ds,
        _common(
            spec,
            "shuffle -> map -> repeat -> batch -> prefetch",
            num_parallel_calls=1,
            prefetch="AUTOTUNE",
        ),
    )


def parallel_map(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """shuffle -> repeat -> map(num_parallel_calls=AUTOTUNE) -> batch -> prefetch."""
    ds = (
        _paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .repeat()
        .map(preprocess, num_parallel_calls=AUTOTUNE)
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    return Pipeline(
        "parallel_map",
        ds,
        _common(
            spec,
            "shuffle -> repeat -> map -> batch -> prefetch",
            num_parallel_calls="AUTOTUNE",
            prefetch="AUTOTUNE",
        ),
    )


def decode_and_crop(data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """:func:`parallel_map` with the random crop fused into the decode (decode_and_crop_jpeg)."""
    ds = (
        _paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .repeat()
        .map(preprocess_fused, num_parallel_calls=AUTOTUNE)
        .batch(spec.batch)
        .prefetch(AUTOTUNE)
    )
    return Pipeline(
        "decode_and_crop",
        ds,
        _common(
            spec,
            "shuffle -> repeat -> map(decode_and_crop) -> batch -> prefetch",
            num_parallel_calls="AUTOTUNE",
            prefetch="AUTOTUNE",
            why="decodes only the crop window's part of each JPEG, so it does less work than "
            "the full decode the roofline measures and can pass 100% of it",
        ),
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
        _paths(data)
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
        _common(
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
        _paths(data)
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
        _common(
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
        _paths(data)
        .shuffle(spec.shuffle_buffer, seed=spec.seed)
        .repeat()
        .batch(spec.batch)
        .map(preprocess_batch, num_parallel_calls=AUTOTUNE)
        .prefetch(AUTOTUNE)
    )
    return Pipeline(
        "vectorized",
        ds,
        _common(
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
    params = _common(
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
    params = _common(
        spec,
        "repeat -> map(decode) -> batch -> prefetch",
        num_parallel_calls=cores,
        prefetch="AUTOTUNE",
        deterministic=False,
        source="JPEG bytes in memory",
    )
    params["shuffle_buffer"] = 0
    return Pipeline("decode_roofline", ds, params)


BUILDERS: dict[str, Callable[[ImageDataset, PipelineSpec], Pipeline]] = {
    "decode_roofline": decode_roofline,
    "baseline": baseline,
    "parallel_map": parallel_map,
    "decode_and_crop": decode_and_crop,
    "cache_after_batch": cache_after_batch,
    "cache_decoded": cache_decoded,
    "vectorized": vectorized,
    "tfrecord": tfrecord,
}


def build(variant: str, data: ImageDataset, spec: PipelineSpec) -> Pipeline:
    """Build ``variant`` over ``data``; an unknown name is a one-line error listing the known."""
    try:
        builder = BUILDERS[variant]
    except KeyError:
        raise PerfsuiteError(
            f"unknown tf.data variant {variant!r}; choose one of {', '.join(VARIANTS)}"
        ) from None
    if spec.batch < 1 or spec.shuffle_buffer < 0:
        raise PerfsuiteError(
            f"tf.data variant {variant}: batch must be >= 1 and shuffle_buffer "
            f">= 0, got batch={spec.batch}, shuffle_buffer={spec.shuffle_buffer}"
        )
    pipeline = builder(data, spec)
    pipeline.dataset = pipeline.dataset.with_options(options())
    return pipeline
