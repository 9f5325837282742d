"""The torch.compile bench's runs: exact graph counts per mode on a tiny model.

The counts are what torch 2.13's dynamo and inductor compile, observed and pinned:
plain ``torch.compile`` compiles a static graph, then one symbolic graph on the
second shape ("automatic dynamic shapes") and no more; ``dynamic=True`` and
``mark_dynamic`` compile one symbolic graph; a symbolic training graph compiles once
more when ``batch * (H // 4) * (W // 4)`` crosses 4096 (inductor's accumulation
helper for long reductions is chosen by a guarded size). Compiling needs a C++
compiler and the Python headers: without them the inner tests skip with the reason.
Everything runs in one pytest subprocess (torch cannot be imported twice in one process).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.skips import skip_reasons

pytest_plugins = ("pytester",)

TORCH_TESTS = r"""
from __future__ import annotations

import pytest
import torch

from perfsuite.bench.traces import TraceCounter, torch_compile_count
from perfsuite.errors import PerfsuiteError
from perfsuite.workloads import compile_models as cm

# 3 distinct; below every size threshold. The tests below reuse them where the shape is
# not the point, so inductor's cache of the graphs compiled above serves them.
SHAPES = [(32, 40), (48, 36), (40, 56), (32, 40)]


@pytest.fixture(scope="module", autouse=True)
def toolchain():
    problem = cm.toolchain_problem()
    if problem is not None:
        pytest.skip(problem)


# one call a mode counts it; two calls of the costliest mode show each call compiles afresh
@pytest.mark.parametrize(("mode", "kind", "expected"), [
    ("eager", "forward", [0]),
    ("eager", "train", [0]),
    ("compile", "forward", [2]),
    ("compile", "train", [2, 2]),
    ("dynamic", "forward", [1]),
    ("dynamic", "train", [1]),
    ("mark_dynamic", "forward", [1]),
    ("mark_dynamic", "train", [1]),
])
def test_each_call_compiles_afresh_and_counts_exactly(mode, kind, expected):
    run = cm.CompileRun(kind, mode, SHAPES, batch=2, seed=3)
    assert run.params["distinct_shapes"] == 3 and run.params["steps"] == 4
    counter = TraceCounter({})
    with counter.track() as tally:
        for _ in expected:
            assert isinstance(run.run(*run.setup()[0]), float)
    assert run.finish() == expected
    assert tally.value == sum(expected) and counter.totals == {"traces": sum(expected)}
    assert cm.compile_problem(mode, expected[0], SHAPES) is None


def test_one_shape_compiles_once_in_every_compiled_mode():
    for mode in ("compile", "dynamic", "mark_dynamic"):
        run = cm.CompileRun("forward", mode, [SHAPES[0]] * 3, batch=2)
        run.run(*run.setup()[0])
        assert run.finish() == [1], mode


def test_a_symbolic_training_graph_recompiles_past_the_reduction_threshold():
    # 2 * 8 * 10 = 160, then 2 * 50 * 50 = 5000 > 4096
    run = cm.CompileRun("train", "dynamic", [SHAPES[0], (200, 200)], batch=2)
    run.run(*run.setup()[0])
    # torch 2.13 compiles a second graph past the threshold; the 2.5 floor one symbolic graph
    assert run.finish() in ([2], [1])


def test_training_updates_the_weights_and_eager_counts_nothing():
    run = cm.CompileRun("train", "eager", SHAPES, batch=2)
    before = [p.detach().clone() for p in run.model.parameters()]
    count = torch_compile_count()
    run.run(*run.setup()[0])
    assert torch_compile_count() == count
    assert any(not torch.equal(a, b) for a, b in zip(before, run.model.parameters()))


def test_compile_problem_flags_counts_that_time_the_wrong_thing():
    assert cm.compile_problem("eager", 0, SHAPES) is None
    assert "expected 0" in cm.compile_problem("eager", 1, SHAPES)
    assert "never compiled" in cm.compile_problem("dynamic", 0, SHAPES)
    assert "only 3 distinct" in cm.compile_problem("compile", 4, SHAPES)
    assert "must recompile" in cm.compile_problem("compile", 1, SHAPES)
    assert cm.compile_problem("compile", 1, [(224, 224)] * 2) is None
    assert cm.compile_problem("mark_dynamic", 2, SHAPES) is None
    with pytest.raises(PerfsuiteError, match="unknown compile mode"):
        cm.compile_problem("jit", 1, SHAPES)
    with pytest.raises(PerfsuiteError, match="unknown compile mode"):
        cm.CompileRun("forward", "jit", SHAPES, batch=2)
    with pytest.raises(PerfsuiteError, match="unknown step kind"):
        cm.CompileRun("backward", "eager", SHAPES, batch=2)
    with pytest.raises(PerfsuiteError, match="at least one step shape"):
        cm.CompileRun("forward", "eager", [], batch=2)
"""


@pytest.mark.torch
def test_compile_models(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_compile_models_inner=TORCH_TESTS)
    result = pytester.runpytest_subprocess(
        "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning", "-rs"
    )
    outcomes = result.parseoutcomes()
    if outcomes.get("skipped"):  # no C++ compiler or Python headers: say which
        result.assert_outcomes(skipped=12)
        pytest.skip(next(line for line in result.outlines if "SKIPPED" in line))
    result.assert_outcomes(passed=12)
    assert result.ret == 0


@pytest.mark.torch
def test_compile_bench_skips_naming_the_missing_compiler(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, inner_args: list[str]
) -> None:
    monkeypatch.setenv("CXX", "/nonexistent/c++")  # inductor finds no C++ compiler
    bench = Path(__file__).resolve().parents[1] / "benches" / "bench_compile.py"
    result = pytester.runpytest_subprocess(
        str(bench), "--perf-scale=smoke", "--perf-device=cpu", "-rs", *inner_args
    )
    result.assert_outcomes(skipped=32)  # 16 benches on each device
    reasons = skip_reasons(result)
    assert reasons.count("GPU bench skipped: --perf-device cpu") == 16
    compiler = [r for r in reasons if r.startswith("torch.compile needs a C++ compiler")]
    assert len(compiler) == 16
    assert all("/nonexistent/c++" in r for r in compiler)
