"""torch.compile recompiles: eager vs compile vs dynamic=True vs mark_dynamic, per input shape."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("torch", reason="needs PyTorch: pip install 'perfsuite[torch]'")

import torch

from perfsuite.bench.devices import ON_CPU_AND_GPU
from perfsuite.bench.measure import Perf
from perfsuite.bench.traces import TraceCounter
from perfsuite.data.recipes import Recipe
from perfsuite.workloads import compile_models as cm

pytestmark = pytest.mark.torch


@pytest.fixture
def compile_toolchain(torch_device: torch.device) -> None:
    """Skip where torch.compile cannot build kernels for the device (checked once per
    device type, with a tiny compile)."""
    problem = cm.toolchain_problem(torch_device.type)
    if problem is not None:
        pytest.skip(problem)


# Each round compiles afresh: 1 / 5 / 7 rounds by scale (at least 10 / 12 on a GPU)
# unless --perf-rounds says.
@ON_CPU_AND_GPU
@pytest.mark.perf(
    group="compile_{kind}_{shapes}_{torch_device}",
    baseline="eager",
    default_rounds={"smoke": 1, "default": 5, "full": 7},
    warmup_rounds=0,
)
@pytest.mark.parametrize("shapes", ["fixed", "variable"])
@pytest.mark.parametrize("kind", cm.KINDS)
@pytest.mark.parametrize("variant", cm.MODES)
def test_compile(
    perf: Perf,
    trace_counter: TraceCounter,
    dataset_recipe: Callable[..., Recipe],
    torch_device: torch.device,
    compile_toolchain: None,
    variant: str,
    kind: str,
    shapes: str,
) -> None:
    mode = variant
    steps = perf.pick(smoke=3, default=8, full=24)
    recipe = dataset_recipe("variable-shapes" if shapes == "variable" else "fixed-224", count=steps)
    # Batch 8 keeps every recipe shape past the size threshold inductor guards a long
    # reduction on (compile_models' docstring), so the counts show the shape rules alone.
    batch = perf.pick(smoke=8, default=8, full=16)
    run = cm.CompileRun(kind, mode, recipe.shapes(), batch, device=torch_device)
    # One untimed call first, counted through trace_counter: it fills inductor's on-disk
    # caches (this session's own on a GPU), so every timed call (fresh dynamo state, every
    # compilation paid) is alike, in every session.
    with trace_counter.track() as tally:
        run.run(*run.setup()[0])
    perf.use_dataset(recipe)
    perf.measure(
        run.run,
        setup=run.setup,
        items=steps,
        unit="steps",
        device=torch_device,
        params=run.params,
    )
    graphs = run.finish()
    assert graphs[0] == tally.value, f"trace_counter saw {tally.value}, the run {graphs[0]}"
    assert len(set(graphs)) == 1, f"graph counts differ between calls: {graphs}"
    if mode != "eager":
        perf.note(recompiles=graphs[-1] - 1)
    problem = cm.compile_problem(mode, graphs[-1], recipe.shapes())
    assert problem is None, problem
