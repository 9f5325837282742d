"""Run comparisons: exact counters, added and removed benches, machine facts, run loading."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfsuite.errors import PerfsuiteError
from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.compare import compare_runs
from perfsuite.verdict.gate_rules import GateOutcome, gate_decision
from perfsuite.verdict.judge import Confirmed, noise_band
from perfsuite.verdict.machine import machine_mismatch
from perfsuite.verdict.result import BenchResult, DatasetRef, Role
from perfsuite.verdict.runs import load_run, parse_run
from perfsuite.verdict.stats import (
    Verdict,
)
from perfsuite.verdict.storage import Storage
from perfsuite.verdict.table import bound_text, markdown_lines, text_lines
from tests.samples import normal

FACTS: dict[str, Any] = {
    "cpu_model": "Test CPU 3000",
    "cpu_count": 2,
    "gpu_name": None,
    "gpu_count": 0,
    "gpu_memory_bytes": None,
    "gpu_driver": None,
    "cuda": None,
    "cudnn": None,
    "versions": {"tensorflow": "2.21.0", "numpy": "2.4.6", "perfsuite": "0.1.0"},
}


def bench_doc(
    name: str,
    data: list[float],
    *,
    items: int = 32,
    counters: dict[str, int] | None = None,
    with_data: bool = True,
    scale: str = "smoke",
    dataset_hash: str = "abc",
) -> dict[str, Any]:
    result = BenchResult(
        group="g",
        variant=name,
        role=Role.NONE,
        items=items,
        unit="images",
        scale=scale,
        device="cpu",
        threshold=0.05,
        dataset=DatasetRef("recipe", dataset_hash),
        counters=counters or {},
    )
    stats: dict[str, Any] = {"median": float(np.median(data)), "rounds": len(data)}
    if with_data:
        stats["data"] = list(data)
    return {
        "group": result.group,
        "name": f"test_x[{name}]",
        "fullname": f"bench_x.py::test_x[{name}]",
        "extra_info": {"perfsuite": result.to_dict()},
        "stats": stats,
    }


def run_doc(benches: list[dict[str, Any]], facts: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "machine_info": {"python_version": "3.11.9", "perfsuite": facts or FACTS},
        "commit_info": {},
        "benchmarks": benches,
        "datetime": "2025-01-01T00:00:00+00:00",
        "version": "5.3.1",
    }


# -- runs ---------------------------------------------------------------------------


def compare_docs(base: dict[str, Any], cur: dict[str, Any]) -> Any:
    return compare_runs(parse_run(base, "base.json"), parse_run(cur, "cur.json"))


def test_run_comparison_table_names_directions() -> None:
    base = run_doc([bench_doc("a", normal(0.10, 0.001)), bench_doc("b", normal(0.10, 0.001))])
    cur = run_doc(
        [bench_doc("a", normal(0.13, 0.001, seed=1)), bench_doc("b", normal(0.10, 0.001, seed=2))]
    )
    comparison = compare_docs(base, cur)
    by_label = {v.label: v for v in comparison.verdicts}
    assert by_label["g/a"].verdict is Verdict.SLOWER
    assert by_label["g/a"].rate_change is not None
    assert by_label["g/a"].rate_change < -0.2
    assert by_label["g/b"].verdict in (Verdict.SAME, Verdict.INCONCLUSIVE)
    text = "\n".join(text_lines(comparison))
    assert "SLOWER" in text
    assert "time +3" in text
    assert "images/s -2" in text
    decision = gate_decision(comparison, allow_mismatch=False)
    assert decision.outcome is GateOutcome.REGRESSION
    assert "g/a (slower)" in decision.message
    assert any(line.startswith("| **`g/a`**") for line in markdown_lines(comparison))


def test_a_suspect_that_passes_keeps_the_screen_word() -> None:
    """A suspect its A/B passed is called by what the screen read (a bench suspected for
    its changed code may have read faster), then the outcome; one confirmed or left
    unconfirmed is called slower."""
    base = run_doc([bench_doc("a", normal(0.10, 0.001)), bench_doc("b", normal(0.10, 0.001))])
    cur = run_doc(
        [bench_doc("a", normal(0.13, 0.001, seed=1)), bench_doc("b", normal(0.08, 0.001, seed=2))]
    )
    comparison = compare_docs(base, cur)
    slower, faster = comparison.verdicts
    words = {}
    for outcome in ("cleared", "not shown", "machine", "confirmed", "unconfirmed"):
        marked = [
            replace(v, suspected="its code changed", confirmation=Confirmed(outcome, "A/B"))
            for v in comparison.verdicts
        ]
        rows = [
            re.split(r"\s{2,}", line) for line in text_lines(replace(comparison, verdicts=marked))
        ]
        words[outcome] = [row[1].split(" [")[0] for row in rows if row[0] in ("g/a", "g/b")]
    assert words == {
        "cleared": ["slower? cleared", "faster? cleared"],
        "not shown": ["slower? not shown", "faster? not shown"],
        "machine": [  # no A/B measured them: each says the screen's X
            f"slower? the machine's, {bound_text(slower.bound)}",
            f"faster? the machine's, {bound_text(faster.bound)}",
        ],
        "confirmed": ["SLOWER (confirmed)"] * 2,
        "unconfirmed": ["SLOWER? unconfirmed", "faster? UNCONFIRMED"],
    }


def test_a_suspect_confirmed_by_its_cost_alone_says_its_cost_rose() -> None:
    """A bench whose code changed, its time not shown slower by the A/B but its CPU per
    call confirmed risen, fails the gate; its row keeps the screen's word for the time
    and says the cost rose, never ``SLOWER (confirmed)``."""
    base = run_doc([bench_doc("a", normal(0.10, 0.001)), bench_doc("b", normal(0.10, 0.001))])
    cur = run_doc(
        [bench_doc("a", normal(0.13, 0.001, seed=1)), bench_doc("b", normal(0.08, 0.001, seed=2))]
    )
    rose = Confirmed("confirmed", "cpu confirmed by A/B: +14.8%", cost=True)
    marked = replace(
        compare_docs(base, cur),
        verdicts=[
            replace(v, suspected="its code changed", confirmation=rose)
            for v in compare_docs(base, cur).verdicts
        ],
    )
    rows = [re.split(r"\s{2,}", line) for line in text_lines(marked)]
    words = [row[1].split(" [")[0] for row in rows if row[0] in ("g/a", "g/b")]
    assert words == ["slower? cost ROSE (confirmed)", "faster? cost ROSE (confirmed)"]
    decision = gate_decision(marked, allow_mismatch=False)
    assert decision.outcome is GateOutcome.REGRESSION
    assert decision.exit_status == ExitCode.REGRESSION


def test_exact_counter_rise_is_a_regression() -> None:
    data = normal(0.1, 0.001)
    base = run_doc([bench_doc("r", data, counters={"traces": 4})])
    cur = run_doc([bench_doc("r", list(data), counters={"traces": 9})])
    comparison = compare_docs(base, cur)
    (item,) = comparison.verdicts
    assert item.verdict is Verdict.SAME
    assert item.regressed
    assert [str(c) for c in item.counters_rose] == ["traces 4 -> 9"]
    decision = gate_decision(comparison, allow_mismatch=False)
    assert decision.outcome is GateOutcome.REGRESSION
    assert "traces 4 -> 9" in decision.message
    assert "traces 4 -> 9 ROSE" in "\n".join(text_lines(comparison))


def test_exact_counter_fall_is_not_a_regression() -> None:
    data = normal(0.1, 0.001)
    base = run_doc([bench_doc("r", data, counters={"traces": 9})])
    cur = run_doc([bench_doc("r", list(data), counters={"traces": 1})])
    assert gate_decision(compare_docs(base, cur), allow_mismatch=False).passed


def test_added_removed_and_not_comparable_are_listed() -> None:
    data = normal(0.1, 0.001)
    base = run_doc([bench_doc("old", data), bench_doc("s", data, scale="smoke")])
    cur = run_doc([bench_doc("new", data), bench_doc("s", normal(0.5, 0.001), scale="default")])
    comparison = compare_docs(base, cur)
    assert comparison.added == ["bench_x.py::test_x[new]"]
    assert comparison.removed == ["bench_x.py::test_x[old]"]
    (item,) = comparison.verdicts
    assert item.verdict is None
    assert item.not_comparable == "scale smoke -> default"
    decision = gate_decision(comparison, allow_mismatch=False)
    assert not decision.passed  # nothing was judged at all: the gate does not pass
    assert "none of the baseline's 1 benches ran comparably" in decision.message
    text = "\n".join(text_lines(comparison))
    assert "not comparable: g/s: scale smoke -> default" in text
    assert "added since the baseline (not judged): bench_x.py::test_x[new]" in text


def test_a_removed_bench_beside_judged_ones_does_not_fail_the_gate() -> None:
    data = normal(0.1, 0.001)
    base = run_doc([bench_doc("old", data), bench_doc("kept", data)])
    cur = run_doc([bench_doc("kept", normal(0.1, 0.001, seed=3))])
    comparison = compare_docs(base, cur)
    assert comparison.removed == ["bench_x.py::test_x[old]"]
    assert gate_decision(comparison, allow_mismatch=False).passed


def test_baseline_without_raw_samples_is_never_judged_from_medians() -> None:
    base = run_doc([bench_doc("a", normal(0.10, 0.001), with_data=False)])
    cur = run_doc([bench_doc("a", normal(0.13, 0.001, seed=1))])
    comparison = compare_docs(base, cur)
    (item,) = comparison.verdicts
    assert item.verdict is Verdict.INCONCLUSIVE
    assert not item.judged
    assert not item.regressed
    assert item.time is not None
    assert item.time.change == pytest.approx(0.3, abs=0.02)
    assert item.time.fallback is not None
    assert "baseline has no raw samples" in item.time.fallback
    assert "--benchmark-save-data" in item.time.fallback
    text = "\n".join(text_lines(comparison))
    assert "inconclusive, TOO NOISY: no interval [1]" in text
    assert "[1] baseline has no raw samples" in text
    decision = gate_decision(comparison, allow_mismatch=False)
    assert decision.outcome is GateOutcome.NOTHING_JUDGED
    assert decision.exit_status == 3


def test_machine_mismatch_lists_what_differs() -> None:
    other = dict(FACTS, cpu_count=4, versions=dict(FACTS["versions"], tensorflow="2.20.0"))
    data = normal(0.1, 0.001)
    base = run_doc([bench_doc("a", data)], facts=other)
    cur = run_doc([bench_doc("a", list(data))])
    comparison = compare_docs(base, cur)
    assert [str(d) for d in comparison.mismatch] == [
        "cpu_count 4 -> 2",
        "tensorflow 2.20.0 -> 2.21.0",
    ]
    refused = gate_decision(comparison, allow_mismatch=False)
    assert refused.outcome is GateOutcome.MISMATCH
    assert "cpu_count 4 -> 2" in refused.message
    assert gate_decision(comparison, allow_mismatch=True).passed


def test_a_baseline_saved_without_perfsuite_is_compared_on_what_it_recorded() -> None:
    """A run saved by pytest-benchmark alone has no perfsuite facts: its CPU model and
    count (py-cpuinfo's) and Python decide; GPU and stack versions are not held
    against it."""
    plain = run_doc([bench_doc("a", normal(0.1, 0.001))])
    del plain["machine_info"]["perfsuite"]
    plain["machine_info"]["cpu"] = {"brand_raw": "Test CPU 3000 @ 2GHz", "count": 2}
    cur = run_doc([bench_doc("a", normal(0.1, 0.001, seed=1))])
    # both read as pytest-benchmark records them, whatever perfsuite's facts say
    cur["machine_info"]["cpu"] = {"brand_raw": "Test CPU 3000 @ 2GHz", "count": 2}
    assert compare_docs(plain, cur).mismatch == []
    plain["machine_info"]["cpu"]["count"] = 8
    assert [str(d) for d in compare_docs(plain, cur).mismatch] == ["cpu_count 8 -> 2"]
    del plain["machine_info"]["cpu"]
    assert [str(d) for d in compare_docs(plain, cur).mismatch] == [
        "cpu_model - -> Test CPU 3000 @ 2GHz",
        "cpu_count - -> 2",
    ]


def test_perfsuite_version_is_not_a_mismatch() -> None:
    newer = dict(FACTS, versions=dict(FACTS["versions"], perfsuite="9.9.9"))
    base, cur = parse_run(run_doc([], facts=newer), "b"), parse_run(run_doc([]), "c")
    assert machine_mismatch(base, cur) == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("this is not json", "not valid JSON"),
        ('{"benchmarks": [{"fullname": "x", "st', "truncated JSON"),
        ("", "empty file"),
        ('{"benchmarks": []}', "no 'version' field"),
        ('{"version": "2.1.0", "benchmarks": []}', "pytest-benchmark 2.1.0"),
        ('{"version": "5.3.1"}', "no 'benchmarks' list"),
        ("[1, 2]", "top level is not an object"),
        ('{"version": "5.3.1", "benchmarks": [{"name": "x"}]}', "no 'fullname'"),
    ],
)
def test_bad_run_files_name_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "0001_bad.json"
    path.write_text(content)
    with pytest.raises(PerfsuiteError, match=message) as info:
        load_run(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def save(storage: Path, machine: str, name: str, doc: dict[str, Any]) -> Path:
    path = storage / machine / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_storage_resolves_run_ids(tmp_path: Path) -> None:
    doc = run_doc([])
    first = save(tmp_path, "m1", "0001_first", doc)
    second = save(tmp_path, "m1", "0002_second", doc)
    other = save(tmp_path, "m2", "0003_other", doc)
    storage = Storage(tmp_path, "m1")
    assert storage.runs() == [first, second]
    assert storage.latest() == second
    assert storage.resolve("0001") == first
    assert storage.resolve("0001_first") == first
    assert storage.resolve("m2/0003") == other
    assert storage.resolve(str(second)) == second
    assert Storage(tmp_path).latest() == other
    assert Storage(tmp_path / "missing", "m1").latest() is None


def test_unknown_run_id_lists_the_closest(tmp_path: Path) -> None:
    for name in ("0001_nightly", "0002_nightly", "0003_feature"):
        save(tmp_path, "m1", name, run_doc([]))
    with pytest.raises(PerfsuiteError, match="run '0004_nightly' not found") as info:
        Storage(tmp_path, "m1").resolve("0004_nightly")
    assert "closest: " in str(info.value)
    assert "0002_nightly" in str(info.value)
    with pytest.raises(PerfsuiteError, match="empty: no such folder"):
        Storage(tmp_path / "empty", "m1").resolve("0001")


# -- run-to-run noise from the saved history ---------------------------------------------


def history_docs(medians: list[float]) -> list[Any]:
    """Earlier runs of bench "a" whose medians are ``medians`` (tight within each run)."""
    return [
        parse_run(run_doc([bench_doc("a", normal(m, m * 0.002, seed=i))]), f"h{i}.json")
        for i, m in enumerate(medians)
    ]


def test_noise_band_needs_enough_history() -> None:
    assert noise_band([1.0, 1.2, 0.8, 1.1]) is None  # 4 < MIN_HISTORY
    # log medians -0.1, 0.0, -0.05, 0.1, 0.05: adjacent differences 0.1, 0.05, 0.15, 0.05
    sigma = 1.4826 * 0.075 / math.sqrt(2)
    band = noise_band([math.exp(v) for v in (-0.1, 0.0, -0.05, 0.1, 0.05)])
    assert band == pytest.approx(math.exp(3 * sigma) - 1)


def test_a_bench_judged_with_its_history_keeps_the_spread_of_its_unchanged_runs() -> None:
    base = run_doc([bench_doc("a", normal(0.100, 0.0005))])
    cur = run_doc([bench_doc("a", normal(0.101, 0.0005, seed=1))])
    logs = (-0.1, 0.0, -0.05, 0.1, 0.05)  # adjacent differences 0.1, 0.05, 0.15, 0.05
    history = history_docs([0.1 * math.exp(v) for v in logs])
    found = compare_runs(parse_run(base, "b.json"), parse_run(cur, "c.json"), history=history)
    # each run's median off its level by its rounds' 0.2% noise
    assert found.verdicts[0].spread == pytest.approx(1.4826 * 0.075, rel=0.03)
    short = compare_runs(parse_run(base, "b.json"), parse_run(cur, "c.json"), history=history[:4])
    assert short.verdicts[0].spread is None  # 4 runs < MIN_HISTORY


def test_a_step_in_the_history_is_not_noise() -> None:
    """Runs before a 4x change of the bench's work and runs after it: the band is what
    runs of one level spread, and a later 4x slowdown is judged slower, not noise."""
    steady = [1.0, 1.01, 0.99]
    band = noise_band([*(0.025 * m for m in steady), *(0.100 * m for m in steady)])
    assert band is not None
    assert band < 0.1
    base = run_doc([bench_doc("a", normal(0.100, 0.0005))])
    cur = run_doc([bench_doc("a", normal(0.400, 0.002, seed=1))])
    history = history_docs([0.025, 0.0252, 0.0248, 0.100, 0.101, 0.099])
    comparison = compare_runs(parse_run(base, "b.json"), parse_run(cur, "c.json"), history=history)
    item = comparison.verdicts[0]
    assert item.verdict is Verdict.SLOWER
    assert item.time is not None
    assert item.time.threshold < 0.1


def test_noisy_machine_history_widens_the_threshold() -> None:
    # Unchanged runs of this bench spread +-10% on this machine: a 12% change, though
    # significant within the two runs, is inside that noise and is not called slower.
    base = run_doc([bench_doc("a", normal(0.100, 0.0005))])
    cur = run_doc([bench_doc("a", normal(0.112, 0.0005, seed=1))])
    history = history_docs([0.09, 0.11, 0.10, 0.095, 0.105, 0.092, 0.108])
    plain = compare_docs(base, cur).verdicts[0]
    assert plain.verdict is Verdict.SLOWER
    widened = compare_runs(parse_run(base, "b.json"), parse_run(cur, "c.json"), history=history)
    item = widened.verdicts[0]
    assert item.verdict is not Verdict.SLOWER
    assert item.time is not None
    assert item.time.threshold > 0.12
    shown = f"{item.time.threshold * 100:.3g}%"  # the note and the verdict cell agree
    assert f"threshold widened from 5% to {shown}:" in str(item.note)
    assert all(x in "\n".join(text_lines(widened)) for x in (f"(>{shown})", "threshold widened"))


def test_noisy_history_still_catches_a_change_beyond_the_noise() -> None:
    base = run_doc([bench_doc("a", normal(0.100, 0.0005))])
    cur = run_doc([bench_doc("a", normal(0.150, 0.0005, seed=1))])
    history = history_docs([0.09, 0.11, 0.10, 0.095, 0.105, 0.092, 0.108])
    comparison = compare_runs(parse_run(base, "b.json"), parse_run(cur, "c.json"), history=history)
    assert comparison.verdicts[0].verdict is Verdict.SLOWER


def test_quiet_machine_history_keeps_the_threshold() -> None:
    base = run_doc([bench_doc("a", normal(0.100, 0.0005))])
    cur = run_doc([bench_doc("a", normal(0.112, 0.0005, seed=1))])
    history = history_docs([0.100, 0.1005, 0.0995, 0.1002, 0.0998, 0.1001])
    comparison = compare_runs(parse_run(base, "b.json"), parse_run(cur, "c.json"), history=history)
    item = comparison.verdicts[0]
    assert item.verdict is Verdict.SLOWER
    assert item.note is None
    assert item.time is not None
    assert item.time.threshold == 0.05


def test_history_from_another_machine_or_dataset_is_ignored() -> None:
    base = run_doc([bench_doc("a", normal(0.100, 0.0005))])
    cur = run_doc([bench_doc("a", normal(0.112, 0.0005, seed=1))])
    medians = [0.09, 0.11, 0.10, 0.095, 0.105, 0.092, 0.108]
    other_machine = [
        parse_run(run_doc([bench_doc("a", normal(m, 0.0002))], {**FACTS, "cpu_count": 64}), "o")
        for m in medians
    ]
    other_data = [
        parse_run(run_doc([bench_doc("a", normal(m, 0.0002), dataset_hash="zzz")]), "d")
        for m in medians
    ]
    for history in (other_machine, other_data):
        comparison = compare_runs(
            parse_run(base, "b.json"), parse_run(cur, "c.json"), history=history
        )
        assert comparison.verdicts[0].verdict is Verdict.SLOWER
