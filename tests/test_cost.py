"""What a bench costs: measured by real pytest-benchmark runs, judged on constructed runs.

Measuring runs real pytest sessions (``pytester`` subprocesses) on benches written with
pytest-benchmark's ``benchmark`` fixture and with perfsuite's ``perf`` fixture. Judging
builds saved runs whose costs are chosen, so each verdict is exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.compare import compare_runs
from perfsuite.verdict.cost import MEMORY_FLOOR_MB, Cost, MemoryChange
from perfsuite.verdict.gate_rules import gate_decision
from perfsuite.verdict.runs import parse_run
from perfsuite.verdict.table import text_lines
from tests.samples import normal

pytest_plugins = ["pytester"]

DATA = Path(__file__).parent / "data"

#: one bench of each kind: an allocation of ALLOC_MB (touched page by page), a child
#: process burning CHILD_CPU_S of CPU each round, a live worker fed each round
BENCHES = """
import multiprocessing
import os
import subprocess
import sys

import pytest

ALLOC_MB = int(os.environ.get("ALLOC_MB", "200"))
CHILD_CPU_S = 0.2
BURN = (
    "import time\\n"
    "end = time.process_time() + {seconds}\\n"
    "while time.process_time() < end:\\n"
    "    pass\\n"
)


def allocate():
    block = bytearray(ALLOC_MB * 1024 * 1024)
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    return len(block)


def test_allocates(benchmark):
    assert benchmark.pedantic(allocate, rounds=3) == ALLOC_MB * 1024 * 1024


def child():
    subprocess.run([sys.executable, "-c", BURN.format(seconds=CHILD_CPU_S)], check=True)


def test_child_process(benchmark):
    benchmark.pedantic(child, rounds=3)


def burn(seconds):
    exec(BURN.format(seconds=seconds))
    return seconds


@pytest.fixture
def worker():
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pool.apply(burn, (0.0,))  # started and ready before the bench
        yield pool


def test_live_worker(benchmark, worker):
    benchmark.pedantic(lambda: worker.apply(burn, (CHILD_CPU_S,)), rounds=3)


@pytest.mark.perf(group="alloc")
def test_perf_allocates(perf):
    perf.measure(allocate, items=8)
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Cost]:
    """One session of the four benches, with a perfsuite option: every bench metered."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("costs")
    (folder / "test_costs.py").write_text(BENCHES)
    out = folder / "out.json"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "test_costs.py", "-q", "-p", "no:cacheprovider"),
            *("-p", "no:randomly", "--perf-scale=smoke", "--perf-rounds=3"),
            *("--perf-memory-threshold=0.5", f"--benchmark-json={out}"),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    costs = {}
    for bench in json.loads(out.read_text())["benchmarks"]:
        saved = bench["extra_info"]["perfsuite"]["cost"]
        costs[bench["name"]] = Cost.from_dict(saved, bench["name"])
    return costs


def test_a_known_allocation_is_the_peak(measured: dict[str, Cost]) -> None:
    # 200 MB touched page by page: recorded within -2% / +10% (the interpreter's own
    # allocations during the rounds ride on top)
    for name in ("test_allocates", "test_perf_allocates"):
        peak = measured[name].peak_rss_mb
        assert peak is not None
        assert 196 <= peak <= 220, (name, peak)
        assert measured[name].memory_threshold == 0.5  # --perf-memory-threshold
        assert measured[name].gpu_peak_mb is None  # no GPU framework initialized


def test_a_child_process_cpu_time_is_counted(measured: dict[str, Cost]) -> None:
    spent = measured["test_child_process"]
    assert spent.calls == 3
    assert len(spent.rounds_cpu_s) == 3
    # each round's child burns 0.2 s of its own CPU: none of it is this process's
    for seconds in spent.rounds_cpu_s:
        assert seconds >= 0.19
    assert spent.cpu_s >= 3 * 0.19


def test_a_live_worker_cpu_time_is_counted(measured: dict[str, Cost]) -> None:
    spent = measured["test_live_worker"]
    assert len(spent.rounds_cpu_s) == 3
    for seconds in spent.rounds_cpu_s:
        assert seconds >= 0.18  # the worker's time, read at clock-tick resolution
    cores = spent.cores
    assert cores is not None
    assert 0 < cores <= 1.05  # one busy process at a time


def test_the_perf_fixture_cost_is_per_item(measured: dict[str, Cost]) -> None:
    spent = measured["test_perf_allocates"]
    assert spent.round_calls == 1
    per_item = spent.cpu_per_item(8)
    assert per_item is not None
    assert per_item == pytest.approx(spent.cpu_s / (8 * spent.calls))
    assert spent.round_samples(8) == [s / 8 for s in spent.rounds_cpu_s]


def test_without_perfsuite_options_a_plain_bench_is_pytest_benchmarks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALLOC_MB", "8")
    pytester.makepyfile(test_costs=BENCHES)
    out = pytester.path / "out.json"
    args = ["-p", "no:cacheprovider", "-k", "allocates and not perf", f"--benchmark-json={out}"]
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0, result.stdout.str()
    [saved] = json.loads(out.read_text())["benchmarks"]
    assert saved["name"] == "test_allocates"
    assert saved["extra_info"] == {}  # nothing of perfsuite's in pytest-benchmark's run


# -- judging ------------------------------------------------------------------------


def _cost(peak: float, round_cpu: list[float]) -> dict[str, Any]:
    return Cost(
        calls=len(round_cpu),
        round_calls=1,
        cpu_s=sum(round_cpu),
        wall_s=sum(round_cpu),
        rounds_cpu_s=tuple(round_cpu),
        peak_rss_mb=peak,
    ).to_dict()


def _run(name: str, times: list[float], cost: dict[str, Any] | None) -> Any:
    extra: dict[str, Any] = {}
    if cost is not None:
        extra["perfsuite"] = {"schema": 2, "cost": cost}
    entry = {
        "fullname": "test_x.py::test_x",
        "name": "test_x",
        "group": None,
        "extra_info": extra,
        "stats": {"data": times, "median": sorted(times)[len(times) // 2]},
    }
    return parse_run({"version": "5.1.0", "benchmarks": [entry]}, name)


TIMES = normal(0.010, 0.0001, 20)
CPU = normal(0.008, 0.0001, 20, seed=1)


def _judged(old: dict[str, Any] | None, new: dict[str, Any] | None) -> Any:
    return compare_runs(_run("base", TIMES, old), _run("cur", TIMES, new))


def test_a_memory_rise_past_the_threshold_fails_the_gate() -> None:
    comparison = _judged(_cost(100, CPU), _cost(200, CPU))
    [item] = comparison.verdicts
    assert item.memory_rose
    assert item.regressed
    decision = gate_decision(comparison, allow_mismatch=False)
    assert decision.exit_status == ExitCode.REGRESSION
    assert "peak 100 -> 200 MB ROSE" in decision.message
    assert any("peak 100 -> 200 MB ROSE" in line for line in text_lines(comparison))


def test_an_unchanged_peak_passes() -> None:
    comparison = _judged(_cost(100, CPU), _cost(110, CPU))
    [item] = comparison.verdicts
    assert not item.memory_rose
    decision = gate_decision(comparison, allow_mismatch=False)
    assert decision.exit_status == ExitCode.OK, decision.message


def test_the_memory_threshold_and_floor() -> None:
    assert MemoryChange(400, 501, 0.25).rose
    assert not MemoryChange(400, 500, 0.25).rose
    # a small peak needs more than the floor to rise
    assert not MemoryChange(10, 10 + MEMORY_FLOOR_MB, 0.25).rose
    assert MemoryChange(10, 10 + MEMORY_FLOOR_MB + 1, 0.25).rose


#: peaks of unchanged runs of a bench with worker processes: they move by half
NOISY_PEAKS = [100, 170, 110, 180, 120, 175]


@pytest.mark.parametrize(
    ("peaks", "current", "rose"),
    [
        (NOISY_PEAKS, 350, False),  # +100% on 175 MB: inside what they spread (293%)
        (NOISY_PEAKS, 900, True),  # +414%: past it
        ([120, 121, 119, 120, 122, 120], 200, True),  # a steady history keeps 25%
        (NOISY_PEAKS[:4], 300, True),  # under 5 earlier runs: the bench's own threshold
        ([10, 14, 10, 15, 10, 14], 50, False),  # a 192% band under the 64 MB floor: no note
    ],
)
def test_the_history_of_a_peak_widens_its_memory_threshold(
    peaks: list[float], current: float, rose: bool
) -> None:
    history = [_run(f"{i:04d}", TIMES, _cost(p, CPU)) for i, p in enumerate(peaks)]
    baseline, new = history[-1], _run("cur", TIMES, _cost(current, CPU))
    [item] = compare_runs(baseline, new, history=history).verdicts
    assert item.memory_rose is rose
    widened = item.note is not None and "peak-memory threshold widened from 25%" in item.note
    assert widened is (len(peaks) >= 5 and peaks is NOISY_PEAKS)


def test_a_nightly_peak_inside_its_history_band_is_no_suspect() -> None:
    from perfsuite.nightly.screen import screen_series
    from perfsuite.verdict.history import Point, Series

    def night(peaks: list[float]) -> Series:
        points = tuple(
            Point(f"{i:04d}_r", i, None, False, None, 0.01, None, peak_mb=p)
            for i, p in enumerate(peaks)
        )
        return Series("bench_x.py::test_x", "x", "calls", 0.05, points)

    found, _, _ = screen_series(night([*NOISY_PEAKS, 350]))  # +100% on 175
    assert found is None
    found, _, _ = screen_series(night([*NOISY_PEAKS, 900]))
    assert found is not None
    assert found.metric == "memory"
    assert "ROSE" in found.reason
    assert "(threshold 293%)" in found.reason


def test_more_cpu_per_item_is_a_suspect_judged_by_the_rank_test() -> None:
    more = [c * 1.3 for c in CPU]
    comparison = _judged(_cost(100, CPU), _cost(100, more))
    [item] = comparison.verdicts
    assert item.cpu is not None
    assert item.cpu.change == pytest.approx(0.3, abs=0.01)
    assert item.cpu_slower
    assert item.suspect  # its time is the same: the CPU makes it one
    assert any("cpu/item +30.0% ROSE" in line for line in text_lines(comparison))
    same = _judged(_cost(100, CPU), _cost(100, list(reversed(CPU))))
    assert not same.verdicts[0].cpu_slower
    assert not same.verdicts[0].suspect


def test_cpu_of_rounds_too_short_to_read_is_not_judged() -> None:
    tiny = [c / 100 for c in CPU]  # 80 us a round
    comparison = _judged(_cost(100, tiny), _cost(100, [c * 2 for c in tiny]))
    assert comparison.verdicts[0].cpu is None


def test_runs_saved_before_cost_load_and_judge_without_it() -> None:
    from perfsuite.verdict.storage import Storage

    old = Storage(DATA).load(DATA / "tiny_run.json")
    assert old.benches
    assert all(bench.cost is None for bench in old.benches.values())
    for bench in old.benches.values():
        if bench.result is not None:
            assert bench.result.cost is None
    comparison = compare_runs(old, old)
    for item in comparison.verdicts:
        assert item.cpu is None
        assert item.memory is None
    # a run without cost against one with it: nothing about cost is judged
    mixed = _judged(None, _cost(500, CPU))
    assert mixed.verdicts[0].memory is None
    assert mixed.verdicts[0].cpu is None


def test_a_damaged_cost_names_the_bench() -> None:
    from perfsuite.errors import PerfsuiteError

    broken = _cost(100, CPU)
    broken["cpu_s"] = "lots"
    with pytest.raises(PerfsuiteError, match=r"cur: bench test_x.py::test_x: cost cpu_s"):
        _run("cur", TIMES, broken)


def test_history_finds_a_peak_memory_step_and_a_cpu_step() -> None:
    from perfsuite.verdict.history import bench_series, failing_steps, steps_of

    runs = []
    for night in range(16):
        peak = 100.0 if night < 10 else 300.0  # tripled from night 10 on
        cpu = CPU if night < 6 else [c * 1.5 for c in CPU]  # half as much again from night 6
        runs.append(_run(f"{night:04d}_night", TIMES, _cost(peak, normal_cpu(cpu, night))))
    series = bench_series(runs, "test_x.py::test_x")
    assert series is not None
    steps = steps_of(series)
    found = {(s.what, s.index) for s in steps}
    assert ("peak memory", 10) in found
    assert ("cpu/item", 6) in found
    assert all(s.regression for s in steps if s.what in ("peak memory", "cpu/item"))
    assert {s.what for s in failing_steps(steps, None)} == {"peak memory", "cpu/item"}
    described = [s.describe() for s in steps]
    assert any(d.startswith("peak memory +200") for d in described), described


def normal_cpu(values: list[float], seed: int) -> list[float]:
    """``values`` with a night's own small noise."""
    noise = normal(1.0, 0.002, len(values), seed=100 + seed)
    return [v * n for v, n in zip(values, noise, strict=True)]


GPU_BENCH = """
import torch


def test_gpu_alloc(benchmark):
    def hold():
        block = torch.empty(64 * 1024 * 1024, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        return block.numel()

    torch.cuda.init()
    assert benchmark.pedantic(hold, rounds=3) == 64 * 1024 * 1024
"""


def test_gpu_peak_memory_is_recorded(tmp_path: Path) -> None:
    import subprocess
    import sys

    torch = pytest.importorskip("torch", reason="torch is not installed: no GPU peak to read")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU (torch.cuda.is_available() is False): no GPU peak to read")
    (tmp_path / "test_gpu.py").write_text(GPU_BENCH)
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "test_gpu.py", "-q", "-p", "no:randomly"),
            *("--perf-threshold=0.05", f"--benchmark-json={out}"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [bench] = json.loads(out.read_text())["benchmarks"]
    spent = Cost.from_dict(bench["extra_info"]["perfsuite"]["cost"], "test_gpu_alloc")
    assert spent.gpu_peak_mb is not None
    assert 64 <= spent.gpu_peak_mb <= 80  # 64 MB held a round, the allocator's rounding on top


def test_a_peak_under_10_mb_is_shown_to_a_tenth_not_rounded_to_0_and_1() -> None:
    assert str(MemoryChange(0.2, 0.6, 0.1)) == "peak 0.2 -> 0.6 MB"
    assert str(MemoryChange(730.4, 731.0, 0.1)) == "peak 730 -> 731 MB"
