"""tf.data pipeline variants against the host's JPEG-decode roofline, and end-to-end training."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorflow", reason="needs TensorFlow: pip install 'perfsuite[tf]'")

from perfsuite.bench.measure import Perf
from perfsuite.config import PerfConfig
from perfsuite.data.datasets import ImageDataset
from perfsuite.data.tfrecords import materialize_shards
from perfsuite.workloads import tf_models
from perfsuite.workloads import tfdata_pipelines as pipes

pytestmark = pytest.mark.tf


def _warmed(
    perf: Perf,
    image_dataset: ImageDataset,
    data_dir: Path,
    variant: str,
    batch: int,
    batches_per_call: int,
) -> tuple[pipes.Pipeline, Any]:
    """Build ``variant`` and warm it: a few batches, then until autotuning has settled."""
    warm_max = pipes.WARM[perf.scale][1]
    calls = perf.settings.rounds + perf.settings.warmup_rounds
    spec = pipes.PipelineSpec(
        batch=batch,
        shuffle_buffer=image_dataset.count,  # shuffles paths, before any decode: cheap
        seed=20211104,
        cache_batches=pipes.cache_bound(warm_max, calls, batches_per_call),
        shards=(
            materialize_shards(image_dataset, data_dir, perf.pick(smoke=2, default=4, full=16))
            if variant == "tfrecord"
            else None
        ),
    )
    pipeline = pipes.build(variant, image_dataset, spec)
    return pipeline, pipes.warmed(pipeline, perf.scale)


@pytest.mark.perf(group="tfdata", baseline="baseline", roofline="decode_roofline")
@pytest.mark.parametrize("variant", pipes.VARIANTS)
def test_tfdata(
    perf: Perf, image_dataset: ImageDataset, perf_settings: PerfConfig, variant: str
) -> None:
    batch, batches = perf.pick(smoke=8, default=32, full=64), perf.pick(smoke=2, default=4, full=4)
    pipeline, iterator = _warmed(
        perf, image_dataset, perf_settings.data_dir, variant, batch, batches
    )
    perf.measure(
        lambda: pipes.take_batches(iterator, batches),
        items=batch * batches,
        dataset=image_dataset,
        params={**pipeline.params, "batches_per_call": batches},
    )


@pytest.mark.perf(group="tfdata_e2e", baseline="baseline")
@pytest.mark.parametrize("variant", ["baseline", pipes.BEST])
def test_tfdata_e2e(
    perf: Perf, image_dataset: ImageDataset, perf_settings: PerfConfig, variant: str
) -> None:
    batch, steps = perf.pick(smoke=8, default=32, full=64), perf.pick(smoke=2, default=3, full=8)
    name = perf.pick(smoke="small_cnn", default="small_cnn", full="mobilenet_v2")
    # The step is traced before the pipeline starts, so no batches pile up meanwhile.
    loop = tf_models.TrainLoop(tf_models.classifier(name, image_dataset.num_classes), batch, steps)
    pipeline, loop.iterator = _warmed(
        perf, image_dataset, perf_settings.data_dir, variant, batch, steps
    )
    perf.measure(
        loop,
        items=batch * steps,
        dataset=image_dataset,
        device=tf_models.model_device(),
        params={
            "pipeline": pipeline.params,
            "model": name,
            "batch": batch,
            "steps_per_call": steps,
            "optimizer": "adam",
        },
    )
    perf.count("traces", loop.traces)
    assert loop.traces == 1, f"the training step retraced while timed ({loop.traces} traces)"
    calls = perf.timings()
    # empty when timing is disabled (--benchmark-disable); in a side of perfsuite ab a
    # timing is a block's round over its calls, with untimed calls between blocks, so
    # the loop's last waits are not one per timing: the share is not taken there
    if calls and perf.lockstep is None:
        share = tf_models.input_bound_share(loop.waits[-len(calls) :], calls)
        perf.note(
            input_bound_share=round(share, 4),
            step_time_ms=round(statistics.median(calls) / steps * 1000, 3),
        )
