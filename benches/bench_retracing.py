"""tf.function retracing: eager vs tf.function vs input_signature vs reduce_retracing."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("tensorflow", reason="needs TensorFlow: pip install 'perfsuite[tf]'")

from perfsuite.workloads import tf_models

pytestmark = pytest.mark.tf


def _model(perf: Any, kind: str, shapes: str) -> str:
    """Small CNNs below full scale; at full, the study's VGG16, and ResNet152V2 where
    retracing hurt most (training on variable shapes)."""
    full = "resnet152v2" if (kind, shapes) == ("train", "variable") else "vgg16"
    name: str = perf.pick(smoke="cnn-1", default="cnn-2", full=full)
    return name


@pytest.mark.parametrize("shapes", ["fixed", "variable"])
@pytest.mark.parametrize("kind", tf_models.KINDS)
@pytest.mark.parametrize("mode", tf_models.MODES)
def test_retracing(perf: Any, dataset_recipe: Any, mode: str, kind: str, shapes: str) -> None:
    # Full scale keeps the study's models, batch and sizes but not its 300-1000 steps per
    # call: at its ~7 s per retraced ResNet152V2 step that alone would take hours (README).
    steps = perf.pick(smoke=2, default=6, full=10)
    recipe = dataset_recipe("variable-shapes" if shapes == "variable" else "fixed-224", count=steps)
    run = tf_models.RetracingRun(
        _model(perf, kind, shapes),
        kind,
        mode,
        recipe.shapes(),
        perf.pick(smoke=2, default=2, full=16),
        seed=recipe.seed,
    )
    perf.use_dataset(recipe)
    # A fresh function per call, and RetracingRun warmed the process: no warm-up rounds.
    perf.measure(
        run.run,
        setup=run.setup,
        items=steps,
        unit="steps",
        group=f"retracing_{kind}_{shapes}",
        variant=mode,
        baseline=mode == "eager",
        device=tf_models.model_device(),
        params=run.params,
        rounds=perf.pick(smoke=None, default=None, full=7),  # 7: the least a rank test decides on
        warmup_rounds=0,
    )
    traces = run.finish()
    assert len(set(traces)) == 1, f"trace counts differ between calls: {traces}"
    perf.count("traces", traces[-1])
    problem = tf_models.trace_problem(mode, traces[-1], recipe.shapes())
    assert problem is None, problem
