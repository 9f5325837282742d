"""The perf fixture's measuring path, the derived columns and the summary table."""

from __future__ import annotations

from typing import Any

import pytest

from perfsuite.bench.measure import (
    BenchRecord,
    SessionResults,
    efficiency,
    items_per_second,
    record_counter,
)
from perfsuite.bench.summary import HEADER, summary_lines, summary_rows
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.result import RESULT_KEY, SCHEMA_VERSION, BenchResult, DatasetRef, Role
from perfsuite.verdict.textable import format_table

pytest_plugins = ("pytester",)


# -- throughput, speedup and efficiency ---------------------------------------------------------


def test_items_per_second() -> None:
    assert items_per_second(64, 0.5) == 128.0
    with pytest.raises(ValueError, match="items must be positive"):
        items_per_second(0, 1.0)
    with pytest.raises(ValueError, match="seconds must be positive"):
        items_per_second(1, 0.0)


def test_efficiency() -> None:
    assert efficiency(50.0, 200.0) == 0.25
    with pytest.raises(ValueError, match="roofline rate must be positive"):
        efficiency(1.0, 0.0)


def record(
    variant: str,
    rate: float | None,
    *,
    group: str = "tfdata",
    baseline: bool = False,
    roofline: bool = False,
    dataset: str | None = "h1",
    device: str = "cpu",
    counters: dict[str, int] | None = None,
    notes: dict[str, Any] | None = None,
) -> BenchRecord:
    role = Role.BASELINE if baseline else Role.ROOFLINE if roofline else Role.NONE
    result = BenchResult(
        group=group,
        variant=variant,
        role=role,
        items=8,
        unit="images",
        scale="smoke",
        device=device,
        threshold=0.05,
        dataset=DatasetRef("recipe", dataset) if dataset else None,
        counters=counters or {},
        notes=notes or {},
    )
    return BenchRecord(f"bench_x.py::test[{variant}]", result, {}, rate)


def test_finalize_fills_speedup_and_efficiency() -> None:
    results = SessionResults()
    base = record("baseline", 100.0, baseline=True)
    fast = record("parallel", 250.0)
    slow = record("serial", 40.0)
    roof = record("read_only", 500.0, group="roofline", roofline=True)
    other_data = record("other_data", 300.0, dataset="h2")
    no_base = record("alone", 10.0, group="solo")
    on_gpu = record("gpu_decode", 900.0, device="gpu")
    unmeasured = record("disabled", None)
    for r in (base, fast, slow, roof, other_data, no_base, on_gpu, unmeasured):
        results.add(r)
    assert results.rooflines() == {"h1": 500.0}
    results.finalize()
    assert base.speedup == 1.0
    assert fast.speedup == 2.5
    assert slow.speedup == 0.4
    assert other_data.speedup == 3.0  # same group's baseline, whatever its dataset
    assert fast.efficiency == 0.5
    assert base.efficiency == 0.2
    assert slow.efficiency == 0.08
    assert no_base.speedup is None
    assert roof.efficiency is None  # the roofline is the limit, not measured against it
    assert roof.speedup is None
    assert other_data.efficiency is None  # no roofline on that dataset
    assert on_gpu.efficiency is None  # the host's decode limit does not bound GPU decoding
    assert on_gpu.speedup == 9.0
    assert unmeasured.speedup is None
    assert unmeasured.efficiency is None
    saved = {
        r.variant: BenchResult.from_dict(r.extra_info[RESULT_KEY], "x") for r in results.records
    }
    assert saved["parallel"].speedup == 2.5  # what is saved is what the summary shows
    assert saved["parallel"].efficiency == 0.5
    assert saved["disabled"] == unmeasured.result


@pytest.mark.parametrize("role", ["baseline", "roofline"])
def test_a_second_baseline_or_roofline_in_a_group_is_an_error(role: str) -> None:
    results = SessionResults()
    flags: dict[str, Any] = {role: True}
    results.add(record("a", 1.0, **flags))
    results.add(record("a", 1.0, **flags))  # the same variant again (a rerun): fine
    with pytest.raises(PerfsuiteError, match=rf"group 'tfdata' already has a {role}, 'a'"):
        results.add(record("b", 1.0, **flags))


def test_finalize_rounds_to_four_places() -> None:
    results = SessionResults()
    base, var = record("b", 3.0, baseline=True), record("v", 10.0)
    results.add(base)
    results.add(var)
    results.finalize()
    assert var.speedup == round(10.0 / 3.0, 4)


def test_record_counter_lists_exact_counters_once() -> None:
    info: dict[str, Any] = {}
    record_counter(info, "traces", 3)
    record_counter(info, "traces", 4)
    record_counter(info, "recompiles", 0)
    assert info == {
        RESULT_KEY: {"schema": SCHEMA_VERSION, "counters": {"traces": 4, "recompiles": 0}}
    }


# -- the summary table ---------------------------------------------------------------------------


#: the cost columns of a bench measured without a cost (cores, items/cpu-s, peak-MB)
NO_COST = ["-", "-", "-"]


def test_summary_rows_and_lines() -> None:
    base = record("baseline", 100.0, baseline=True)
    fast = record("parallel", 1234.5, counters={"traces": 2})
    roof = record("read_only", 2469.0, group="roofline", roofline=True)
    results = SessionResults([base, fast, roof])
    results.finalize()
    rows = summary_rows(results.records)
    assert list(rows) == ["tfdata", "roofline"]
    assert rows["tfdata"] == [
        ["baseline (baseline)", "cpu", "100.0 images/s", *NO_COST, "1.00x", "4%", "-", ""],
        ["parallel", "cpu", "1,234 images/s", *NO_COST, "12.35x", "50%", "2", ""],
    ]
    assert rows["roofline"] == [
        ["read_only (roofline)", "cpu", "2,469 images/s", *NO_COST, "-", "-", "-", ""]
    ]
    lines = summary_lines(results.records)
    assert lines[0] == "group tfdata:"
    assert lines[1].split() == HEADER
    assert set(lines[2].strip()) <= {"-", " "}
    assert lines[3].split()[:4] == ["baseline", "(baseline)", "cpu", "100.0"]
    assert lines[4].split() == [
        *("parallel", "cpu", "1,234", "images/s", *NO_COST, "12.35x", "50%", "2")
    ]
    assert lines[5] == ""
    assert lines[6] == "group roofline:"
    assert summary_lines([]) == []


def test_summary_without_rate() -> None:
    rows = summary_rows([record("disabled", None)])
    assert rows == {"tfdata": [["disabled", "cpu", "-", *NO_COST, "-", "-", "-", ""]]}


def test_summary_shows_the_device_and_the_flags_its_clocks_raised() -> None:
    steady = record("steady", 10.0, device="gpu")
    steady.result = steady.result.replace(gpu={"clocks_moved": False, "throttled": False})
    hot = record("hot", 10.0, device="gpu")
    hot.result = hot.result.replace(gpu={"clocks_moved": True, "throttled": True})
    unread = record("unread", 10.0, device="gpu")
    devices = [row[1] for row in summary_rows([steady, hot, unread])["tfdata"]]
    assert devices == ["gpu", "gpu (clocks moved, throttled)", "gpu"]


def test_summary_shows_noted_figures_but_not_dataset_keys() -> None:
    rec = record(
        "e2e",
        50.0,
        notes={"input_bound_share": 0.23456, "step_time_ms": 60, "dataset_hash": "abc"},
    )
    rows = summary_rows([rec])
    assert rows["tfdata"][0][-1] == "input_bound_share=0.2346 step_time_ms=60"


def test_format_table_aligns_columns() -> None:
    lines = format_table([["a", "1"], ["long name", "1,000"]], ["variant", "n"])
    assert lines == ["variant        n", "---------  -----", "a              1", "long name  1,000"]


# -- measuring through pytest ---------------------------------------------------------------------

PERF_CALLS = """
import pytest


@pytest.mark.perf(rounds=4, warmup_rounds=2)
def test_measure_records_and_returns(perf):
    calls, setups, syncs = [], [], []

    def setup():
        setups.append(1)
        return (2,), {}

    result = perf.measure(lambda n: calls.append(n) or "done", items=6, setup=setup,
                          sync=lambda: syncs.append(1), unit="batches", params={"batch": 6})
    assert result == "done"
    assert calls == [2] * 6 and len(setups) == 6  # 2 warm-up + 4 timed
    assert len(syncs) == 12  # after each setup and after each call
    assert len(perf.timings()) == 4
    info = perf.extra_info["perfsuite"]
    assert info["unit"] == "batches" and info["items"] == 6 and info["params"] == {"batch": 6}
    assert info["group"] == "inner" and info["variant"] == "test_measure_records_and_returns"
    assert info["items_per_second"] == round(6 / perf.benchmark.stats.stats.median, 3)
    perf.count("steps", 2)
    perf.note(input_bound_share=0.25)
    assert info["counters"] == {"steps": 2}
    assert info["notes"] == {"input_bound_share": 0.25}
    assert list(perf.extra_info) == ["perfsuite"]  # one key: nothing flat beside it


@pytest.mark.perf(rounds=1)
def test_measure_once(perf):
    perf.measure(lambda: None, items=1)
    with pytest.raises(RuntimeError, match="once per bench"):
        perf.measure(lambda: None, items=1)


def test_bad_items(perf):
    with pytest.raises(ValueError, match="items must be a positive int"):
        perf.measure(lambda: None, items=0)


def test_counter_must_be_an_int(perf):
    for bad in (1.5, True, "3"):
        with pytest.raises(TypeError, match="must be an int"):
            perf.count("steps", bad)


def test_pick_and_scale(perf):
    assert perf.scale == "smoke"
    assert perf.pick(smoke=1, default=2, full=3) == 1
"""


def test_perf_fixture(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    pytester.makepyfile(test_inner=PERF_CALLS)
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke")
    result.assert_outcomes(passed=5)


GPU_CALLS = """
import pytest

from perfsuite.bench.clocks import ClockReading, ClockWatch

EVENTS = []


class FakeGPU:
    \"\"\"The gpu fixture's stand-in: its sync and its clocks are events.\"\"\"

    def __init__(self, after):
        self.after = after

    def sync(self):
        EVENTS.append("sync")

    def clock_watch(self):
        def read():  # settled at 1980 MHz; after the last of the 3 calls, self.after
            done = EVENTS.count("call") == 3
            return self.after if done else ClockReading(1980, 2619, 40, 150.0)

        def burst():
            if EVENTS[-1] != "burst":
                EVENTS.append("burst")

        return ClockWatch(burst, read, interval=60)


@pytest.fixture(params=["steady", "capped"])
def gpu(request):
    steady = ClockReading(1980, 2619, 40, 150.0)
    return FakeGPU(steady if request.param == "steady" else ClockReading(1600, 2619, 85, 700.0, 4))


@pytest.mark.perf(rounds=2, warmup_rounds=1)
def test_gpu_rounds(perf, gpu):
    EVENTS.clear()

    def setup():
        EVENTS.append("setup")
        return (), {}

    perf.measure(lambda: EVENTS.append("call"), items=1, setup=setup, device="cuda:0")
    round_ = ["setup", "sync", "call", "sync"]
    assert EVENTS == round_ + ["setup", "sync", "burst", "call", "sync"] + round_
    saved = perf.extra_info["perfsuite"]
    assert saved["device"] == "gpu"
    clocks = saved["gpu"]
    assert clocks["before"]["sm_mhz"] == 1980 and clocks["settled"] is True
    capped = gpu.after.sm_mhz == 1600
    assert (clocks["clocks_moved"], clocks["throttled"]) == (capped, capped)
    assert clocks["slowdowns"] == (["sw_power_cap"] if capped else [])
"""


def test_gpu_rounds_are_synchronized_settled_and_their_clocks_saved(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    """On a GPU, every round is synchronized after its setup and its call, the clocks are
    settled just before the first timed round (after the warm-up, outside the timing),
    and the clocks before and after are saved with the flags they raise."""
    pytester.makepyfile(test_inner=GPU_CALLS)
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke", "-rA")
    result.assert_outcomes(passed=2)


def test_bench_files_are_collected_once(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    pytester.makepyfile(helper_bench="def test_not_a_bench():\n    pass\n")
    benches = pytester.mkdir("benches")
    (benches / "bench_collected.py").write_text("def test_one():\n    pass\n")
    pytester.runpytest(*inner_args).assert_outcomes(passed=1)  # no python_files setting
    pytester.makeini("[pytest]\npython_files = test_*.py bench_*.py\n")
    pytester.runpytest(*inner_args).assert_outcomes(passed=1)  # not twice
