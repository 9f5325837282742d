"""Where a nightly suspect's A/B starts: the newest run it was screened against whose
code is not tonight's, unless the same code ran faster before (the machine's move)."""

from __future__ import annotations

from perfsuite.nightly.screen import Suspect, base_point, screen_series
from perfsuite.verdict.history import Point, Series

BEFORE = [1.0, 1.01, 0.99, 1.02, 0.98]  # five nights of commit "w"


def series(values: list[tuple[float, str]]) -> Series:
    points = tuple(
        Point(f"{i:04d}_{sha}", i, sha * 40, False, None, median, None)
        for i, (median, sha) in enumerate(values)
    )
    return Series("bench_x.py::test_x[v]", "x/v", "images", 0.05, points)


def suspect(values: list[tuple[float, str]], metric: str = "time") -> Suspect:
    return Suspect(series(values), "a band suspect", 0.3, False, 0, metric)


def test_a_slowdown_kept_on_its_commit_is_measured_from_the_code_before_it() -> None:
    """The slowdown landed last night (commit "x") and tonight is x again: the move is
    not the machine's; the A/B starts at the last run of "w"."""
    landed = suspect([*((v, "w") for v in BEFORE), (1.3, "x"), (1.32, "x")])
    assert base_point(landed).run == "0004_w"


def test_tonight_slower_than_its_own_code_before_is_the_machines_move() -> None:
    """Last night ran tonight's code at the old level: tonight's +30% is the machine's,
    so the A/B starts at last night (one commit on a clean tree on both sides)."""
    moved = suspect([*((v, "w") for v in BEFORE), (1.0, "x"), (1.3, "x")])
    assert base_point(moved).run == "0005_x"


def test_every_run_of_tonights_code_or_a_memory_suspect_starts_at_the_previous_run() -> None:
    alike = suspect([*((v, "x") for v in BEFORE), (1.3, "x")])
    assert base_point(alike).run == "0004_x"
    memory = suspect([*((v, "w") for v in BEFORE), (1.3, "x"), (1.32, "x")], "memory")
    assert base_point(memory).run == "0005_x"


def test_a_band_suspect_records_the_runs_it_was_screened_against() -> None:
    values = [*((v, "w") for v in BEFORE), (1.15, "x")]
    found, _, _ = screen_series(series(values))
    assert found is not None
    assert found.compared_from == 0  # the five runs before tonight
    assert found.metric == "time"
    assert base_point(found).run == "0004_w"
