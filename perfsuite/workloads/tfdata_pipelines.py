"""The tf.data study's pipelines: pick a variant by name and build it with the shared options.

The variants live in :mod:`perfsuite.workloads.tfdata_variants`, what they share (the
spec, the built pipeline, the options and the warm-up) in
:mod:`perfsuite.workloads.tfdata_spec`; both, and the per-image work every variant does
(:func:`~perfsuite.workloads.tf_image.preprocess`) and the input type
(:class:`~perfsuite.data.datasets.ImageDataset`), are re-exported here, so a bench needs
one import::

    pipeline = pipes.build("parallel_map", image_dataset, pipes.PipelineSpec(batch=32, ...))
    pipes.warmed(pipeline, perf.scale)   # untimed: until autotuning settles
    perf.measure(lambda: pipeline.take(4), items=4 * 32, dataset=image_dataset)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from perfsuite.data.datasets import ImageDataset
from perfsuite.errors import PerfsuiteError, unknown_choice
from perfsuite.workloads.tf_image import preprocess
from perfsuite.workloads.tfdata_spec import (
    DEFAULT_OPTIMIZATIONS,
    MAP_PARALLELIZATION,
    WARM,
    Pipeline,
    PipelineSpec,
    cache_bound,
    common_params,
    options,
    take_batches,
    warmed,
)
from perfsuite.workloads.tfdata_variants import (
    AUTOTUNE,
    RECORD_SHUFFLE_BUFFER,
    baseline,
    cache_after_batch,
    cache_decoded,
    decode_and_crop,
    decode_roofline,
    parallel_map,
    parse_record,
    paths,
    preprocess_batch,
    preprocess_record,
    tfrecord,
    vectorized,
)

__all__ = [
    "AUTOTUNE",
    "BEST",
    "BUILDERS",
    "DEFAULT_OPTIMIZATIONS",
    "MAP_PARALLELIZATION",
    "RECORD_SHUFFLE_BUFFER",
    "VARIANTS",
    "WARM",
    "Builder",
    "ImageDataset",
    "Pipeline",
    "PipelineSpec",
    "build",
    "cache_bound",
    "common_params",
    "options",
    "parse_record",
    "paths",
    "preprocess",
    "preprocess_batch",
    "preprocess_record",
    "take_batches",
    "warmed",
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

Builder = Callable[[ImageDataset, PipelineSpec], Pipeline]
BUILDERS: dict[str, Builder] = {
    "decode_roofline": decode_roofline,
    "baseline": baseline,
    "parallel_map": parallel_map,
    "decode_and_crop": decode_and_crop,
    "cache_after_batch": cache_after_batch,
    "cache_decoded": cache_decoded,
    "vectorized": vectorized,
    "tfrecord": tfrecord,
}


def build(
    variant: str,
    data: ImageDataset,
    spec: PipelineSpec,
    *,
    extra: Mapping[str, Builder] | None = None,
) -> Pipeline:
    """Build ``variant`` over ``data`` with the suite's options; ``extra`` adds builders.

    ``build("candidate", data, spec, extra={"candidate": candidate})`` runs a candidate
    with the same options as the suite's variants. An unknown name is a one-line error
    listing the known.
    """
    builders = {**BUILDERS, **(extra or {})}
    try:
        builder = builders[variant]
    except KeyError:
        raise unknown_choice("tf.data variant", variant, builders) from None
    if spec.batch < 1 or spec.shuffle_buffer < 0:
        raise PerfsuiteError(
            f"tf.data variant {variant}: batch must be >= 1 and shuffle_buffer "
            f">= 0, got batch={spec.batch}, shuffle_buffer={spec.shuffle_buffer}"
        )
    pipeline = builder(data, spec)
    pipeline.dataset = pipeline.dataset.with_options(options())
    return pipeline
