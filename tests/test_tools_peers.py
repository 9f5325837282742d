"""The peer tools' output reads back as verdicts and changes
(``tools/validation/peers.py``), on constructed output: nothing is timed."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tools.validation import peers, user_suite


@pytest.mark.parametrize(
    ("lines", "verdict", "change"),
    [
        (
            ["Mean +- std dev: [base] 17.1 ms +- 2.2 ms -> [case] 21.5 ms +- 3.9 ms: 1.25x slower"],
            "slower",
            0.25,
        ),
        (
            ["Mean +- std dev: [base] 20.0 ms +- 0.1 ms -> [case] 16.0 ms +- 0.1 ms: 1.25x faster"],
            "faster",
            -0.2,
        ),
        (
            ["decode_all: Mean +- std dev: 20.0 ms +- 0.1 ms -> 20.0 ms +- 0.1 ms: no change"],
            "same",
            0.0,
        ),
        (["Benchmark hidden because not significant (1): decode_all"], "same", None),
        (["Not significant!"], "same", None),
        (["Traceback (most recent call last):", "FileNotFoundError: base.json"], "error", None),
    ],
)
def test_compare_to_output_reads_as_a_verdict(
    lines: list[str], verdict: str, change: float | None
) -> None:
    said, measured = peers.compare_to_verdict(lines)
    assert said == verdict
    assert measured == (None if change is None else pytest.approx(change))


REGRESSED = [
    "----------------------------------------",
    "Performance has regressed:",
    "\ttest_decode (0001_e2690aa) - Field 'median' has failed PercentageRegressionCheck",
    "pytest_benchmark.session.PerformanceRegression: Performance has regressed.",
]


def test_pytest_benchmark_compare_reads_as_a_verdict() -> None:
    assert peers.benchmark_verdict(1, REGRESSED) == "slower"
    assert peers.benchmark_verdict(0, ["1 passed in 1.95s"]) == "pass"
    assert peers.benchmark_verdict(1, ["1 failed in 0.20s"]) == "error"
    assert peers.benchmark_verdict(4, ["ERROR: file or directory not found"]) == "error"


def _saved(path: Path, median: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    benches = [
        {"name": "test_decode_pedantic", "stats": {"median": 1.0}},
        {"name": "test_decode", "stats": {"median": median}},
    ]
    path.write_text(json.dumps({"benchmarks": benches}))


def test_saved_medians_oldest_first(tmp_path: Path) -> None:
    _saved(tmp_path / "Linux-CPython-3.11-64bit" / "0002_bbb_20261126.json", 0.022)
    _saved(tmp_path / "Linux-CPython-3.11-64bit" / "0001_aaa_20261126.json", 0.020)
    medians = peers.saved_medians(tmp_path)
    assert medians == [0.020, 0.022]
    assert peers.ratio_change(*medians) == pytest.approx(0.1)


def test_pyperf_values_leave_out_calibration_and_warmups(tmp_path: Path) -> None:
    runs = [
        {"warmups": [[1, 0.02], [8, 0.021]]},
        {"warmups": [[8, 0.5]], "values": [0.02, 0.03]},
        {"values": [0.04]},
    ]
    path = tmp_path / "base.json"
    path.write_text(json.dumps({"benchmarks": [{"runs": runs}], "version": "1.0"}))
    assert peers.pyperf_values(path) == [0.02, 0.03, 0.04]


def test_pyperf_script_is_seeded_as_the_suite() -> None:
    source = peers.pyperf_source()
    ast.parse(source)
    seed = source.split("default_rng(")[1].split(")")[0]
    assert f"default_rng({seed})" in user_suite.COMMON
    assert "test_decode.decode_all" in source


def test_table_counts_verdicts_per_case() -> None:
    said = (("slower", 0.1, 6.0), ("pass", 0.02, 8.0), ("error", None, 3.0))
    runs = [{"verdict": v, "change": c, "seconds": s} for v, c, s in said]
    lines = peers.table("pytest-benchmark", {"+10%": runs})
    assert lines[-1] == (
        "| pytest-benchmark | +10% | 3 | 1 / - / 1 (1 errors) | +6.0% (+2.0% .. +10.0%) "
        "| 6 (3 .. 8) |"
    )
    same = peers.table("pyperf", {"unchanged": [{**runs[1], "verdict": "same"}]})
    assert "| 0 / 0 / 1 |" in same[-1]


def test_unknown_case_or_tool_is_refused() -> None:
    args = peers.parse_args(["--cases", "unchanged, +10%", "--tools", "pyperf"])
    assert (args.cases, args.tools) == (["unchanged", "+10%"], ["pyperf"])
    for bad in (["--cases", "+7%"], ["--tools", "asv"]):
        with pytest.raises(SystemExit):
            peers.parse_args(bad)
