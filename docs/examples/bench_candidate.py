"""Candidate: a parallel map that may reorder elements (deterministic=False) vs parallel_map."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("tensorflow", reason="needs TensorFlow: pip install 'perfsuite[tf]'")

import tensorflow as tf

from perfsuite.workloads import tfdata_pipelines as pipes
from perfsuite.workloads.tf_image import preprocess

pytestmark = pytest.mark.tf


def candidate(data: Any, spec: pipes.PipelineSpec) -> Any:
    """The change under test: fast elements may overtake slow ones in the parallel map."""
    paths = tf.data.Dataset.from_tensor_slices(([str(p) for p in data.files], list(data.labels)))
    ds = paths.shuffle(spec.shuffle_buffer, seed=spec.seed).repeat()
    ds = ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
    return ds.batch(spec.batch).prefetch(tf.data.AUTOTUNE).with_options(pipes.options())


@pytest.mark.parametrize("variant", ["decode_roofline", "parallel_map", "candidate"])
def test_candidate(perf: Any, image_dataset: Any, variant: str) -> None:
    batch, batches = perf.pick(smoke=8, default=32, full=64), 4
    spec = pipes.PipelineSpec(batch=batch, shuffle_buffer=image_dataset.count, seed=1)
    if variant == "candidate":
        iterator = iter(candidate(image_dataset, spec))
    else:
        iterator = iter(pipes.build(variant, image_dataset, spec).dataset)
    perf.measure(
        lambda: pipes.take_batches(iterator, batches),  # warm-up rounds run first, untimed
        items=batch * batches,
        group="candidate",
        variant=variant,
        baseline=variant == "parallel_map",
        roofline=variant == "decode_roofline",
        dataset=image_dataset,
        params={"batch": batch, "deterministic": variant != "candidate"},
    )
