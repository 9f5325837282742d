"""perfsuite ab measures pytest-benchmark's own ``benchmark`` fixture in lockstep.

The benches here use nothing of perfsuite but its counters: ``benchmark(fn)`` and
``benchmark.pedantic(...)`` in temporary git repositories, with and without a pytest
configuration file, run by real pytest sides. A side driven over a socket pair:
``tests/test_ab_side_benchmark.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from perfsuite.exitcodes import ExitCode
from tests.ab_repo import Repo, make_repo, passed_unless_too_noisy, table_rows

#: work.py: ``run(n)`` does ``n * FACTOR`` steps, ``expected(n)`` its result
WORK = '''
"""The code under test."""
FACTOR = {factor}
TRACES = {traces}


def run(n=20000):
    total = 0
    for i in range(n * FACTOR):
        total += i * i
    return total


def expected(n=20000):
    return sum(i * i for i in range(n * FACTOR))
'''

#: benches at the root: a calibrated call, a finite pool, iterations
PLAIN_BENCHES = """
import pytest

import work


def test_call(benchmark):
    assert benchmark(work.run, 200) == work.expected(200)


def test_pool(benchmark):
    # one fresh argument a round, made up front: drawing more than 0 + 24 fails the test
    pool = [((), {"n": 100000}) for _ in range(24)]
    result = benchmark.pedantic(work.run, setup=pool.pop, rounds=24)
    assert result == work.expected(100000)


def test_iterations(benchmark):
    result = benchmark.pedantic(work.run, args=(30000,), iterations=3, rounds=2)
    assert result == work.expected(30000)
"""

#: ... and exact counters: perfsuite's ``trace_counter`` fixture, an ``extra_info``
#: integer under a counter name, and one under a name the ``perf`` marker declares
ROOT_BENCHES = (
    PLAIN_BENCHES
    + """

@pytest.mark.perf(counters=["hits"])
def test_counted(benchmark, trace_counter):
    assert benchmark(work.run, 200) == work.expected(200)
    trace_counter.add("traces", work.TRACES)
    benchmark.extra_info["recompiles"] = work.TRACES - 1
    benchmark.extra_info["hits"] = 10 * work.TRACES
"""
)

SUB_BENCHES = """
import work


def test_sub(benchmark):
    assert benchmark(work.run, 300) == work.expected(300)
"""

#: a pytest configuration that decides what is collected: only ``bench_*`` functions
#: of ``checks/``
PYTEST_INI = """
[pytest]
testpaths = checks
python_files = perf_*.py
python_functions = bench_*
"""

CONFIGURED_BENCHES = """
import pytest

import work


@pytest.mark.perf(threshold=0.3)
def bench_call(benchmark):
    assert benchmark(work.run, 200) == work.expected(200)


@pytest.mark.perf(threshold=0.3)
def bench_pedantic(benchmark):
    result = benchmark.pedantic(work.run, kwargs={"n": 50000}, rounds=3, warmup_rounds=1)
    assert result == work.expected(50000)
"""

#: a small budget: a few seconds a bench, pair counts (not the clock) end each one; each
#: block's rounds are left to perfsuite ab's default
BUDGET = ["--min-pairs", "10", "--seed", "7", "--max-seconds", "120"]
#: a slowdown is decided in a few pairs, and needs no fresh pairs of processes to confirm
SLOWDOWN = ["--max-pairs", "20", "--confirm", "0"]
#: "same" within 30% may take more pairs on a busy machine, and a suspect that one pair
#: of processes holds apart (an offset of its memory layout) is measured again
SAME = ["--max-pairs", "60"]
#: a busy shared machine takes minutes where a quiet one takes seconds
TIMEOUT_S = 600


def set_work(repo: Repo, factor: int, traces: int = 1) -> None:
    repo.write("work.py", WORK.format(factor=factor, traces=traces))


def saved(report: Path, side: str) -> dict[str, dict[str, Any]]:
    benches = json.loads((report / f"{side}.json").read_text())["benchmarks"]
    return {bench["fullname"]: bench for bench in benches}


def test_fixture_benches_run_in_lockstep_and_a_heavier_candidate_is_slower(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)  # no pytest configuration file
    set_work(repo, factor=1, traces=1)
    repo.write("test_root.py", ROOT_BENCHES)
    repo.write("tests/test_sub.py", SUB_BENCHES)
    repo.commit("base")
    set_work(repo, factor=4, traces=2)  # four times the work, and a trace more
    repo.commit("candidate")
    report = tmp_path / "report"
    args = ["HEAD~1", "HEAD", *BUDGET, *SLOWDOWN, "--report", str(report)]
    sides = ["--", "test_root.py", "tests/test_sub.py", "--perf-scale=smoke"]
    result = repo.ab(*args, *sides, timeout=TIMEOUT_S)
    assert result.code == ExitCode.REGRESSION, result.out + result.err
    assert "without measuring" not in result.out
    table = table_rows(result.out)
    names = ["test_call", "test_pool", "test_iterations", "test_counted", "test_sub"]
    for name in names:
        [(verdict, pairs)] = [cell for nodeid, cell in table.items() if nodeid.endswith(name)]
        assert verdict.startswith("SLOWER"), (name, result.out)
        assert pairs > 0
    assert "tests/test_sub.py::test_sub" in table
    for rose in ("traces 1 -> 2 ROSE", "recompiles 0 -> 1 ROSE", "hits 10 -> 20 ROSE"):
        assert rose in result.out, result.out

    measured = json.loads((report / "pairs.json").read_text())
    # each file's pair of sides measured its own benches only, though both were named
    assert sorted(run["nodeid"].rpartition("::")[2] for run in measured) == sorted(names)
    runs = {run["nodeid"]: run for run in measured}
    # a frozen side runs nothing between blocks: a fixture bench's blocks drain no round
    assert all(run["drained"] and set(run["drained"]) == {0} for run in measured)
    # and so time one round each: a block's rounds share its layout
    assert all(len(b) == 1 for run in measured for b in run["a_blocks"] + run["b_blocks"])
    for side in ("A", "B"):
        benches = saved(report, side)
        for nodeid, bench in benches.items():
            # the stats hold seconds per call: what the controller paired, round by round
            run = runs[nodeid]
            blocks = run["a_blocks"] if side == "A" else run["b_blocks"]
            assert bench["stats"]["data"] == [s for block in blocks for s in block]
        by_name = {nodeid.rpartition("::")[2]: bench for nodeid, bench in benches.items()}
        assert by_name["test_call"]["stats"]["iterations"] > 1  # calibrated: ~10-80 us a call
        assert by_name["test_iterations"]["stats"]["iterations"] == 3
        assert by_name["test_pool"]["stats"]["iterations"] == 1
        assert by_name["test_pool"]["stats"]["rounds"] <= 24 - 1  # the pool less a warm-up


def test_a_configured_suite_of_equal_work_is_not_slower(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write("pytest.ini", PYTEST_INI)
    set_work(repo, factor=1)
    repo.write("checks/perf_fixture.py", CONFIGURED_BENCHES)
    repo.commit("base")
    repo.write("work.py", (repo.root / "work.py").read_text() + "# a comment only\n")
    repo.commit("comment")
    report = tmp_path / "report"
    # no path: pytest's testpaths chooses, and its python_functions collects bench_*
    args = ["HEAD~1", "HEAD", *BUDGET, *SAME, "--block-warmup", "1", "--report", str(report)]
    result = repo.ab(*args, "--", "--perf-scale=smoke", timeout=TIMEOUT_S)
    # equal work is never slower; whether "same" is decided within the budget depends on
    # the machine's noise, and a bench too noisy to pass is named, exit 3, never 0
    passed_unless_too_noisy(result)
    table = table_rows(result.out)
    benches = ["checks/perf_fixture.py::bench_call", "checks/perf_fixture.py::bench_pedantic"]
    assert sorted(table) == benches
    assert all(pairs > 0 for _, pairs in table.values())
    measured = json.loads((report / "pairs.json").read_text())
    # the perf marker's threshold, not --threshold's default, judged them
    assert {run["threshold"] for run in measured} == {0.3}
    # --block-warmup 1 starts each block with a drain round, as for a perf bench
    assert all(run["drained"] and min(run["drained"]) >= 1 for run in measured), measured
    # and then times two rounds, which share the drain round's cost
    assert all(len(b) == 2 for run in measured for b in run["a_blocks"] + run["b_blocks"])


def _plain_run(repo: Repo, out: Path, *extra: str) -> dict[str, dict[str, Any]]:
    args = ["--benchmark-min-rounds=4", "--benchmark-max-time=0", f"--benchmark-json={out}"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "test_root.py", "-q", "-p", "no:randomly", *args, *extra],
        cwd=repo.root,
        env=repo.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {b["name"]: b["stats"] for b in json.loads(out.read_text())["benchmarks"]}


def test_without_perfsuite_ab_the_fixture_is_pytest_benchmarks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    set_work(repo, factor=1)
    repo.write("test_root.py", PLAIN_BENCHES)
    ours = _plain_run(repo, tmp_path / "ours.json")
    theirs = _plain_run(repo, tmp_path / "theirs.json", "-p", "no:perfsuite")
    assert set(ours) == set(theirs) == {"test_call", "test_pool", "test_iterations"}
    for stats in (ours, theirs):
        assert stats["test_call"]["rounds"] == 4  # --benchmark-min-rounds, max-time 0
        assert (stats["test_pool"]["rounds"], stats["test_pool"]["iterations"]) == (24, 1)
        iterations = stats["test_iterations"]
        assert (iterations["rounds"], iterations["iterations"]) == (2, 3)
