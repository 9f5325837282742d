"""tf.function retracing: eager vs tf.function vs input_signature vs reduce_retracing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("tensorflow", reason="needs TensorFlow: pip install 'perfsuite[tf]'")

from perfsuite.bench.measure import Perf
from perfsuite.bench.traces import TraceCounter
from perfsuite.data.recipes import Recipe
from perfsuite.workloads import tf_models

pytestmark = pytest.mark.tf


def _model(perf: Perf, kind: str, shapes: str) -> str:
    """Small CNNs below full scale; at full, the study's VGG16, and ResNet152V2 where
    retracing hurt most (training on variable shapes)."""
    full = "resnet152v2" if (kind, shapes) == ("train", "variable") else "vgg16"
    return perf.pick(smoke="cnn-1", default="cnn-2", full=full)


# A fresh function per call, and RetracingRun warmed the process: no warm-up rounds.
# Full scale takes 7 rounds (the least a rank test decides on) unless --perf-rounds says.
@pytest.mark.perf(
    group="retracing_{kind}_{shapes}",
    baseline="eager",
    default_rounds={"full": 7},
    warmup_rounds=0,
)
@pytest.mark.parametrize("shapes", ["fixed", "variable"])
@pytest.mark.parametrize("kind", tf_models.KINDS)
@pytest.mark.parametrize("variant", tf_models.MODES)
def test_retracing(
    perf: Perf,
    trace_counter: TraceCounter,
    dataset_recipe: Callable[..., Recipe],
    variant: str,
    kind: str,
    shapes: str,
) -> None:
    # Full scale keeps the study's models, batch and sizes but not its 300-1000 steps per
    # call: at its ~7 s per retraced ResNet152V2 step that alone would take hours (README).
    steps = perf.pick(smoke=2, default=6, full=10)
    recipe = dataset_recipe("variable-shapes" if shapes == "variable" else "fixed-224", count=steps)
    run = tf_models.RetracingRun(
        _model(perf, kind, shapes),
        kind,
        variant,
        recipe.shapes(),
        perf.pick(smoke=2, default=2, full=16),
        seed=recipe.seed,
    )
    perf.use_dataset(recipe)
    traces: list[int] = []  # per call: each call's function is fresh

    def call(step: Any) -> Any:
        if variant == "eager":  # a Python function: nothing traces
            traces.append(0)
            return run.run(step)
        with trace_counter.track(step, record=False) as tally:
            result = run.run(step)
        traces.append(tally.value)
        return result

    perf.measure(
        call,
        setup=run.setup,
        items=steps,
        unit="steps",
        device=tf_models.model_device(),
        params=run.params,
    )
    assert len(set(traces)) == 1, f"trace counts differ between calls: {traces}"
    trace_counter.add("traces", traces[-1])
    problem = tf_models.trace_problem(variant, traces[-1], recipe.shapes())
    assert problem is None, problem
