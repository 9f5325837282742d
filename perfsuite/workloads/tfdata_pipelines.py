"""The tf.data study's pipelines: pick a variant by name and build it with the shared options.

The variants live in :mod:`perfsuite.workloads.tfdata_variants`, what they share (the
spec, the built pipeline, the options and the warm-up) in
:mod:`perfsuite.workloads.tfdata_spec`; both are re-exported here, so a bench needs one
import::

    pipeline = pipes.build("parallel_map", image_dataset, pipes.PipelineSpec(batch=32, ...))
    iterator = pipeline.warm(min_seconds=1.0, max_batches=32)
"""

from __future__ import annotations

from collections.abc import Callable

from perfsuite.data.datasets import ImageDataset
from perfsuite.errors import PerfsuiteError
from perfsuite.workloads.tfdata_spec import (
    DEFAULT_OPTIMIZATIONS,
    MAP_PARALLELIZATION,
    Pipeline,
    PipelineSpec,
    cache_bound,
    common_params,
    options,
    take_batches,
)
from perfsuite.workloads.tfdata_variants import (
    RECORD_SHUFFLE_BUFFER,
    baseline,
    cache_after_batch,
    cache_decoded,
    decode_and_crop,
    decode_roofline,
    parallel_map,
    parse_record,
    preprocess_batch,
    preprocess_record,
    tfrecord,
    vectorized,
)

__all__ = [
    "BEST",
    "BUILDERS",
    "DEFAULT_OPTIMIZATIONS",
    "MAP_PARALLELIZATION",
    "RECORD_SHUFFLE_BUFFER",
    "VARIANTS",
    "Pipeline",
    "PipelineSpec",
    "build",
    "cache_bound",
    "common_params",
    "options",
    "parse_record",
    "preprocess_batch",
    "preprocess_record",
    "take_batches",
]

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
