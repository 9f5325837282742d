"""Paired statistics of perfsuite ab on constructed data: verdicts, interval, early stopping."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from perfsuite.verdict.futility import (
    seconds_leave,
)
from perfsuite.verdict.paired import (
    LEAN_PAIRS,
    PAIRED_ALPHA,
    Budget,
    Sequential,
    alpha_per_look,
    judge,
    log_ratios,
    look_schedule,
)
from perfsuite.verdict.signtest import (
    family_rate,
    median_interval,
    min_pairs_for,
    sign_rank,
    sign_test_p,
)
from perfsuite.verdict.stats import Verdict

#: a look's level at most as wide as any default schedule's: Bonferroni's 0.01 over 16 looks
LOOK_ALPHA = 0.01 / 16


def noisy(change: float, spread: float, n: int, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(math.log1p(change) + rng.uniform(-spread, spread, n))


def test_clear_slowdown_is_slower() -> None:
    result = judge(noisy(0.20, 0.02, 12), 0.05, LOOK_ALPHA)
    assert result.verdict is Verdict.SLOWER
    assert result.change == pytest.approx(0.20, abs=0.02)
    assert result.ci is not None
    assert 0 < result.ci[0] <= result.change <= result.ci[1]
    assert result.rate_change == pytest.approx(1 / 1.2 - 1, abs=0.02)


def test_clear_speedup_is_faster() -> None:
    result = judge(noisy(-0.15, 0.02, 16), 0.05, LOOK_ALPHA)
    assert result.verdict is Verdict.FASTER
    assert result.ci is not None
    assert result.ci[1] < 0


def test_identical_is_same() -> None:
    result = judge(noisy(0.0, 0.005, 12), 0.05, LOOK_ALPHA)
    assert result.verdict is Verdict.SAME
    assert result.ci is not None
    assert -0.05 < result.ci[0] < result.ci[1] < 0.05


def test_noisy_is_inconclusive() -> None:
    result = judge(noisy(0.0, 0.4, 16), 0.05, LOOK_ALPHA)
    assert result.verdict is Verdict.INCONCLUSIVE


def test_significant_change_below_threshold_is_same() -> None:
    # every pair +2%: significant, but smaller than the minimum effect
    result = judge(noisy(0.02, 0.004, 12), 0.05, LOOK_ALPHA)
    assert result.ci is not None
    assert result.ci[0] > 0
    assert result.verdict is Verdict.SAME


def test_estimate_beyond_threshold_with_interval_crossing_it_is_slower() -> None:
    # interval entirely above 0, point estimate above the threshold, lower end below it
    ratios = [math.log(x) for x in [1.01, 1.02, 1.07, 1.08, 1.08, 1.09, 1.09, 1.1, 1.1, 1.11, 1.12]]
    ratios.append(math.log(1.2))
    result = judge(ratios, 0.05, LOOK_ALPHA)
    assert result.ci is not None
    assert 0 < result.ci[0] < 0.05 < result.change
    assert result.verdict is Verdict.SLOWER


def test_higher_is_better_flips_the_direction() -> None:
    up = judge(noisy(0.20, 0.02, 12), 0.05, LOOK_ALPHA, higher_is_better=True)
    down = judge(noisy(-0.20, 0.02, 12), 0.05, LOOK_ALPHA, higher_is_better=True)
    assert (up.verdict, down.verdict) == (Verdict.FASTER, Verdict.SLOWER)


def test_too_few_pairs_give_no_interval() -> None:
    result = judge([0.5] * 5, 0.05, LOOK_ALPHA)
    assert result.ci is None
    assert result.verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize("n", [9, 12, 20, 40, 80])
@pytest.mark.parametrize("alpha", [0.01, 0.00125, 0.0005])
def test_sign_rank_is_the_exact_order_statistic(n: int, alpha: float) -> None:
    k = sign_rank(n, alpha)
    if k is None:
        assert 2 * binom.cdf(0, n, 0.5) > alpha
        return
    # coverage of [d_(k), d_(n-k+1)] is 1 - 2 P(X <= k-1); k is the largest rank that keeps it
    assert 2 * binom.cdf(k - 1, n, 0.5) <= alpha + 1e-15
    assert k == n // 2 or 2 * binom.cdf(k, n, 0.5) > alpha


def test_median_interval_picks_order_statistics() -> None:
    d = list(range(40, 0, -1))  # 40 distinct values, unsorted
    k = sign_rank(40, LOOK_ALPHA)
    assert k is not None
    assert median_interval([float(x) for x in d], LOOK_ALPHA) == (float(k), float(41 - k))


def test_min_pairs_for_the_default_looks() -> None:
    assert min_pairs_for(0.01) == 8  # 2 / 2**8 <= 0.01 < 2 / 2**7
    assert min_pairs_for(LOOK_ALPHA) == 12  # the default --min-pairs: 2 / 2**12 <= 0.01 / 16


def test_look_schedule_and_error_split() -> None:
    assert look_schedule(12, 40) == [12, 16, 20, 24, 28, 32, 40]
    # the step grows to a quarter of the count: 240 pairs take 16 looks, 80 take 11
    assert look_schedule(12, 240)[-6:] == [88, 108, 132, 164, 204, 240]
    assert len(look_schedule(12, 240)) == 16
    assert len(look_schedule(12, 80)) == 11
    assert look_schedule(10, 20) == [10, 14, 18, 20]
    assert look_schedule(5, 5) == [5]
    budget = Budget(12, 40, 60.0)
    level = budget.alpha_per_look
    # the schedule's exact family-wise rate, plus one look off it, stays within alpha,
    # and it is the largest level that does: above Bonferroni's alpha / 7
    assert family_rate(budget.looks, level) + level <= PAIRED_ALPHA
    assert family_rate(budget.looks, level * 1.001) + level * 1.001 > PAIRED_ALPHA
    assert PAIRED_ALPHA / 7 < level < PAIRED_ALPHA
    # no look of 4 pairs or fewer can miss at that level: nothing of alpha is spent
    assert alpha_per_look([1, 2, 3, 4], 0.02) == pytest.approx(0.02)
    with pytest.raises(ValueError, match="min_pairs"):
        look_schedule(10, 5)


def test_the_family_rate_is_exact() -> None:
    """Over every one of the 2**10 equally likely sign sequences of 10 pairs, the share
    whose count of pairs below the median leaves some look's band is the rate."""
    looks, level = [4, 6, 8, 10], 0.15
    bands = {n: sign_rank(n, level) for n in looks}
    missed = 0
    for signs in itertools.product((0, 1), repeat=10):
        for n in looks:
            k, below = bands[n], sum(signs[:n])
            if k is not None and (below < k or below > n - k):
                missed += 1
                break
    assert family_rate(looks, level) == pytest.approx(missed / 2**10, abs=1e-12)
    assert family_rate([20], 0.05) == pytest.approx(
        2 * sum(math.comb(20, i) for i in range(6)) / 2**20
    )


def test_sequential_looks_only_at_the_schedule() -> None:
    seq = Sequential(Budget(12, 24, 1e9), threshold=0.05)
    ratios: list[float] = []
    stopped_at = None
    for n in range(1, 25):
        ratios.append(math.log(1.3))
        if seq.look(ratios, elapsed=0.0) is not None:
            stopped_at = n
            break
    assert stopped_at == 12  # decisive from the start, judged only at the first look
    assert seq.looks_taken == [12]


def _pairs_run(seq: Sequential, pace: float) -> tuple[int, bool]:
    """Feed pairs of ``pace`` seconds each until the bench stops: (pairs, futile)."""
    ratios: list[float] = []
    while True:
        ratios.append(0.3 if len(ratios) % 2 else -0.3)
        result = seq.look(ratios, elapsed=pace * len(ratios))
        if result is not None:
            return len(ratios), result.futile


def test_a_bench_whose_seconds_cannot_bring_it_to_three_pairs_stops_after_its_first() -> None:
    # 12 s a bench: pairs of 6 s would end at 6 and 12 s, two pairs that can neither
    # decide nor lean; pairs of 5.9 s reach a third (ending at 17.7 s, as before)
    assert LEAN_PAIRS == 3
    assert _pairs_run(Sequential(Budget(10, 20, 12.0), threshold=0.05), 6.0) == (1, True)
    assert _pairs_run(Sequential(Budget(10, 20, 12.0), threshold=0.05), 10.0) == (1, True)
    assert _pairs_run(Sequential(Budget(10, 20, 12.0), threshold=0.05), 5.9) == (3, False)
    # futility off: the budget's own rule ends it, after the pair that crosses 12 s
    off = Sequential(Budget(10, 20, 12.0), threshold=0.05, futility=False)
    assert _pairs_run(off, 10.0) == (2, False)
    # a fast bench is judged at its looks as before: the first at 10 pairs
    assert _pairs_run(Sequential(Budget(10, 20, 12.0), threshold=0.05), 0.5)[0] >= 10


def test_seconds_leave_counts_the_pair_that_crosses_the_budget() -> None:
    assert [seconds_leave(1, t, 12.0) for t in (4.0, 5.9, 6.0, 12.0)] == [2, 2, 1, 0]
    with pytest.raises(ValueError, match="no pace"):
        seconds_leave(0, 1.0, 12.0)


def test_sequential_runs_to_max_pairs_then_inconclusive() -> None:
    seq = Sequential(Budget(12, 24, 1e9), threshold=0.05, futility=False)
    rng = np.random.default_rng(3)
    ratios: list[float] = []
    result = None
    while result is None:
        ratios.append(float(rng.uniform(-0.5, 0.5)))
        result = seq.look(ratios, elapsed=0.0)
    assert len(ratios) == 24
    assert seq.looks_taken == [12, 16, 20, 24]
    assert result.verdict is Verdict.INCONCLUSIVE


def test_time_budget_takes_one_final_look_off_the_schedule() -> None:
    seq = Sequential(Budget(12, 40, 5.0), threshold=0.05, futility=False)
    noise = [(-1) ** i * 0.4 for i in range(13)]
    assert seq.look(noise[:12], elapsed=1.0) is None
    final = seq.look(noise, elapsed=6.0)
    assert final is not None
    assert final.pairs == 13
    assert seq.looks_taken == [12, 13]
    assert len(seq.looks_taken) <= len(Budget(12, 40, 5.0).looks)


def test_early_stopping_keeps_the_family_wise_false_alarm_rate() -> None:
    """A/A sequences (symmetric noise, skewed spikes): a significant interval at any look
    must happen in at most PAIRED_ALPHA of them."""
    budget = Budget(12, 40, 1e9)
    rng = np.random.default_rng(20261122)
    trials, false_alarms = 3000, 0
    for _ in range(trials):
        spikes = rng.exponential(0.05, 40) * rng.choice([-1, 1], 40)
        d = rng.normal(0, 0.02, 40) + spikes
        for n in budget.looks:
            result = judge(list(d[:n]), 1e-9, budget.alpha_per_look)
            if result.ci is not None and (result.ci[0] > 0 or result.ci[1] < 0):
                false_alarms += 1
                break
    assert false_alarms / trials <= PAIRED_ALPHA


def test_paired_statistics_import_neither_pytest_nor_the_measuring_side() -> None:
    code = (
        "import sys, perfsuite.verdict.paired; "
        "bad = [m for m in sys.modules if m == 'pytest' or m.startswith(('perfsuite.bench', "
        "'perfsuite.ab', 'perfsuite.plugin'))]; print(bad); sys.exit(bool(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_log_ratios_pair_blocks_by_median() -> None:
    assert log_ratios([[1.0, 2.0, 3.0]], [[4.0, 4.0, 100.0]]) == [pytest.approx(math.log(2))]
    with pytest.raises(ValueError, match="unpaired"):
        log_ratios([[1.0]], [])
    with pytest.raises(ValueError, match="positive"):
        log_ratios([[0.0]], [[1.0]])


@pytest.mark.parametrize(
    ("up", "down", "ties"), [(3, 0, 0), (0, 3, 1), (9, 3, 0), (6, 6, 2), (1, 0, 0)]
)
def test_sign_test_p_is_the_exact_two_sided_binomial_test(up: int, down: int, ties: int) -> None:
    d = [0.1] * up + [-0.1] * down + [0.0] * ties
    assert sign_test_p(d) == pytest.approx(binomtest(up, up + down, 0.5).pvalue)
    assert judge(d, 0.05, 0.01).sign_p == pytest.approx(sign_test_p(d))
    assert sign_test_p([0.0, 0.0]) == 1.0
