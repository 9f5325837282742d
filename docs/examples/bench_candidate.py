"""Candidate: a parallel map that may reorder elements (deterministic=False) vs parallel_map."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow", reason="needs TensorFlow: pip install 'perfsuite[tf]'")

from perfsuite.bench.measure import Perf
from perfsuite.workloads import tfdata_pipelines as pipes


def candidate(data: pipes.ImageDataset, spec: pipes.PipelineSpec) -> pipes.Pipeline:
    """The change under test: fast elements may overtake slow ones in the parallel map."""
    ds = pipes.paths(data).shuffle(spec.shuffle_buffer, seed=spec.seed).repeat()
    ds = ds.map(pipes.preprocess, num_parallel_calls=pipes.AUTOTUNE, deterministic=False)
    return pipes.Pipeline("candidate", ds.batch(spec.batch).prefetch(pipes.AUTOTUNE), {})


@pytest.mark.tf
@pytest.mark.perf(baseline="parallel_map", roofline="decode_roofline")  # group: the file's name
@pytest.mark.parametrize("variant", ["decode_roofline", "parallel_map", "candidate"])
def test_candidate(perf: Perf, image_dataset: pipes.ImageDataset, variant: str) -> None:
    spec = pipes.PipelineSpec(perf.pick(smoke=8, default=32, full=64), image_dataset.count, seed=1)
    pipeline = pipes.build(variant, image_dataset, spec, extra={"candidate": candidate})
    pipes.warmed(pipeline, perf.scale)  # untimed, as bench_tfdata warms: autotuning settles
    params = {"batch": spec.batch, "deterministic": variant != "candidate"}
    perf.measure(
        lambda: pipeline.take(4), items=4 * spec.batch, dataset=image_dataset, params=params
    )
