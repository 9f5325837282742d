"""The swap_weights cases: one warmed function serves N models, traced exactly once.

TensorFlow and torch load in one pytest subprocess each (a framework cannot be
imported twice in one process).
"""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

#: the small CNN at 240x240: (3*9*6 + 6) + (6*9*16 + 16) + (53824*128 + 128)
#: + (128*84 + 84) + (84*2 + 2) = 6,901,654 float32 parameters
SMALL_CNN_BYTES = 6_901_654 * 4

TF_TESTS = f"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from perfsuite.bench.traces import TraceCounter
from perfsuite.workloads import swap_weights as sw
from perfsuite.workloads import warmup_cases as wc

SIZE = 64  # a smaller input keeps the test quick; the architecture is the same


def test_one_function_serves_every_model_after_a_single_trace():
    weights = sw.tf_weight_sets(3, SIZE, seed=5)
    x = wc.tf_input(1, SIZE)
    server = sw.TfSwapServer(SIZE)
    variables = [id(v) for v in server.model.weights]
    counter = TraceCounter({{}})
    with counter.track(server.fn) as tally:
        server.prepare((1, SIZE, SIZE, 3))
        served = [server.serve(w, x) for w in weights + weights]
    assert tally.value == 1 and counter.totals == {{"traces": 1}}
    assert [id(v) for v in server.model.weights] == variables  # assigned in place
    for index, w in enumerate(weights):
        cold = sw.tf_cold_model(w, SIZE)
        expected = wc.tf_call(cold, x)
        assert cold.experimental_get_tracing_count() == 1
        np.testing.assert_allclose(served[index], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(served[index], served[index + 3])
    assert not np.allclose(served[0], served[1])  # the models differ


def test_weight_sets_are_seeded_and_sized_like_the_model():
    a, b = sw.tf_weight_sets(2, seed=1), sw.tf_weight_sets(2, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(a[1], b[1]))
    assert not np.array_equal(a[0][0], a[1][0])
    assert sw.array_bytes(a[0]) == {SMALL_CNN_BYTES}
    assert [w.shape for w in a[0]] == [tuple(v.shape) for v in wc.keras_small_cnn().weights]
"""

TORCH_TESTS = f"""
from __future__ import annotations

import torch

from perfsuite.workloads import swap_weights as sw
from perfsuite.workloads import warmup_cases as wc


def test_one_module_serves_every_model_like_a_cold_one():
    states = sw.torch_state_dicts(3, seed=2)
    assert sw.array_bytes(list(states[0].values())) == {SMALL_CNN_BYTES}
    x = wc.torch_input(1)
    server = sw.TorchSwapServer()
    params = [p.data_ptr() for p in server.model.parameters()]
    served = [server.serve(s, x) for s in states]
    assert [p.data_ptr() for p in server.model.parameters()] == params  # copied in place
    for state, out in zip(states, served):
        torch.testing.assert_close(out, wc.torch_forward(sw.torch_cold_model(state), x))
    assert not torch.allclose(served[0], served[1])


def test_rss_is_read_from_proc():
    assert sw.rss_bytes() > 0
"""


@pytest.mark.tf
def test_swap_weights_tf(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_swap_tf_inner=TF_TESTS)
    result = pytester.runpytest_subprocess(
        "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"
    )
    result.assert_outcomes(passed=2)
    assert result.ret == 0


@pytest.mark.torch
def test_swap_weights_torch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_swap_torch_inner=TORCH_TESTS)
    result = pytester.runpytest_subprocess(
        "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"
    )
    result.assert_outcomes(passed=2)
    assert result.ret == 0
