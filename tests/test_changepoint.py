"""Change points of a series of medians, on constructed and seeded series."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from perfsuite.verdict.changepoint import (
    MIN_POINTS,
    STEP_ALPHA,
    STEP_CONFIDENCE,
    find_steps,
    place,
    propose,
    prune,
    robust_sigma,
    step_level,
)


def lognormal(n: int, sigma: float, seed: int) -> list[float]:
    """``n`` medians around 1 with lognormal noise (``sigma`` of the log), seeded."""
    return [float(x) for x in np.exp(np.random.default_rng(seed).normal(0.0, sigma, n))]


def stepped(values: list[float], at: int, factor: float, until: int | None = None) -> list[float]:
    end = len(values) if until is None else until
    return [v * factor if at <= i < end else v for i, v in enumerate(values)]


def test_a_clear_step_is_found_at_its_exact_place() -> None:
    (step,) = find_steps(stepped(lognormal(30, 0.01, seed=0), 13, 1.2))
    assert (step.index, step.n_before, step.n_after) == (13, 13, 17)
    assert step.up
    assert not step.down
    assert step.change == pytest.approx(0.2008, abs=1e-4)
    assert step.ci[0] < step.change < step.ci[1]
    assert step.p_value < step_level(30)


def test_a_flat_seeded_series_raises_none() -> None:
    assert find_steps(lognormal(30, 0.05, seed=0)) == []


def test_flat_series_raise_a_false_step_at_the_measured_rate() -> None:
    """5 of these 200 flat series of 30 runs (5% noise) raise a step: STEP_ALPHA is 2.5%."""
    raised = {
        seed: [(s.index, round(s.change, 4)) for s in steps]
        for seed in range(200)
        if (steps := find_steps(lognormal(30, 0.05, seed)))
    }
    assert raised == {
        8: [(7, 0.073)],
        11: [(20, -0.0511)],
        92: [(4, 0.0733), (28, 0.116)],
        105: [(11, -0.058)],
        125: [(2, 0.115)],
    }


def test_the_reported_magnitude_and_interval() -> None:
    before = [1.01, 1 / 1.01] * 5  # geometric mean exactly 1, log noise +-log(1.01)
    (step,) = find_steps(before + [1.25 * v for v in before])
    assert step.index == 10
    assert step.change == pytest.approx(0.25, abs=1e-12)
    sigma = math.log(1.01) * math.sqrt(20 / 18)  # pooled, 18 degrees of freedom
    half = float(student_t.ppf(0.5 + STEP_CONFIDENCE / 2, 18)) * sigma * math.sqrt(1 / 10 + 1 / 10)
    assert step.ci == pytest.approx((1.25 * math.exp(-half) - 1, 1.25 * math.exp(half) - 1))
    assert step.p_value == pytest.approx(
        2 * float(student_t.sf(math.log(1.25) / (sigma * math.sqrt(0.2)), 18))
    )


def test_a_step_back_down_is_a_second_step() -> None:
    steps = find_steps(stepped(lognormal(30, 0.01, seed=2), 10, 1.15, until=20))
    assert [(s.index, round(s.change, 3)) for s in steps] == [(10, 0.149), (20, -0.131)]
    assert [s.up for s in steps] == [True, False]
    assert [s.down for s in steps] == [False, True]


def test_a_step_at_the_newest_run_is_found() -> None:
    values = lognormal(12, 0.02, seed=1)
    values[-1] *= 1.5
    (step,) = find_steps(values)
    assert (step.index, step.n_before, step.n_after) == (11, 11, 1)
    assert step.change == pytest.approx(0.5102, abs=1e-4)


def test_min_change_leaves_out_smaller_steps() -> None:
    values = stepped(lognormal(30, 0.005, seed=3), 15, 1.03)
    (step,) = find_steps(values)
    assert step.index == 15
    assert step.change == pytest.approx(0.0328, abs=1e-4)
    assert find_steps(values, min_change=0.05) == []


def test_every_step_found_has_an_interval_that_excludes_zero() -> None:
    for seed in range(20):
        values = stepped(lognormal(30, 0.05, seed), 20, 1.1)
        assert all(s.up or s.down for s in find_steps(values))


def test_proposals_are_pruned_and_placed() -> None:
    logs = np.log(np.array(stepped(lognormal(30, 0.01, seed=0), 13, 1.2)))
    level = step_level(30)
    assert propose(logs) == [8, 13]  # lenient on purpose: the t-tests decide
    assert prune(logs, [8, 13], level) == [13]
    assert prune(logs, [5, 13, 22], level) == [13]
    assert place(logs, [11], level) == [13]
    assert place(logs, [15], level) == [13]
    assert place(logs, [], level) == []


def test_one_run_alone_is_an_outlier_unless_it_is_the_newest() -> None:
    values = lognormal(20, 0.01, seed=5)
    spike = [v * 1.5 if i == 9 else v for i, v in enumerate(values)]
    assert find_steps(spike) == []
    assert prune(np.log(np.array(spike)), [9, 10], step_level(20)) == []
    first = [v * 1.5 if i == 0 else v for i, v in enumerate(values)]
    assert find_steps(first) == []
    newest = [v * 1.5 if i == 19 else v for i, v in enumerate(values)]
    assert [(s.index, s.n_after) for s in find_steps(newest)] == [(19, 1)]
    two = [v * 1.5 if i in (9, 10) else v for i, v in enumerate(values)]
    assert [s.index for s in find_steps(two)] == [9, 11]


def largest_t(row: np.ndarray) -> float:
    """The largest pooled |t| over the places a step may start in ``row``."""
    n = len(row)
    found = 0.0
    for cut in [*range(2, n - 1), n - 1]:
        before, after = row[:cut], row[cut:]
        squares = ((before - before.mean()) ** 2).sum() + ((after - after.mean()) ** 2).sum()
        se = math.sqrt(squares / (n - 2)) * math.sqrt(1 / cut + 1 / (n - cut))
        found = max(found, abs(float(after.mean() - before.mean())) / se)
    return found


def test_the_level_holds_a_flat_series_largest_t_to_step_alpha() -> None:
    """Over fresh seeded flat series (not the draws step_level used), the largest |t|
    passes step_level in about STEP_ALPHA of them, and Bonferroni's level in fewer."""
    n, draws = 30, 4000
    peaks = [largest_t(row) for row in np.random.default_rng(12345).normal(0, 1, (draws, n))]
    critical = float(student_t.isf(step_level(n) / 2, n - 2))
    bonferroni = float(student_t.isf(STEP_ALPHA / (n - 1) / 2, n - 2))
    rate = sum(p > critical for p in peaks) / draws
    assert 0.018 <= rate <= 0.032
    assert sum(p > bonferroni for p in peaks) / draws < rate
    assert STEP_ALPHA / (n - 1) < step_level(n) < STEP_ALPHA


def test_two_exact_levels_are_one_step_and_one_level_is_none() -> None:
    (step,) = find_steps([1.0] * 10 + [1.25] * 10)
    assert step.index == 10
    assert step.change == pytest.approx(0.25)
    assert find_steps([1.0] * 20) == []
    assert find_steps([1.0] * 10 + [1.0005] * 10) == []  # under the noise floor


@pytest.mark.parametrize(
    "values",
    [
        [1.0] * (MIN_POINTS - 1),
        [1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
        [1.0] * 6 + [0.0] + [1.0] * 6,
        [1.0] * 6 + [-1.0] + [1.0] * 6,
        [1.0] * 6 + [math.nan] + [2.0] * 6,
        [1.0] * 6 + [math.inf] + [2.0] * 6,
        [],
    ],
    ids=["short", "short-step", "zero", "negative", "nan", "inf", "empty"],
)
def test_series_that_cannot_be_judged_have_no_steps(values: list[float]) -> None:
    assert find_steps(values) == []


def test_the_shortest_series_judged_can_step_at_its_newest_run() -> None:
    (step,) = find_steps([1.0] * (MIN_POINTS - 1) + [2.0])
    assert (step.index, step.change, step.n_after) == (MIN_POINTS - 1, 1.0, 1)


def test_robust_sigma_ignores_one_step() -> None:
    noise = [0.0, 0.02, -0.01, 0.01, -0.02, 0.0, 0.01, -0.01]
    with_step = [v + (0.5 if i >= 4 else 0.0) for i, v in enumerate(noise)]
    assert robust_sigma(noise) == pytest.approx(0.0104836, abs=1e-7)
    assert robust_sigma(with_step) == pytest.approx(robust_sigma(noise), abs=1e-12)
    assert robust_sigma([]) == 0.0
