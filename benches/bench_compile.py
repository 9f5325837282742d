"""torch.compile recompiles: eager vs compile vs dynamic=True vs mark_dynamic, per input shape."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("torch", reason="needs PyTorch: pip install 'perfsuite[torch]'")

from perfsuite.bench.measure import Perf
from perfsuite.bench.traces import TraceCounter
from perfsuite.data.recipes import Recipe
from perfsuite.workloads import compile_models as cm

pytestmark = pytest.mark.torch


@pytest.fixture(scope="session")
def compile_toolchain() -> None:
    """Skip where torch.compile cannot build kernels (checked once, with a tiny compile)."""
    problem = cm.toolchain_problem()
    if problem is not None:
        pytest.skip(problem)


# Each round compiles afresh: 1 / 5 / 7 rounds by scale unless --perf-rounds says.
@pytest.mark.perf(
    group="compile_{kind}_{shapes}",
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
    run = cm.CompileRun(kind, mode, recipe.shapes(), perf.pick(smoke=8, default=8, full=16))
    # One untimed call first, counted through trace_counter: it fills inductor's on-disk
    # caches, so every timed call (fresh dynamo state, every compilation paid) is alike.
    with trace_counter.track() as tally:
        run.run(*run.setup()[0])
    perf.use_dataset(recipe)
    perf.measure(
        run.run,
        setup=run.setup,
        items=steps,
        unit="steps",
        params=run.params,
    )
    graphs = run.finish()
    assert graphs[0] == tally.value, f"trace_counter saw {tally.value}, the run {graphs[0]}"
    assert len(set(graphs)) == 1, f"graph counts differ between calls: {graphs}"
    if mode != "eager":
        perf.note(recompiles=graphs[-1] - 1)
    problem = cm.compile_problem(mode, graphs[-1], recipe.shapes())
    assert problem is None, problem
