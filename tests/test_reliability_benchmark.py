"""perfsuite beside pytest-benchmark: without it, with its documented options, and its outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_benchmark.utils import get_machine_id

from perfsuite.plugin import NO_BENCHMARK
from tests.fake_timer import FAKE_TIMER

pytest_plugins = ["pytester"]

MACHINE_ID: str = get_machine_id()  # type: ignore[no-untyped-call]

BENCH = """
import os
from pathlib import Path

import pytest


@pytest.mark.perf(group="sleep", variant="nap", baseline="nap")
def test_sleep(perf):
    Path(os.environ["PERF_TEST_RAN"]).write_text("ran")
    perf.measure(lambda: None, items=4)


def test_plain():
    pass
"""

CONFTEST = """
import os


def pytest_perfsuite_update_machine_facts(config, facts):
    if os.environ.get("PERF_TEST_CPU"):
        facts["cpu_model"] = os.environ["PERF_TEST_CPU"]
"""


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makepyfile(bench_sleep=BENCH)
    pytester.makeconftest(CONFTEST)
    monkeypatch.setenv("PERF_TEST_RAN", str(pytester.path / "ran.txt"))
    monkeypatch.delenv("PERF_TEST_CPU", raising=False)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--perf-rounds=7", "--perf-scale=smoke", *args
    )


def ran(pytester: pytest.Pytester) -> bool:
    return (pytester.path / "ran.txt").exists()


# -- without pytest-benchmark -------------------------------------------------------------


def test_without_pytest_benchmark_the_benches_error_and_it_says_so(bench: pytest.Pytester) -> None:
    result = run(bench, "-p", "no:benchmark", "-rs")
    out = result.stdout.str() + result.stderr.str()
    # as a `benchmark` test errors without its fixture: nothing measured is no pass
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    result.assert_outcomes(passed=1, errors=1)
    assert "INTERNALERROR" not in out
    assert "Traceback" not in out
    assert NO_BENCHMARK in out
    assert not ran(bench)


def test_without_pytest_benchmark_or_perfsuite_options_pytest_speaks_alone(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_plain="def test_plain(benchmark):\n    benchmark(sum, [1])\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:benchmark")
    result.assert_outcomes(errors=1)  # fixture 'benchmark' not found, as pytest says
    assert "pytest-benchmark is not loaded" not in result.stdout.str() + result.stderr.str()


def test_without_pytest_benchmark_perf_gate_is_a_usage_error(bench: pytest.Pytester) -> None:
    result = run(bench, "-p", "no:benchmark", "--perf-gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {NO_BENCHMARK}, and so does --perf-gate" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


# -- outputs checked at startup -----------------------------------------------------------


def _a_file(pytester: pytest.Pytester) -> Path:
    path = pytester.path / "a-file"
    path.write_text("not a folder")
    return path


def _opens_json_while_parsing() -> bool:
    from importlib.metadata import version

    major, minor = (int(part) for part in version("pytest-benchmark").split(".")[:2])
    return (major, minor) < (5, 3)


@pytest.mark.parametrize(
    ("option", "where", "why"),
    [
        ("--benchmark-storage", "{file}", "is a file, not a folder"),
        ("--benchmark-storage", "file://{file}/store", "is under {file}, which is a file"),
        ("--benchmark-json", "{file}/out.json", "{file} is not a folder"),
        ("--benchmark-json", "{tmp}", "is a folder; pass a file path"),
        ("--benchmark-json", "{tmp}/missing/out.json", "{tmp}/missing does not exist"),
        ("--perf-report", "{file}/report", "is under {file}, which is a file"),
        ("--perf-report", "/proc/perfsuite-report", "cannot write in /proc"),
        ("--perf-report", "{full}", "holds index.html, notes.txt"),
        ("--perf-data-dir", "{file}", "is a file, not a folder"),
    ],
)
def test_an_unwritable_output_is_a_usage_error_before_any_bench(
    bench: pytest.Pytester, option: str, where: str, why: str
) -> None:
    file, tmp = _a_file(bench), bench.path
    full = tmp / "old-report"  # a folder of known files (tmp gains __pycache__ as it runs)
    full.mkdir()
    for name in ("index.html", "notes.txt"):
        (full / name).write_text(name)
    value = where.format(file=file, tmp=tmp, full=full)
    result = run(bench, "--benchmark-autosave", f"{option}={value}")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + err
    shown = value.removeprefix("file://")
    if option == "--benchmark-json" and _opens_json_while_parsing():
        # pytest-benchmark before 5.3 opens the file while parsing: its argparse error
        assert "argument --benchmark-json: can't open" in err
    else:
        assert f"ERROR: {option} {shown}: {why.format(file=file, tmp=tmp)}" in err
    assert "Traceback" not in err
    assert not ran(bench)


def test_a_storage_that_is_a_file_is_fine_when_nothing_is_saved(bench: pytest.Pytester) -> None:
    result = run(bench, f"--benchmark-storage={_a_file(bench)}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)


def test_a_storage_that_is_a_file_refuses_only_a_gate(bench: pytest.Pytester) -> None:
    """Comparing against a storage that is a file: pytest-benchmark warns and the run
    passes, perfsuite adds one line; a gate, which would judge nothing, is refused."""
    storage = f"--benchmark-storage={_a_file(bench)}"
    plain = run(bench, storage, "--benchmark-compare")
    assert plain.ret == pytest.ExitCode.OK, plain.stdout.str() + plain.stderr.str()
    plain.stdout.fnmatch_lines(["perfsuite: --benchmark-storage *: is a file, not a folder*"])
    gated = run(bench, storage, "--benchmark-compare", "--perf-gate")
    assert gated.ret == pytest.ExitCode.USAGE_ERROR, gated.stdout.str() + gated.stderr.str()
    assert "ERROR: perfsuite: --benchmark-storage " in gated.stderr.str()
    assert "Traceback" not in gated.stderr.str()


def test_storage_outside_the_working_folder_with_another_machines_baseline(
    bench: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = tmp_path_factory.mktemp("outside") / "store"
    # the gate judges both runs: a clock that load cannot move keeps its verdict `same`
    bench.makepyfile(faketimer=FAKE_TIMER)
    timer = "--benchmark-timer=faketimer.clock"
    saved = run(bench, f"--benchmark-storage={store}", "--benchmark-autosave", timer)
    assert saved.ret == pytest.ExitCode.OK, saved.stdout.str() + saved.stderr.str()
    monkeypatch.setenv("PERF_TEST_CPU", "Some Other CPU")
    result = run(
        bench,
        f"--benchmark-storage=file://{store}",
        "--benchmark-compare",
        "--benchmark-autosave",
        "--perf-gate",
        "--perf-allow-machine-mismatch",
        f"--perf-report={bench.path / 'report'}",
        f"--benchmark-json={bench.path / 'run.json'}",
        timer,
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert "1 bench compared: 1 same" in out, out
    assert "INTERNALERROR" not in out
    assert "Benchmark machine_info is different" in out
    assert f"(location: {store.resolve()})" in out
    assert "cpu_model Some Other CPU ->" in out or "Some Other CPU" in out
    assert len(list((store / MACHINE_ID).glob("*.json"))) == 2
    assert json.loads((bench.path / "run.json").read_text())["benchmarks"]
    assert (bench.path / "report" / "summary.md").is_file()


# -- pytest-benchmark's options behave as it documents ------------------------------------


def test_unknown_compare_id_is_pytest_benchmarks_warning_plus_one_line(
    bench: pytest.Pytester,
) -> None:
    store = bench.path / "store"
    assert run(bench, f"--benchmark-storage={store}", "--benchmark-autosave").ret == 0
    result = run(bench, f"--benchmark-storage={store}", "--benchmark-compare=0002", "-rw")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, out
    result.assert_outcomes(passed=2)
    assert "PytestBenchmarkWarning: Can't compare. No benchmark files" in out
    notes = [
        line for line in out.splitlines() if "perfsuite: baseline run '0002' not found" in line
    ]
    assert len(notes) == 1
    assert "newest: 0001_" in notes[0]  # no saved id is close to 0002


def test_unknown_compare_id_under_perf_gate_is_a_usage_error(bench: pytest.Pytester) -> None:
    store = bench.path / "store"
    assert run(bench, f"--benchmark-storage={store}", "--benchmark-autosave").ret == 0
    result = run(bench, f"--benchmark-storage={store}", "--benchmark-compare=0002", "--perf-gate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: perfsuite: baseline run '0002' not found in" in result.stderr.str()
    assert "newest: 0001_" in result.stderr.str()


def test_saved_runs_keep_raw_timings_of_perfsuite_benches_only(bench: pytest.Pytester) -> None:
    bench.makepyfile(
        test_plain_bench="def test_plain_bench(benchmark):\n    benchmark(sum, range(10))\n"
    )
    store = bench.path / "store"
    result = run(bench, f"--benchmark-storage={store}", "--benchmark-autosave")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    (saved,) = (store / MACHINE_ID).glob("0001_*.json")
    stats = {b["name"]: b["stats"] for b in json.loads(saved.read_text())["benchmarks"]}
    assert len(stats["test_sleep"]["data"]) == 7  # perfsuite's: raw rounds for the verdict
    assert "data" not in stats["test_plain_bench"]  # pytest-benchmark's default
    again = run(
        bench,
        f"--benchmark-storage={store}",
        "--benchmark-autosave",
        "-k",
        "plain",
        "--benchmark-save-data",
    )
    assert again.ret == pytest.ExitCode.OK
    (second,) = (store / MACHINE_ID).glob("0002_*.json")
    assert "data" in json.loads(second.read_text())["benchmarks"][0]["stats"]
