"""NVIDIA DALI on CPU and GPU against a PyTorch DataLoader: preprocessing, threads, training."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs PyTorch: pip install 'perfsuite[torch]'")
pytest.importorskip("nvidia.dali", reason="needs NVIDIA DALI: pip install 'perfsuite[dali]'")

import torch

from perfsuite.bench.machine import usable_cpus
from perfsuite.bench.measure import Perf
from perfsuite.config import PerfConfig
from perfsuite.data.datasets import ImageDataset
from perfsuite.options import Device
from perfsuite.workloads import dali_pipelines as dali
from perfsuite.workloads import torch_models as tm

pytestmark = [pytest.mark.dali, pytest.mark.torch]

BASELINE = "torch_dataloader"
VARIANTS = ["dali_cpu", pytest.param("dali_gpu", marks=pytest.mark.gpu), BASELINE]
SEED = 20211104
Batches = Iterator[tuple[torch.Tensor, torch.Tensor]]


def _loader(
    request: pytest.FixtureRequest,
    variant: str,
    dataset: ImageDataset,
    kind: tm.Kind,
    batch: int,
    *,
    threads: int | None = None,
    pin_memory: bool = False,
) -> tuple[Batches, dict[str, Any]]:
    """``variant``'s endless (images, labels) batches, warmed by two batches, and its params."""
    cores = usable_cpus()
    if variant == BASELINE:
        loader = tm.torch_loader(
            dataset, kind, batch_size=batch, workers=cores, seed=SEED, pin_memory=pin_memory
        )
        batches: Batches = tm.endless(loader)
        params = tm.loader_params(batch, cores, kind)
    else:
        device: dali.Device = "gpu" if variant == "dali_gpu" else "cpu"
        if device == "gpu":
            request.getfixturevalue("gpu")  # skips where there is none
        pipe = dali.build_pipeline(
            dataset,
            kind,
            device=device,
            batch_size=batch,
            num_threads=threads or cores,
            device_id=0 if device == "gpu" else None,  # the first visible CUDA device
            seed=SEED,
        )
        batches = dali.as_pairs(dali.torch_iterator(pipe))
        params = dali.pipeline_params(kind, device, batch, threads or cores)
    for _ in range(2):
        images, _labels = next(batches)
    if variant == "dali_gpu":  # decoded and resized on the GPU, and left there
        assert images.device.type == "cuda", images.device
    return batches, params


def _take(batches: Batches, n: int) -> torch.Tensor:
    images = torch.empty(0)
    for _ in range(n):
        images, _labels = next(batches)
    return images


def _measure_preprocessing(
    perf: Perf,
    request: pytest.FixtureRequest,
    dataset: ImageDataset,
    kind: tm.Kind,
    variant: str,
    threads: int | None = None,
) -> None:
    batch = perf.pick(smoke=8, default=16, full=64)
    calls = perf.pick(smoke=2, default=2, full=4)
    batches, params = _loader(request, variant, dataset, kind, batch, threads=threads)
    perf.measure(  # on the GPU, synchronized around every round and its clocks recorded
        lambda: _take(batches, calls),
        items=batch * calls,
        dataset=dataset,
        device="gpu" if variant == "dali_gpu" else "cpu",
        params={**params, "batches_per_call": calls},
    )


@pytest.mark.perf(group="dali_resize", baseline=BASELINE)
@pytest.mark.parametrize("variant", VARIANTS)
def test_dali_resize(
    perf: Perf, request: pytest.FixtureRequest, image_dataset: ImageDataset, variant: str
) -> None:
    _measure_preprocessing(perf, request, image_dataset, "resize", variant)


@pytest.mark.perf(group="dali_rrc", baseline=BASELINE)
@pytest.mark.parametrize("variant", VARIANTS)
def test_dali_rrc(
    perf: Perf, request: pytest.FixtureRequest, image_dataset: ImageDataset, variant: str
) -> None:
    _measure_preprocessing(perf, request, image_dataset, "rrc", variant)


@pytest.mark.perf(group="dali_threads", baseline="threads_1")  # variants: the parametrize ids
@pytest.mark.parametrize("threads", ["1", "2", "all"], ids=lambda t: f"threads_{t}")
def test_dali_threads(
    perf: Perf, request: pytest.FixtureRequest, image_dataset: ImageDataset, threads: str
) -> None:
    cores = usable_cpus()
    count = cores if threads == "all" else int(threads)
    if threads == "all" and cores <= 2:
        pytest.skip(f"all usable cores = {cores}: already measured as threads_{cores}")
    _measure_preprocessing(perf, request, image_dataset, "resize", "dali_cpu", threads=count)


def _train_device(settings: PerfConfig) -> str:
    """The GPU where there is one (and --perf-device allows it), else the CPU."""
    if settings.device is not Device.CPU and torch.cuda.is_available():
        return "cuda:0"
    return "cpu"


# A CPU training step takes about a second on the 2-core machine: 7 rounds below full
# scale (the least a rank test decides on) unless --perf-rounds says otherwise.
@pytest.mark.perf(
    group="dali_train",
    baseline=BASELINE,
    default_rounds={"smoke": 7, "default": 7},
    warmup_rounds=1,
)
@pytest.mark.parametrize("variant", VARIANTS)
def test_dali_train(
    perf: Perf,
    request: pytest.FixtureRequest,
    image_dataset: ImageDataset,
    perf_settings: PerfConfig,
    variant: str,
) -> None:
    device = (
        request.getfixturevalue("gpu").torch_device
        if variant == "dali_gpu"
        else _train_device(perf_settings)
    )
    batch = perf.pick(smoke=4, default=8, full=32)
    steps = perf.pick(smoke=1, default=1, full=20)
    batches, params = _loader(
        request, variant, image_dataset, "resize", batch, pin_memory=device != "cpu"
    )
    torch.manual_seed(SEED)
    trainer = tm.Trainer(tm.SmallCNN(tm.RESIZE, image_dataset.num_classes), device)
    trainer.steps(batches, 1)  # first step: optimizer state, kernel selection
    perf.measure(
        lambda: trainer.steps(batches, steps),
        items=batch * steps,
        dataset=image_dataset,
        device=device,
        params={
            "pipeline": params,
            "model": "small_cnn",
            "steps_per_call": steps,
            "optimizer": "Adam(lr=0.01)",
            "train_device": device,
        },
    )
    if variant == "dali_gpu":
        assert trainer.last_input_device is not None
        assert trainer.last_input_device.type == "cuda", trainer.last_input_device
    if perf.timings():
        perf.note(step_s=round(statistics.median(perf.timings()) / steps, 6))
