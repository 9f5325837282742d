"""tf.data service: the tf.data bench's preprocessing offloaded to worker processes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from perfsuite.bench.measure import Perf
from perfsuite.config import PerfConfig, perf_config
from perfsuite.data.datasets import ImageDataset
from perfsuite.harness.consumer import BoundedConsumer
from perfsuite.harness.tfcluster import (
    Service,
    ServicePool,
    ServiceUnavailable,
    local_worker_counts,
)

pytest.importorskip("tensorflow", reason="needs TensorFlow: pip install 'perfsuite[tf]'")

from perfsuite.workloads import tfservice_worker as work

pytestmark = pytest.mark.tf

BATCH = 32
SEED = 7
COMPRESSION = None  # loopback: snappy (tf.data's "AUTO") would only add CPU work on both sides


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``MODE-wN`` for N local workers, 1 to the usable cores; ``MODE-remote`` for a dispatcher."""
    if {"mode", "workers"} <= set(metafunc.fixturenames):
        remote = perf_config(metafunc.config).tfdata_service is not None
        counts: tuple[int | None, ...] = (None,) if remote else local_worker_counts()
        cases = [(mode, n) for n in counts for mode in work.MODES]
        ids = [f"{mode}-{'remote' if n is None else f'w{n}'}" for mode, n in cases]
        metafunc.parametrize(("mode", "workers"), cases, ids=ids)


@pytest.fixture(scope="session")
def tfdata_service(perf_settings: PerfConfig) -> Iterator[ServicePool]:
    """The remote dispatcher, or local dispatcher and worker processes shared by these benches."""
    with ServicePool(perf_settings.tfdata_service, max_workers=max(local_worker_counts())) as pool:
        yield pool


def _connect(pool: ServicePool, workers: int | None) -> Service:
    """The service, or a skip naming why there is none here."""
    try:
        return pool.connect(workers)
    except ServiceUnavailable as exc:
        pytest.skip(str(exc))


def _measure(
    perf: Perf, consumer: BoundedConsumer, dataset: ImageDataset, params: dict[str, Any]
) -> None:
    steps = perf.pick(smoke=1, default=4, full=8)
    consumer.take(1)  # builds the iterator (and the service's job) before any round
    perf.measure(
        lambda: consumer.take(steps),
        items=BATCH * steps,
        dataset=dataset,
        params={"batch": BATCH, "batches_per_call": steps, **params},
    )


def _offload(
    perf: Perf,
    pool: ServicePool,
    dataset: ImageDataset,
    workers: int | None,
    mode: str,
    shipped: str,
) -> None:
    service = _connect(pool, workers)
    ds = work.service_pipeline(
        dataset.files,
        dataset.labels,
        batch=BATCH,
        seed=SEED,
        service=service.target,
        mode=mode,
        shipped=shipped,
        compression=COMPRESSION,
    )
    params = {
        "workers": service.workers,
        "processing_mode": mode,
        "shipped": shipped,
        "dispatcher": "local" if service.location == "local" else service.target,
        "compression": COMPRESSION,
    }
    with pool.consumer(service, lambda: iter(ds)) as consumer:
        _measure(perf, consumer, dataset, params)


@pytest.mark.perf(
    group="tfdata_service_workers", variant="local_parallel_map", baseline="local_parallel_map"
)
def test_local_parallel_map(perf: Perf, image_dataset: ImageDataset) -> None:
    ds = work.local_pipeline(image_dataset.files, image_dataset.labels, batch=BATCH, seed=SEED)
    params = {
        "workers": 0,
        "processing_mode": "in-process",
        "shipped": "float32",
        "dispatcher": "none",
    }
    with BoundedConsumer(lambda: iter(ds), what="in-process tf.data pipeline") as consumer:
        _measure(perf, consumer, image_dataset, params)


@pytest.mark.perf(group="tfdata_service_workers", baseline="local_parallel_map")
def test_workers(
    perf: Perf,
    image_dataset: ImageDataset,
    tfdata_service: ServicePool,
    mode: str,
    workers: int | None,
) -> None:
    _offload(perf, tfdata_service, image_dataset, workers, mode, "float32")


@pytest.mark.perf(group="tfdata_service_transfer", baseline="float32")
@pytest.mark.parametrize("shipped", ["float32", "uint8"])
def test_transfer(
    perf: Perf,
    image_dataset: ImageDataset,
    tfdata_service: ServicePool,
    perf_settings: PerfConfig,
    shipped: str,
) -> None:
    workers = None if perf_settings.tfdata_service else max(local_worker_counts())
    _offload(perf, tfdata_service, image_dataset, workers, "parallel_epochs", shipped)
