"""BenchResult: its saved form, strict parsing, the previous layout, and notes kept apart."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from perfsuite.cli import main
from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.compare import compare_runs
from perfsuite.verdict.result import RESULT_KEY, SCHEMA_VERSION, BenchResult, DatasetRef, Role
from perfsuite.verdict.runs import load_run, parse_run
from perfsuite.verdict.stats import Verdict

pytest_plugins = ("pytester",)

#: a run saved by perfsuite before extra_info["perfsuite"] existed (flat keys), by the
#: code of the commit before this layout, from a bench with a counter and a note
LEGACY_RUN = Path(__file__).parent / "data" / "legacy-run.json"

RESULT = BenchResult(
    group="tfdata",
    variant="parallel",
    role=Role.BASELINE,
    items=32,
    unit="images",
    scale="smoke",
    device="cpu",
    threshold=0.05,
    dataset=DatasetRef("imagenet-like", "ab" * 32, images=64, size_bytes=1000),
    counters={"traces": 1},
    params={"batch": 32},
    items_per_second=1234.5,
    speedup=1.5,
    efficiency=0.4,
    notes={"input_bound_share": 0.25},
)


def run_doc(info: dict[str, Any], data: list[float] | None = None) -> dict[str, Any]:
    data = data or [0.1, 0.11, 0.09, 0.1, 0.105, 0.1, 0.095, 0.1]
    return {
        "version": "5.3.1",
        "machine_info": {},
        "datetime": "2025-01-01T00:00:00+00:00",
        "benchmarks": [
            {
                "name": "test_x[parallel]",
                "fullname": "bench_x.py::test_x[parallel]",
                "group": "tfdata",
                "extra_info": info,
                "stats": {"data": data, "median": sorted(data)[len(data) // 2]},
            }
        ],
    }


def test_round_trip_through_json() -> None:
    saved = json.loads(json.dumps(RESULT.to_dict()))
    assert saved["schema"] == SCHEMA_VERSION
    assert saved["role"] == "baseline"
    assert saved["dataset"] == {
        "name": "imagenet-like",
        "hash": "ab" * 32,
        "images": 64,
        "bytes": 1000,
    }
    assert BenchResult.from_dict(saved, "x") == RESULT
    assert RESULT.label == "tfdata/parallel"
    assert RESULT.baseline
    assert not RESULT.roofline
    assert RESULT.dataset_hash == "ab" * 32


def damaged(**changes: Any) -> dict[str, Any]:
    saved = RESULT.to_dict()
    for key, value in changes.items():
        if value is KeyError:
            del saved[key]
        else:
            saved[key] = value
    return saved


@pytest.mark.parametrize(
    ("saved", "message"),
    [
        ("not an object", "is not an object (got str)"),
        (damaged(schema=KeyError), "has no valid 'schema' version"),
        (damaged(schema=SCHEMA_VERSION + 1), "upgrade perfsuite to read this run"),
        (damaged(items=KeyError, unit=KeyError), "lacks 'items', 'unit'"),
        (damaged(extra=1), "has unknown key(s) 'extra'"),
        (damaged(role="boss"), "role must be one of baseline, roofline, none, got 'boss'"),
        (damaged(items=0), "items must be a positive integer, got 0"),
        (damaged(items=True), "items must be a positive integer, got True"),
        (damaged(group=""), "group must be a non-empty string"),
        (damaged(threshold="5%"), "threshold must be a positive number or null"),
        (damaged(counters={"traces": 1.5}), "counter 'traces' must be an integer, got 1.5"),
        (damaged(notes=[1]), "notes must be an object"),
        (damaged(dataset={"name": "x"}), "dataset needs a 'name' and a 'hash' string"),
    ],
)
def test_strict_parsing_names_the_file_and_the_bench(
    tmp_path: Path, saved: Any, message: str
) -> None:
    path = tmp_path / "0001_run.json"
    path.write_text(json.dumps(run_doc({RESULT_KEY: saved})))
    with pytest.raises(PerfsuiteError) as info:
        load_run(path)
    text = str(info.value)
    assert text.startswith(f"{path}: bench bench_x.py::test_x[parallel]: extra_info['perfsuite']")
    assert message in text
    assert "\n" not in text


def test_a_bench_perfsuite_did_not_measure_has_no_result() -> None:
    run = parse_run(run_doc({"anything": 1}), "plain.json")
    (bench,) = run.benches.values()
    assert bench.result is None
    assert bench.label == "test_x[parallel]"
    assert bench.items is None


def test_a_run_saved_by_the_previous_layout_loads() -> None:
    run = load_run(LEGACY_RUN)
    assert json.loads(LEGACY_RUN.read_text())["benchmarks"][0]["extra_info"]["group"] == "pipe"
    results = {b.name: b.result for b in run.benches.values()}
    faster = results["test_pipeline[faster]"]
    assert faster is not None
    assert (faster.group, faster.variant, faster.role) == ("pipe", "faster", Role.NONE)
    assert (faster.items, faster.unit, faster.scale, faster.device) == (8, "images", "smoke", "cpu")
    assert faster.threshold == 0.05
    assert faster.params == {"delay": 0.002}
    assert faster.dataset is not None
    assert faster.dataset.name == "fixed-224"
    assert len(faster.dataset.hash) == 64
    assert faster.dataset.images == 2
    assert faster.counters == {"traces": 3}
    assert faster.notes == {"input_bound_share": 0.25}
    assert faster.speedup is not None
    assert faster.efficiency is not None
    base, roof = results["test_pipeline[baseline]"], results["test_read_only"]
    assert base is not None
    assert base.role is Role.BASELINE
    assert roof is not None
    assert roof.role is Role.ROOFLINE


def test_a_draft_is_a_bench_perfsuite_did_not_measure() -> None:
    draft = {"schema": SCHEMA_VERSION, "counters": {"traces": 2}}  # trace_counter, no measure
    (bench,) = parse_run(run_doc({RESULT_KEY: draft}), "plain.json").benches.values()
    assert bench.result is None
    assert bench.counters() == {"traces": 2}  # its exact counters are judged all the same
    with pytest.raises(PerfsuiteError, match="lacks 'group'"):  # a draft plus more is damage
        parse_run(run_doc({RESULT_KEY: {**draft, "items": 4}}), "damaged.json")


def test_the_previous_layout_without_items_is_refused_with_its_reason() -> None:
    doc = run_doc({"group": "g", "variant": "v", "unit": "images"})
    with pytest.raises(PerfsuiteError, match="previous perfsuite layout without a positive"):
        parse_run(doc, "old.json")


def new_layout_copy(legacy: dict[str, Any], slowdown: float) -> dict[str, Any]:
    """The legacy run re-saved in the current layout, its timings scaled by ``slowdown``."""
    doc = copy.deepcopy(legacy)
    run = parse_run(legacy, "legacy")
    for entry in doc["benchmarks"]:
        result = run.benches[entry["fullname"]].result
        assert result is not None
        entry["extra_info"] = {RESULT_KEY: result.to_dict()}
        entry["stats"]["data"] = [t * slowdown for t in entry["stats"]["data"]]
        entry["stats"]["median"] *= slowdown
    doc["datetime"] = "2030-01-01T00:00:00+00:00"
    return doc


@pytest.mark.parametrize(("slowdown", "status"), [(1.0, ExitCode.OK), (1.5, ExitCode.REGRESSION)])
def test_perfsuite_compare_judges_a_legacy_run_against_a_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], slowdown: float, status: int
) -> None:
    current = tmp_path / "0002_new.json"
    current.write_text(json.dumps(new_layout_copy(json.loads(LEGACY_RUN.read_text()), slowdown)))
    assert main(["compare", str(LEGACY_RUN), str(current)]) == status
    out = capsys.readouterr().out
    assert "pipe/faster" in out
    assert "not comparable" not in out  # scale and dataset hash read from both layouts
    assert ("SLOWER" in out) is (slowdown > 1)


def test_notes_cannot_change_a_verdict() -> None:
    slower = [t * 1.3 for t in [0.1, 0.11, 0.09, 0.1, 0.105, 0.1, 0.095, 0.1]]
    baseline = parse_run(run_doc({RESULT_KEY: RESULT.to_dict()}), "base.json")
    overriding = {"threshold": 0.9, "items": 1, "scale": "full", "dataset_hash": "other"}
    noted = RESULT.replace(notes=overriding)
    current = parse_run(run_doc({RESULT_KEY: noted.to_dict()}, slower), "cur.json")
    (item,) = compare_runs(baseline, current).verdicts
    assert item.verdict is Verdict.SLOWER  # 30% slower: threshold 0.05 held, not 0.9
    assert item.time is not None
    assert item.time.threshold == 0.05
    assert item.not_comparable is None  # scale and dataset are the result's, not the notes'
    assert item.current.items == 32


NOTE_OVERRIDES = """
import pytest


@pytest.mark.perf(group="g", rounds=2, warmup_rounds=0)
def test_note_changes_nothing_a_verdict_reads(perf):
    perf.note(threshold=9.0, items=1, scale="full", group="other")
    perf.measure(lambda: None, items=4)
    perf.note(threshold=9.0, items=1, dataset_hash="x")
    saved = perf.extra_info["perfsuite"]
    assert (saved["threshold"], saved["items"], saved["scale"], saved["group"]) == (
        0.05, 4, "smoke", "g")
    assert saved["dataset"] is None
    assert saved["notes"] == {
        "threshold": 9.0, "items": 1, "scale": "full", "group": "other", "dataset_hash": "x"}
"""


def test_perf_note_is_kept_apart(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    pytester.makepyfile(test_inner=NOTE_OVERRIDES)
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke")
    result.assert_outcomes(passed=1)


PLAIN_BENCH_WITH_COUNTER = """
def test_plain(benchmark, trace_counter):
    trace_counter.add("traces", 2)
    benchmark.pedantic(lambda: None, rounds=3, iterations=1)
"""


def test_a_plain_bench_that_counted_saves_a_loadable_run(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    pytester.makepyfile(test_inner=PLAIN_BENCH_WITH_COUNTER)
    out = pytester.path / "out.json"
    pytester.runpytest(*inner_args, f"--benchmark-json={out}").assert_outcomes(passed=1)
    (bench,) = load_run(out).benches.values()
    assert bench.result is None  # a draft: judged on its timings, and its counters
    assert bench.counters() == {"traces": 2}
    assert len(bench.data) == 3
