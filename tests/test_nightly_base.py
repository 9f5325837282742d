"""The nightly's screen on constructed series: which nights are suspects, and where a
suspect's A/B starts (the newest run it was screened against whose code is not
tonight's, unless the same code ran faster before: the machine's move)."""

from __future__ import annotations

import pytest

from perfsuite.nightly.screen import Suspect, base_point, screen_series, tonight_bound
from perfsuite.verdict.changepoint import find_steps
from perfsuite.verdict.history import Point, Series
from perfsuite.verdict.stats import compare_samples

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


def constructed(medians: list[float]) -> Series:
    points = tuple(
        Point(
            run=f"{i:04d}_r", position=i, commit=None, dirty=False, date=None, median=m, rate=None
        )
        for i, m in enumerate(medians)
    )
    return Series("bench_x.py::test_x[v]", "x/v", "images", 0.05, points)


def test_a_level_kept_since_an_earlier_step_is_not_a_move() -> None:
    """After a step (an accepted slowdown), later nights are screened against the runs
    since it, not the median of both levels; a slowdown beyond that level still is."""
    wobble = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 1.01]
    history = [*wobble, *(2 * v for v in wobble)]
    kept, _, _ = screen_series(constructed([*history, 2.02]))
    assert kept is None
    slower, _, _ = screen_series(constructed([*history, 2.3]))
    assert slower is not None
    assert "against the median of the last 10 runs" in slower.reason or "step" in slower.reason


def test_a_night_outside_the_band_is_a_suspect_without_a_step() -> None:
    earlier = [1.0, 1.01, 0.99, 1.02, 0.98]  # an 8.2% band: 3 robust sigmas of these
    assert find_steps([*earlier, 1.15]) == []  # too short a history to call it a step
    suspect, counter, only_previous = screen_series(constructed([*earlier, 1.15]))
    assert suspect is not None
    assert suspect.reason == (
        "time +15.0% against the median of the last 5 runs, outside their band of 8.2%"
    )
    assert counter is None
    assert not only_previous
    inside, _, _ = screen_series(constructed([*earlier, 1.06]))  # past 5%, inside the band
    assert inside is None


def test_every_screened_night_has_its_bound() -> None:
    """Tonight's change plus the recent runs' noise band: ``same`` within a quiet
    history's threshold, else the largest regression not ruled out."""
    earlier = [1.0, 1.01, 0.99, 1.02, 0.98]  # an 8.2% band: the threshold widens to it
    wide = tonight_bound(constructed([*earlier, 1.01]))
    assert wide.threshold == pytest.approx(0.082, abs=0.001)
    assert wide.word == "no regression above +9.2%"
    quiet = [1.0, 1.001, 0.999, 1.002, 0.998]
    steady = tonight_bound(constructed([*quiet, 1.01]))
    assert steady.threshold == 0.05
    assert steady.judged
    assert steady.word == "same"
    short = tonight_bound(constructed([1.0, 1.02]))
    assert short.bound is None
    assert short.word == (
        "no bound: 1 earlier run (a noise band needs 5) and fewer than 5 saved rounds a side"
    )


def test_a_short_history_is_bounded_by_tonights_rounds_against_the_previous_runs() -> None:
    """With fewer than 5 earlier runs, the bound is the rank test's interval of tonight's
    raw rounds against the previous run's, as the gate's screen bounds a bench: ``same``
    within the threshold, a suspect where it could not rule out twice the threshold."""
    before = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01]
    steady = tonight_bound(constructed([1.0, 1.0]), (before, [v * 1.01 for v in before]))
    assert steady.interval == compare_samples(before, [v * 1.01 for v in before], 0.05).ci
    assert steady.runs == 1
    assert steady.word == "same"
    scattered = [0.7, 1.0, 1.4, 0.8, 1.3, 0.9, 1.2]
    noisy = tonight_bound(constructed([1.0, 1.0, 1.0]), (before, scattered))
    assert noisy.bound is not None
    assert noisy.bound >= 0.10
    assert noisy.too_noisy
    assert tonight_bound(constructed([1.0, 1.0]), (before[:4], before[:4])).bound is None
    suspect, _, only_previous = screen_series(constructed([1.0, 1.0, 1.0]), noisy)
    assert only_previous
    assert suspect is not None
    assert suspect.reason.startswith("too noisy tonight: no regression above +")
    assert suspect.compared_from == 1  # the previous run alone


def test_a_night_that_could_not_rule_out_twice_its_threshold_is_a_suspect() -> None:
    """+8% inside an 8.2% band is no move, but it leaves +16.8% possible, over twice the
    widened threshold: the A/B decides it."""
    earlier = [1.0, 1.01, 0.99, 1.02, 0.98]
    noisy, _, _ = screen_series(constructed([*earlier, 1.08]))
    assert noisy is not None
    assert noisy.reason == (
        "too noisy tonight: no regression above +16.8%, twice its threshold or more"
    )
    assert noisy.metric == "time"
    assert noisy.compared_from == 0
    bounded, _, _ = screen_series(constructed([*earlier, 1.07]))
    assert bounded is None
