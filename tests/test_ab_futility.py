"""Futility in perfsuite ab's sequential looks, on constructed data: a bench that no
budget could decide stops early, inconclusive; one that could decide runs on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import mstats
from scipy.stats import t as student_t

from perfsuite.verdict.futility import (
    FUTILITY_MARGIN,
    futile,
    sign_half_width,
    t_futile,
    t_half_width,
    t_margin,
    t_narrowing,
)
from perfsuite.verdict.paired import PAIRED_ALPHA, Budget, Sequential, judge, judge_processes
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.trimmed import spread_share
from tests.test_ab_paired import LOOK_ALPHA


def _run_to_verdict(seq: Sequential, draw: np.ndarray) -> tuple[int, Verdict, bool]:
    """Feed pairs until the bench stops: (pairs, verdict, stopped for futility)."""
    for n in range(1, draw.size + 1):
        result = seq.look(list(draw[:n]), elapsed=0.0)
        if result is not None:
            return n, result.verdict, result.futile
    raise AssertionError("never stopped")


def test_futility_stops_noise_no_budget_could_decide() -> None:
    """Pairs scattered +-50%: 240 pairs could neither clear 0 nor fit inside +-5%, so
    a look stops the bench (the third, at 20 pairs: the narrowest window of the first
    12 or 16 could still decide), inconclusive, where it used to run all 240."""
    rng = np.random.default_rng(3)
    draw = rng.uniform(-0.5, 0.5, 240)
    assert _run_to_verdict(Sequential(Budget(12, 240, 1e9), 0.05), draw) == (
        20,
        Verdict.INCONCLUSIVE,
        True,
    )
    unchecked = Sequential(Budget(12, 240, 1e9), 0.05, futility=False)
    assert _run_to_verdict(unchecked, draw) == (240, Verdict.INCONCLUSIVE, False)


@pytest.mark.parametrize(
    ("center", "spread", "verdict"),
    [(math.log(1.08), 0.1, Verdict.SLOWER), (0.0, 0.04, Verdict.SAME)],
    ids=["slowdown-clears-zero", "unchanged-could-fit-inside"],
)
def test_futility_lets_a_bench_that_can_decide_run_on(
    center: float, spread: float, verdict: Verdict
) -> None:
    """An 8% slowdown whose first interval holds 0, and an A/A whose first interval
    reaches past the threshold, both still decide within the budget: neither stops."""
    draw = np.random.default_rng(7).normal(center, spread, 240)
    pairs, found, stopped = _run_to_verdict(Sequential(Budget(12, 240, 1e9), 0.05), draw)
    assert (found, stopped) == (verdict, False)
    assert pairs > 12  # the first look was not decisive, and futility let it go on


def test_futility_counts_the_pairs_the_seconds_left_can_buy() -> None:
    """12 pairs in 1 s leave time for 240; in 30 s of a 60-s budget, for 24 only."""
    ratios = [0.1, -0.1, 0.05, -0.04, 0.08, -0.02] * 2
    assert Sequential(Budget(12, 240, 60.0), 0.05).look(ratios, elapsed=1.0) is None
    result = Sequential(Budget(12, 240, 60.0), 0.05).look(ratios, elapsed=30.0)
    assert result is not None
    assert result.futile
    assert result.pairs == 12
    assert result.verdict is Verdict.INCONCLUSIVE


def test_futile_never_stops_a_decisive_or_uncertain_result() -> None:
    decided = judge([0.2] * 12, 0.05, LOOK_ALPHA)
    assert decided.verdict is Verdict.SLOWER
    assert not futile(decided, 0.5)
    too_few = judge([0.3, -0.3], 0.05, LOOK_ALPHA)
    assert too_few.ci is None
    assert not futile(too_few, 0.5)
    noisy = [0.12, -0.1, 0.02, 0.15, -0.08, 0.01] * 4
    wide = judge(noisy, 0.05, 0.001)
    assert futile(wide, sign_half_width(noisy, 0.001, 40))
    assert not futile(wide, sign_half_width(noisy, 0.001, 4000))
    assert not futile(wide, math.inf)
    assert t_narrowing(3, 3, 0.01) == 1.0  # nothing left to buy
    # no more pairs than those in hand: the interval of those pairs as it is
    assert wide.ci is not None
    assert sign_half_width(noisy, 0.001, 24) == pytest.approx(
        (math.log1p(wide.ci[1]) - math.log1p(wide.ci[0])) / 2
    )
    assert sign_half_width(noisy[:3], 0.001, 3) == math.inf


def test_projection_follows_the_interval_of_more_pairs() -> None:
    """The projection is what a luckier draw of the pairs so far would give: never wider
    than the interval the pairs would give, were they as spread, and not far below it."""
    d = list(np.random.default_rng(1).normal(0.0, 0.05, 400))
    for n, more in [(24, 200), (50, 200), (100, 400)]:
        ci = judge(d[:more], 0.05, 0.001).ci
        assert ci is not None
        actual = (math.log1p(ci[1]) - math.log1p(ci[0])) / 2
        assert 0.4 * actual <= sign_half_width(d[:n], 0.001, more) <= actual
    est = [0.03, -0.02, 0.01, 0.04, -0.01, 0.0, 0.02, -0.03, 0.01, 0.02, -0.02, 0.0]
    small, large = (
        judge_processes([[e] for e in est[:3]], 0.05),
        judge_processes([[e] for e in est], 0.05),
    )
    assert small.ci is not None
    assert large.ci is not None
    ratio = np.diff(np.log1p(large.ci))[0] / np.diff(np.log1p(small.ci))[0]
    # the spread as a normal population's standard deviation: 12 estimates are trimmed,
    # and their winsorized spread reads narrower than a plain one by spread_share(12)
    winsorized = np.std(mstats.winsorize(np.array(est), limits=(0.2, 0.2)), ddof=1)
    spread = winsorized / spread_share(12) / np.std(est[:3], ddof=1)
    assert ratio == pytest.approx(t_narrowing(3, 12, PAIRED_ALPHA) * spread, rel=0.01)
    # on estimates near normal the trimmed interval is a little wider than the t interval
    t_half = student_t.ppf(1 - PAIRED_ALPHA / 2, 11) * np.std(est, ddof=1) / math.sqrt(12)
    assert 1.0 < np.diff(np.log1p(large.ci))[0] / 2 / t_half < 1.4


def test_one_wild_pair_does_not_make_a_first_look_futile() -> None:
    """A +10% slowdown whose first 12 pairs hold two wild ones (-60%, +100%): the
    interval is then their range, and scaling that range by sqrt(12 / 240) would call
    the bench futile. The central quantiles project a narrow interval, so it goes on
    and is called slower."""
    rng = np.random.default_rng(5)
    draw = rng.normal(math.log(1.10), 0.06, 240)
    draw[3], draw[8] = -0.9, 0.7
    seq = Sequential(Budget(12, 240, 60.0), 0.05)
    first = judge(list(draw[:12]), 0.05, seq.budget.alpha_per_look)
    assert first.ci is not None
    assert first.ci[0] < -0.5  # the range of the pairs
    assert first.ci[1] > 1.0
    scaled = (math.log1p(first.ci[1]) - math.log1p(first.ci[0])) / 2 * math.sqrt(12 / 240)
    assert futile(first, scaled)
    assert not futile(first, sign_half_width(list(draw[:12]), seq.budget.alpha_per_look, 240))
    pairs, verdict, stopped = _run_to_verdict(seq, draw)
    assert (verdict, stopped) == (Verdict.SLOWER, False)
    assert pairs > 12


def test_a_confirmation_margin_follows_how_well_the_spread_is_known() -> None:
    """At 3 pairs of processes (2 degrees of freedom) the spread may be a third too
    high at 90% confidence: the margin is that bound, below ``FUTILITY_MARGIN``; from
    7 pairs on, ``FUTILITY_MARGIN`` is the smaller."""
    assert t_margin(3) == pytest.approx(math.sqrt(2 / 4.60517), rel=1e-4)
    assert t_margin(3) < t_margin(6) < FUTILITY_MARGIN == t_margin(7) == t_margin(12)


def test_pairs_that_mostly_read_a_change_are_not_futile_before_any_is_trimmed() -> None:
    """Three fresh pairs of a +12% slowdown, one off as a whole (-42%): their mean and
    spread make the first look futile, but two of three read it beyond the threshold,
    so it goes on; once the estimates are trimmed (8 or more) the plain rule holds."""
    wild = [-0.42, 0.17, 0.24]
    result = judge_processes([[math.log1p(e)] for e in wild], 0.05, 0.05 / 3)
    assert futile(result, t_half_width(result, 3, 12), t_margin(3), bounding=True)
    assert not t_futile(result, wild, 12)
    # the median within the threshold: the plain rule, futile
    calm = [-0.42, 0.02, 0.24]
    result = judge_processes([[math.log1p(e)] for e in calm], 0.05, 0.05 / 3)
    assert t_futile(result, calm, 12)
    # trimmed estimates: the plain rule too, however the median reads
    eight = [-0.6, 0.5, -0.5, 0.6, 0.08, 0.09, -0.55, 0.55]
    result = judge_processes([[math.log1p(e)] for e in eight], 0.05, 0.05 / 3)
    assert futile(result, t_half_width(result, 8, 10), t_margin(8), bounding=True)
    assert t_futile(result, eight, 10)


def test_seven_untrimmed_pairs_that_mostly_read_a_change_go_on_whatever_is_left() -> None:
    """Seven pairs are not trimmed yet: a median beyond the threshold keeps them open
    even where the pairs left cannot bring them to 8 (they may decide it untrimmed)."""
    seven = [-0.6, 0.5, -0.5, 0.6, 0.08, 0.09, 0.07]
    result = judge_processes([[math.log1p(e)] for e in seven], 0.05, 0.05 / 3)
    assert futile(result, t_half_width(result, 7, 8), t_margin(7), bounding=True)
    assert not t_futile(result, seven, 8)
    assert not t_futile(result, seven[:6], 7)
