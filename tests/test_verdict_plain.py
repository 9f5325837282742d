"""A bench written with pytest-benchmark's ``benchmark`` fixture is judged as a ``perf``
bench is: its exact counters (``extra_info`` integers under ``traces``/``recompiles`` or
names its ``perf`` marker declares) and its marker's threshold reach the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
import scipy.stats  # noqa: F401  numpy.fft with it, before the snapshot too

import perfsuite.verdict.compare  # noqa: F401  numpy loads once a process: before pytester's snapshot
from perfsuite.cli import main
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.runs import load_run
from tests.fake_timer import FAKE_TIMER

pytest_plugins = ("pytester",)

PLAIN = """
import pytest

HITS = {hits}


@pytest.mark.perf(threshold=0.5, counters=["hits"])
def test_plain(benchmark):
    benchmark.extra_info["hits"] = HITS
    benchmark.extra_info["traces"] = 3
    benchmark.extra_info["label"] = "not a counter"
    benchmark.pedantic(lambda: sum(range(100)), rounds=12, iterations=1)
"""


def save(pytester: pytest.Pytester, hits: int, name: str) -> Path:
    pytester.makepyfile(test_plain=PLAIN.format(hits=hits), faketimer=FAKE_TIMER)
    out = pytester.path / name
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark-timer=faketimer.clock", f"--benchmark-json={out}"
    )
    result.assert_outcomes(passed=1)
    return out


def test_a_plain_bench_keeps_its_markers_threshold_and_counters(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    before = save(pytester, 2, "before.json")
    (bench,) = load_run(before).benches.values()
    assert bench.result is None
    assert bench.threshold == 0.5
    assert bench.counters() == {"traces": 3, "hits": 2}
    same = save(pytester, 2, "same.json")
    assert main(["compare", str(before), str(same)]) == ExitCode.OK
    rose = save(pytester, 5, "rose.json")
    assert main(["compare", str(before), str(rose)]) == ExitCode.REGRESSION
    out = capsys.readouterr().out
    assert "hits 2 -> 5 ROSE" in out
    assert "(>50%)" in out  # the marker's threshold, not the default 5%


def test_too_few_rounds_of_a_plain_bench_say_which_rounds_to_raise(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``benchmark.pedantic`` bench of 3 rounds is never judged on its medians, and the
    note names pytest-benchmark's own ways to more rounds, not perfsuite's."""
    pytester.makepyfile(
        test_plain=PLAIN.format(hits=2).replace("rounds=12", "rounds=3"), faketimer=FAKE_TIMER
    )
    runs = []
    for name in ("before.json", "after.json"):
        runs.append(str(pytester.path / name))
        pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            "--benchmark-timer=faketimer.clock",
            f"--benchmark-json={runs[-1]}",
            "--benchmark-save-data",
        ).assert_outcomes(passed=1)
    assert main(["compare", *runs]) == ExitCode.NOT_JUDGED
    out = capsys.readouterr().out
    assert (
        "(has 3): medians alone are not judged; raise the rounds (--benchmark-min-rounds; " in out
    )
    assert "benchmark.pedantic's rounds=)" in out


def autosave(pytester: pytest.Pytester, hits: int, *args: str) -> pytest.RunResult:
    """A run of the plain bench saved by ``--benchmark-autosave`` alone: no raw samples."""
    pytester.makepyfile(test_plain=PLAIN.format(hits=hits), faketimer=FAKE_TIMER)
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--benchmark-timer=faketimer.clock",
        "--benchmark-autosave",
        "--benchmark-storage=store",
        *args,
    )


def test_a_counter_that_rose_fails_against_a_baseline_without_raw_samples(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """No time can be judged against a baseline saved without raw samples, yet a risen
    exact counter needs none: the comparison and the gate fail on it (exit 1), not
    refuse (exit 3), so the regression is not lost into the next baseline."""
    autosave(pytester, 2).assert_outcomes(passed=1)
    gated = autosave(pytester, 5, "--benchmark-compare", "--perf-gate")
    assert gated.ret == ExitCode.REGRESSION, gated.stdout.str()
    out = gated.stdout.str()
    assert "perfsuite gate: FAILED: 1 regression: " in out
    assert "hits 2 -> 5 ROSE" in out
    store = pytester.path / "store"
    first, second = sorted(p.stem.split("_")[0] for p in store.rglob("*.json"))
    assert main(["compare", "--storage", str(store), first, second]) == ExitCode.REGRESSION
    assert "perfsuite compare: regression: 1 regression: " in capsys.readouterr().out


def test_a_comparison_that_judged_nothing_says_so_as_a_comparison(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    autosave(pytester, 2).assert_outcomes(passed=1)
    autosave(pytester, 2).assert_outcomes(passed=1)
    store = pytester.path / "store"
    first, second = sorted(p.stem.split("_")[0] for p in store.rglob("*.json"))
    assert main(["compare", "--storage", str(store), first, second]) == ExitCode.NOT_JUDGED
    out = capsys.readouterr().out
    assert "baseline has no raw samples" in out
    assert out.rstrip().endswith("a comparison that judged nothing does not pass")


SAME_NAME = """
from faketimer import clock


def test_same(benchmark):
    benchmark.pedantic({work}, rounds=12, iterations=1)
"""


def test_two_files_benches_of_one_name_are_told_apart_by_their_node_ids(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """``a/test_x.py::test_same`` and ``b/test_x.py::test_same`` are named by their node
    ids wherever a bench is named; only b's got slower (it reads the clock once more)."""
    pytester.makepyfile(faketimer=FAKE_TIMER)
    for folder in ("a", "b"):
        (pytester.path / folder).mkdir()
    runs = []
    for name, slower in (("before.json", "lambda: None"), ("after.json", "clock")):
        (pytester.path / "a" / "test_x.py").write_text(SAME_NAME.format(work="lambda: None"))
        (pytester.path / "b" / "test_x.py").write_text(SAME_NAME.format(work=slower))
        runs.append(str(pytester.path / name))
        pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            "--benchmark-timer=faketimer.clock",
            f"--benchmark-json={runs[-1]}",
            "--benchmark-save-data",
            "a",
            "b",
        ).assert_outcomes(passed=2)
    labels = sorted(bench.label for bench in load_run(Path(runs[0])).benches.values())
    assert labels == ["a/test_x.py::test_same", "b/test_x.py::test_same"]
    assert main(["compare", *runs]) == ExitCode.REGRESSION
    out = capsys.readouterr().out
    assert "1 regression: b/test_x.py::test_same" in out
