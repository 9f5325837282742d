"""Cold vs warm: first-call latency against steady-state latency in TF, PyTorch and DALI."""

# How cold and warm are reported. Each case is a group with a `cold` variant (the
# baseline) and a `warm` one, both measured with perf.measure, so each keeps its own
# distribution of raw samples and each is gated on its own. A `cold` round times the
# first call on an object that has never been called: a fresh model and function built
# in `setup` (untimed), or a fresh process started, imported and loaded beforehand
# (untimed; the child reports those times, which are noted). A `warm` round times a
# steady call on one object warmed before timing. With one call per round on both
# sides, the summary's "speedup" of `warm` over `cold` is the cold/warm latency ratio
# (speedup = warm items/s / cold items/s = cold seconds / warm seconds).
#
# Cold samples in this process run after one untimed warm-up sample, so per-process
# one-offs (thread pools, the first kernel ever run) are excluded and every sample
# measures the same per-object cost; the SavedModel and CUDA cases measure per-process
# cold start, one fresh process per sample, after one untimed fresh process that fills
# what outlives a process (the page cache, the CUDA driver's JIT cache), so every
# session's timed processes start from the same state.
#
# The torch cases run on each device (`torch_device`: the group names it); on the GPU
# perf.measure synchronizes around every round and records the GPU's clocks.

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from perfsuite.bench.devices import ON_CPU_AND_GPU
from perfsuite.bench.measure import Perf
from perfsuite.bench.traces import TraceCounter, tracing_count
from perfsuite.data.datasets import ImageDataset
from perfsuite.harness import coldstart
from perfsuite.workloads import swap_weights as sw
from perfsuite.workloads import warmup_cases as wc

BATCH = 1  # one image per call, as in the study's viewer
SIZE = wc.INPUT_SIZE
SHAPE = (BATCH, SIZE, SIZE, 3)
MODEL = {"model": "small_cnn", "input": f"{BATCH}x{SIZE}x{SIZE}x3"}


#: cold rounds in this process: fresh objects, after one untimed warm-up sample (7: the
#: least a rank test decides on); --perf-rounds and a perf(rounds=...) marker win
COLD = pytest.mark.perf(default_rounds={"smoke": 3, "default": 7, "full": 15}, warmup_rounds=1)
#: cold rounds in fresh processes, after one untimed process. Each imports its framework
#: (seconds of CPU); default scale takes 7, the fewest a rank test decides on and an
#: interval states its bound from (perfsuite.verdict.stats.MIN_RANK_SAMPLES); on a GPU,
#: perfsuite.config.GPU_MIN_ROUNDS
PROCESSES = pytest.mark.perf(default_rounds={"smoke": 2, "default": 7, "full": 10}, warmup_rounds=1)


def _measure_case(
    perf: Perf,
    call: Callable[..., Any],
    fresh: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]] | None,
    params: dict[str, Any],
    device: object = "cpu",
) -> None:
    """``fresh`` given: cold rounds, each calling ``call`` once on a new object from ``fresh``."""
    perf.measure(
        call,
        items=BATCH,
        device=device,
        setup=fresh,
        params={**params, "sample": "fresh object" if fresh is not None else "steady call"},
    )


@pytest.mark.tf
@pytest.mark.perf(group="warmup_tf_function", baseline="cold")
@pytest.mark.parametrize(
    "variant", [pytest.param("cold", marks=COLD), pytest.param("prepared", marks=COLD), "warm"]
)
def test_warmup_tf_function(perf: Perf, variant: str) -> None:
    x = wc.tf_input(BATCH, SIZE)

    def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
        fn = wc.fresh_tf_function(SIZE)  # a new Keras model and a never-traced tf.function
        if variant == "prepared":
            wc.tf_prepare(fn, SHAPE)  # study 003: one call on zeros at load time
        return (fn,), {}

    params = {**MODEL, "wrapper": "tf.function"}
    if variant == "warm":
        fn = wc.fresh_tf_function(SIZE)
        wc.tf_call(fn, x)
        _measure_case(perf, lambda: wc.tf_call(fn, x), None, params)
    else:
        _measure_case(
            perf,
            lambda fn: wc.tf_call(fn, x),
            fresh,
            {**params, "prepare": variant == "prepared"},
        )


@pytest.fixture(scope="session")
def savedmodel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small CNN saved once per session as a TF SavedModel."""
    return wc.export_savedmodel(tmp_path_factory.mktemp("warmup") / "small_cnn", SIZE)


def _drive(
    procs: list[coldstart.ColdProcess], done: list[coldstart.ColdTimings]
) -> tuple[Callable[[], tuple[tuple[Any, ...], dict[str, Any]]], Callable[[], None]]:
    """``setup`` for one round per process (finish the last, load the next) and a finisher."""
    pending: Iterator[coldstart.ColdProcess] = iter(procs)
    current: list[coldstart.ColdProcess] = []

    def finish() -> None:
        if current:
            proc = current.pop()
            proc.steady()  # its steady calls run only now, never beside another's timed call
            done.append(proc.timings())
            proc.close()

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        finish()
        proc = next(pending)
        proc.load()
        current.append(proc)
        return (proc,), {}

    return setup, finish


def _measure_processes(
    perf: Perf, target: str, args: list[str], params: dict[str, Any], device: str = "cpu"
) -> None:
    """Cold rounds in fresh processes, started together; each round times its first call."""
    n = perf.settings.warmup_rounds + perf.settings.rounds  # one process per round
    steady = perf.pick(smoke=3, default=5, full=10)
    procs = coldstart.start_many(n, target, args, steady=steady)
    done: list[coldstart.ColdTimings] = []
    setup, finish = _drive(procs, done)
    try:
        # The parent's clock spans the child's first call plus one pipe round trip
        # (well under a millisecond); the child's own figure is noted as child_first_s.
        perf.measure(
            lambda proc: proc.first(),
            items=BATCH,
            device=device,
            setup=setup,
            params={**params, "sample": "fresh process", "steady_calls": steady},
        )
        finish()
    finally:
        for proc in procs:
            proc.close()
    median = statistics.median
    perf.note(
        processes=len(done),
        child_import_s=round(median(t.import_s for t in done), 4),  # started together
        child_load_s=round(median(t.load_s for t in done), 4),
        child_first_s=round(median(t.first_s for t in done), 4),
        child_steady_s=round(median(t.steady_median or 0.0 for t in done), 5),
        child_cold_warm_ratio=round(median(t.cold_warm_ratio or 0.0 for t in done), 2),
    )


@pytest.mark.tf
@pytest.mark.perf(group="warmup_savedmodel", baseline="cold")
@pytest.mark.parametrize("variant", [pytest.param("cold", marks=PROCESSES), "warm"])
def test_warmup_savedmodel(perf: Perf, savedmodel_dir: Path, variant: str) -> None:
    params = {**MODEL, "format": "SavedModel (keras export)", "endpoint": "serve"}
    if variant == "cold":
        _measure_processes(
            perf,
            "perfsuite.workloads.warmup_cases:savedmodel_case",
            [str(savedmodel_dir), str(BATCH), str(SIZE)],
            params,
        )
        return
    _loaded, serve = wc.load_savedmodel(savedmodel_dir)
    x = wc.tf_input(BATCH, SIZE)
    wc.tf_call(serve, x)
    _measure_case(perf, lambda: wc.tf_call(serve, x), None, params)


@pytest.mark.torch
@ON_CPU_AND_GPU
@pytest.mark.perf(group="warmup_torch_{torch_device}", baseline="cold")
@pytest.mark.parametrize("variant", [pytest.param("cold", marks=COLD), "warm"])
def test_warmup_torch(perf: Perf, torch_device: Any, variant: str) -> None:
    x = wc.torch_input(BATCH, SIZE, torch_device)
    params = {**MODEL, "mode": "eager, inference_mode", "device": str(torch_device)}
    if variant == "cold":
        _measure_case(
            perf,
            lambda m: wc.torch_forward(m, x),
            lambda: ((wc.fresh_torch_model(SIZE, device=torch_device),), {}),
            params,
            torch_device,
        )
        return
    model = wc.fresh_torch_model(SIZE, device=torch_device)
    wc.torch_forward(model, x)
    _measure_case(perf, lambda: wc.torch_forward(model, x), None, params, torch_device)


@pytest.mark.torch
@pytest.mark.gpu
@pytest.mark.perf(group="warmup_torch_cuda", baseline="cold")
@pytest.mark.parametrize(
    "variant",
    [
        pytest.param("cold", marks=PROCESSES),
        pytest.param("cold_cudnn_benchmark", marks=PROCESSES),
        "warm",
        "warm_cudnn_benchmark",
    ],
)
def test_warmup_torch_cuda(perf: Perf, request: pytest.FixtureRequest, variant: str) -> None:
    import torch

    gpu = request.getfixturevalue("gpu")
    benchmark = variant.endswith("cudnn_benchmark")
    params = {**MODEL, "cudnn_benchmark": benchmark}
    if variant.startswith("cold"):  # the process's first CUDA call: context, cuDNN, kernels
        _measure_processes(
            perf,
            "perfsuite.workloads.warmup_cases:torch_cuda_case",
            [str(BATCH), str(SIZE), "1" if benchmark else "0"],
            params,
            device="gpu",
        )
        return
    before = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = benchmark
    try:
        model = wc.fresh_torch_model(SIZE, device=gpu.torch_device)
        x = wc.torch_input(BATCH, SIZE, gpu.torch_device)
        wc.torch_forward(model, x, gpu.sync)
        _measure_case(perf, lambda: wc.torch_forward(model, x), None, params, device="gpu")
    finally:
        torch.backends.cudnn.benchmark = before


@pytest.mark.dali
@pytest.mark.perf(group="warmup_dali", baseline="cold")
@pytest.mark.parametrize("variant", [pytest.param("cold", marks=COLD), "warm"])
def test_warmup_dali(perf: Perf, image_dataset: ImageDataset, variant: str) -> None:
    from perfsuite.bench.machine import usable_cpus

    batch = perf.pick(smoke=8, default=16, full=32)
    threads = usable_cpus()
    params = {"pipeline": "decode, resize 240, cast (CPU)", "batch": batch, "threads": threads}

    def build() -> Any:
        return wc.dali_build_and_first_batch(image_dataset, batch_size=batch, num_threads=threads)

    if variant == "cold":  # pipeline build + first batch; the previous one is freed untimed
        live: list[Any] = []

        def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
            live.clear()
            return (), {}

        perf.measure(
            lambda: live.append(build()),
            items=batch,
            dataset=image_dataset,
            setup=fresh,
            params={**params, "sample": "fresh pipeline"},
        )
        live.clear()
        return
    pipe = build()
    perf.measure(
        pipe.run,
        items=batch,
        dataset=image_dataset,
        params={**params, "sample": "steady batch"},
    )


# swap_weights: N models of one architecture. `cold` loads each as its own fresh model
# (setup, untimed) and times its first request; `swap` times a model's first request on
# one function warmed once: assigning the model's weights, then the call. Each round is
# the next model's first request, cycling through the N; both keep what a server holding
# the N models keeps (cold: every model; swap: one model and the N weight sets).


def _swap_models(perf: Perf) -> int:
    n: int = perf.pick(smoke=2, default=4, full=8)
    return n


def _swap_notes(perf: Perf, models: int, held: int, kept: int, rss_before: int) -> None:
    """Memory held, in MB: the variables of the models kept loaded, the N weight sets kept
    in host memory, and the process's RSS growth from before the first model was built
    to after the last round (noisy: allocator caches and framework one-offs included)."""
    mb = 2**20
    calls = perf.timings()
    perf.note(
        models=models,
        variables_held_mb=round(held / mb, 1),
        weights_kept_mb=round(kept / mb, 1),
        rss_delta_mb=round((sw.rss_bytes() - rss_before) / mb, 1),
        **({"first_request_ms": round(statistics.median(calls) * 1000, 2)} if calls else {}),
    )


@pytest.mark.tf
@COLD  # both variants: each round is a model's first request, after one untimed sample
@pytest.mark.perf(group="swap_weights_tf", baseline="cold")
@pytest.mark.parametrize("variant", ["cold", "swap"])
def test_swap_weights_tf(perf: Perf, trace_counter: TraceCounter, variant: str) -> None:
    n = _swap_models(perf)
    weights = sw.tf_weight_sets(n, SIZE)
    model_bytes = sw.array_bytes(weights[0])
    x = wc.tf_input(BATCH, SIZE)
    rss_before = sw.rss_bytes()  # the framework loaded and the weight sets in memory
    turn = iter(range(1 << 30))
    params = {**MODEL, "models": n, "wrapper": "tf.function", "swap": "tf.Variable.assign"}
    if variant == "cold":
        live: dict[int, Any] = {}  # model index -> its function (and model), kept loaded

        def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
            index = next(turn) % n
            live[index] = sw.tf_cold_model(weights[index], SIZE)
            return (live[index],), {}

        _measure_case(perf, lambda fn: wc.tf_call(fn, x), fresh, params)
        traces = sum(tracing_count(fn) for fn in live.values())
        perf.count("traces", traces)  # one per model: each first request traces its own
        assert traces == len(live), f"{len(live)} cold models traced {traces} times"
        _swap_notes(perf, n, len(live) * model_bytes, n * model_bytes, rss_before)
        return
    server = sw.TfSwapServer(SIZE)
    with trace_counter.track(server.fn) as tally:
        server.prepare(SHAPE)
        perf.measure(
            lambda w: server.serve(w, x),
            items=BATCH,
            setup=lambda: ((weights[next(turn) % n],), {}),
            params={**params, "sample": "next model's weights assigned, then its first call"},
        )
    assert tally.value == 1, f"the shared function traced {tally.value} times over {n} models"
    _swap_notes(perf, n, model_bytes, n * model_bytes, rss_before)


@pytest.mark.torch
@COLD
@ON_CPU_AND_GPU
@pytest.mark.perf(group="swap_weights_torch_{torch_device}", baseline="cold")
@pytest.mark.parametrize("variant", ["cold", "swap"])
def test_swap_weights_torch(perf: Perf, torch_device: Any, variant: str) -> None:
    n = _swap_models(perf)
    states = sw.torch_state_dicts(n, SIZE)  # in host memory; a swap copies one to the device
    model_bytes = sw.array_bytes(list(states[0].values()))
    x = wc.torch_input(BATCH, SIZE, torch_device)
    rss_before = sw.rss_bytes()  # the framework loaded and the weight sets in memory
    turn = iter(range(1 << 30))
    params = {
        **MODEL,
        "models": n,
        "mode": "eager, inference_mode",
        "swap": "load_state_dict",
        "device": str(torch_device),
    }
    if variant == "cold":
        live: dict[int, Any] = {}

        def fresh() -> tuple[tuple[Any, ...], dict[str, Any]]:
            index = next(turn) % n
            live[index] = sw.torch_cold_model(states[index], SIZE, torch_device)
            return (live[index],), {}

        _measure_case(perf, lambda m: wc.torch_forward(m, x), fresh, params, torch_device)
        _swap_notes(perf, n, len(live) * model_bytes, n * model_bytes, rss_before)
        return
    server = sw.TorchSwapServer(SIZE, torch_device)
    wc.torch_forward(server.model, x)  # warmed once
    perf.measure(
        lambda s: server.serve(s, x),
        items=BATCH,
        device=torch_device,
        setup=lambda: ((states[next(turn) % n],), {}),
        params={**params, "sample": "next model's state loaded, then its first call"},
    )
    _swap_notes(perf, n, model_bytes, n * model_bytes, rss_before)
