"""A run that selects part of the suite (``-k``, ``-m``, a narrower path) is compared on
what it selected: the baseline's other benches are one line saying they were outside
the selection, never each "removed since the baseline"."""

from __future__ import annotations

import pytest

from tests.fake_timer import FAKE_TIMER

pytest_plugins = ("pytester",)

ROOT_BENCHES = """
def test_one(benchmark):
    benchmark.pedantic(sum, args=(range(100),), rounds=8)


def test_two(benchmark):
    benchmark.pedantic(sum, args=(range(50),), rounds=8)
"""
NESTED_BENCH = """
def test_three(benchmark):
    benchmark.pedantic(sum, args=(range(10),), rounds=8)
"""


def lines(pytester: pytest.Pytester, *args: str, status: int = 0) -> list[str]:
    """The perfsuite verdict section's lines about removed and unselected benches, and
    the gate's line, of a run that ends with ``status``."""
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--benchmark-timer=faketimer.clock",
        "--benchmark-storage=store",
        *args,
    )
    assert result.ret == status, result.stdout.str()
    words = ("removed since", "outside this run", "perfsuite gate:")
    return [line for line in result.outlines if line.startswith(words)]


@pytest.fixture
def saved(pytester: pytest.Pytester) -> pytest.Pytester:
    """No pytest configuration file: benches at the root and under tests/, one run saved."""
    pytester.makepyfile(test_a=ROOT_BENCHES, faketimer=FAKE_TIMER)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_b.py").write_text(NESTED_BENCH)
    assert lines(pytester, "--benchmark-autosave") == []
    return pytester


def test_deselected_benches_are_outside_the_selection(saved: pytest.Pytester) -> None:
    assert lines(saved, "--benchmark-compare", "-k", "test_one") == [
        "outside this run's selection (-k, -m or its paths), not judged: 2 of the "
        "baseline's benches, e.g. test_a.py::test_two"
    ]


def test_a_narrower_path_or_node_id_leaves_the_rest_outside(saved: pytest.Pytester) -> None:
    assert lines(saved, "tests", "--benchmark-compare") == [
        "outside this run's selection (-k, -m or its paths), not judged: 2 of the "
        "baseline's benches, e.g. test_a.py::test_one"
    ]
    assert lines(saved, "test_a.py::test_two", "--benchmark-compare") == [
        "outside this run's selection (-k, -m or its paths), not judged: 2 of the "
        "baseline's benches, e.g. test_a.py::test_one"
    ]


def test_a_bench_gone_from_the_selection_is_removed(saved: pytest.Pytester) -> None:
    (saved.path / "test_a.py").write_text(ROOT_BENCHES.split("\n\n\ndef test_two")[0] + "\n")
    assert lines(saved, "test_a.py", "--benchmark-compare") == [
        "removed since the baseline: test_a.py::test_two",
        "outside this run's selection (-k, -m or its paths), not judged: 1 of the "
        "baseline's benches, e.g. tests/test_b.py::test_three",
    ]
    assert lines(saved, "--benchmark-compare") == [
        "removed since the baseline: test_a.py::test_two"
    ]


def test_a_gate_on_new_benches_alone_says_why_nothing_was_judged(
    saved: pytest.Pytester,
) -> None:
    """Every bench of the run is new and every baseline bench outside its paths: the
    gate judges nothing, exits 3 and says both, never an empty reason."""
    (saved.path / "tests" / "test_c.py").write_text(NESTED_BENCH.replace("three", "four"))
    assert lines(saved, "tests/test_c.py", "--benchmark-compare", "--perf-gate", status=3) == [
        "outside this run's selection (-k, -m or its paths), not judged: 3 of the "
        "baseline's benches, e.g. test_a.py::test_one",
        "perfsuite gate: REFUSED: cannot judge: this run's 1 benches are not in the "
        "baseline; 3 of the baseline's benches are outside this run's selection (-k, -m "
        "or its paths); a gate that judged nothing does not pass",
    ]
