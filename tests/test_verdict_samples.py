"""Verdicts on constructed samples: slower, faster, same, noisy, higher-is-better, few rounds."""

from __future__ import annotations

import math

import pytest

from perfsuite.config import ROUNDS
from perfsuite.verdict.stats import (
    MIN_RANK_SAMPLES,
    RANK_ALPHA,
    Verdict,
    compare_aggregates,
    compare_samples,
    min_rank_samples,
    smallest_p,
)
from tests.samples import normal


def test_minimum_rounds_for_the_rank_test() -> None:
    assert smallest_p(6, 6) == pytest.approx(2 / math.comb(12, 6))
    assert smallest_p(6, 6) >= RANK_ALPHA > smallest_p(7, 7)
    assert min_rank_samples(RANK_ALPHA) == MIN_RANK_SAMPLES == 7
    assert all(rounds >= MIN_RANK_SAMPLES for rounds in ROUNDS.values())


def test_clearly_slower() -> None:
    result = compare_samples(normal(1.0, 0.01), normal(1.3, 0.01, seed=1), 0.05)
    assert result.verdict is Verdict.SLOWER
    assert result.p is not None
    assert result.p < RANK_ALPHA
    assert result.ci is not None
    assert 0.25 < result.ci[0] <= result.change <= result.ci[1] < 0.35


def test_clearly_faster() -> None:
    result = compare_samples(normal(1.3, 0.01), normal(1.0, 0.01, seed=1), 0.05)
    assert result.verdict is Verdict.FASTER
    assert result.change < -0.2


def test_identical_samples_are_same() -> None:
    data = normal(1.0, 0.01)
    result = compare_samples(data, list(data), 0.05)
    assert result.verdict is Verdict.SAME
    assert result.change == 0.0


def test_constant_samples_are_same() -> None:
    assert compare_samples([1.0] * 8, [1.0] * 8, 0.05).verdict is Verdict.SAME


def test_noisy_samples_are_inconclusive() -> None:
    base = [abs(x) + 0.1 for x in normal(1.0, 0.4, seed=3)]
    cur = [abs(x) + 0.1 for x in normal(1.0, 0.4, seed=4)]
    result = compare_samples(base, cur, 0.05)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.ci is not None
    assert result.ci[0] < -0.05 or result.ci[1] > 0.05


def test_significant_but_small_change_is_same() -> None:
    result = compare_samples(normal(1.0, 0.001), normal(1.02, 0.001, seed=1), 0.05)
    assert result.p is not None
    assert result.p < RANK_ALPHA
    assert result.verdict is Verdict.SAME


def test_per_bench_threshold_decides_the_effect() -> None:
    base, cur = normal(1.0, 0.001), normal(1.08, 0.001, seed=1)
    assert compare_samples(base, cur, 0.05).verdict is Verdict.SLOWER
    assert compare_samples(base, cur, 0.10).verdict is Verdict.SAME


def test_higher_is_better() -> None:
    base_rate, cur_rate = normal(1000, 10), normal(1300, 10, seed=1)
    assert compare_samples(base_rate, cur_rate, 0.05, higher_is_better=True).verdict is (
        Verdict.FASTER
    )
    assert compare_samples(cur_rate, base_rate, 0.05, higher_is_better=True).verdict is (
        Verdict.SLOWER
    )
    # the same numbers read as times are the other way round
    assert compare_samples(base_rate, cur_rate, 0.05).verdict is Verdict.SLOWER


def test_confidence_interval_is_reproducible() -> None:
    base, cur = normal(1.0, 0.05), normal(1.05, 0.05, seed=1)
    assert compare_samples(base, cur, 0.05) == compare_samples(base, cur, 0.05)


def test_too_few_rounds_fall_back_to_medians() -> None:
    result = compare_samples(normal(1.0, 0.01, n=5), normal(1.3, 0.01, n=5, seed=1), 0.05)
    assert result.verdict is Verdict.INCONCLUSIVE  # shown, never judged
    assert result.change == pytest.approx(0.3, abs=0.02)
    assert result.p is None
    assert result.fallback is not None
    assert ">= 7 rounds" in result.fallback
    # five rounds a side still carry the interval that bounds the change
    assert result.ci is not None
    assert result.ci[0] > 0.25
    assert result.ci[1] < 0.35
    small = compare_samples([1.0] * 6, [1.01] * 6, 0.05)
    assert small.verdict is Verdict.INCONCLUSIVE
    assert small.fallback is not None
    assert small.ci is not None
    assert small.ci[0] == pytest.approx(0.01)
    assert small.ci[1] == pytest.approx(0.01)
    # four rounds a side: no interval
    four = compare_samples(normal(1.0, 0.01, n=4), normal(1.0, 0.01, n=4, seed=1), 0.05)
    assert four.ci is None
    assert four.fallback is not None


def test_aggregates() -> None:
    for new in (1.2, 0.8, 1.04):
        result = compare_aggregates(1.0, new, 0.05)
        assert result.verdict is Verdict.INCONCLUSIVE  # two medians carry no spread
        assert result.change == pytest.approx(new - 1)
        assert result.fallback is not None


def test_bad_samples_are_rejected() -> None:
    with pytest.raises(ValueError, match="baseline"):
        compare_samples([], [1.0], 0.05)
    with pytest.raises(ValueError, match="positive"):
        compare_samples([1.0, 0.0], [1.0, 1.0], 0.05)
