"""The statistics behind a verdict: a rank test on raw per-round samples plus a minimum effect.

A bench is ``slower`` or ``faster`` only when both hold:

* **significance**: a two-sided Mann-Whitney U test on the raw per-round samples of
  baseline and current rejects "same distribution" at ``p < RANK_ALPHA`` (0.002, the level
  asv uses), and
* **effect**: the relative change of the median exceeds the bench's threshold
  (default 5%, ``--perf-threshold``, or ``@pytest.mark.perf(threshold=...)``).

Otherwise, if the 99% confidence interval of the relative change of the median still
reaches beyond the threshold in either direction, the data cannot rule out a change
that matters and the verdict is ``inconclusive``; else it is ``same``.

The interval is a percentile bootstrap of the ratio of medians (each side resampled
independently, a fixed seed), so the same two runs always get the same verdict.

Minimum rounds. With ``n`` samples on each side and no ties, the smallest p-value a
two-sided Mann-Whitney U test can reach is ``2 / C(2n, n)``, the probability that the
two samples separate completely in one of the two directions:

====  ================  =============
 n    C(2n, n)          smallest p
====  ================  =============
 5    252               0.0079
 6    924               0.00216
 7    3432              0.00058
 12   2704156           7.4e-7
====  ================  =============

So at ``p < 0.002`` six rounds per side can never be significant, however large the
slowdown: a bench needs at least 7 rounds on each side (``MIN_RANK_SAMPLES``). Seven
only suffices for a complete separation; more rounds give the test power on noisy
machines. perfsuite's defaults are 7 rounds at ``--perf-scale smoke``, 12 at
``default`` and 20 at ``full``. With fewer samples on either side (``--perf-rounds``,
a marker, or a baseline saved without raw samples) the change of the medians is shown
but never judged: the verdict is ``inconclusive`` and the table says what is missing.
From ``MIN_BOUND_SAMPLES`` (5) rounds a side, such a comparison still carries its
interval: never a verdict, but the bound a bench that was not shown slower passes with
(:func:`within_bound`). With so few rounds the 99% bootstrap interval of the ratio of
medians is wide, about the spread of the rounds themselves: a cautious bound.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

#: a bench not shown slower passes while the largest regression its interval has not
#: ruled out (its bound) is below this many times its threshold: it would have caught a
#: regression of that size. One whose bound reaches it is too noisy to pass, and says so
#: with its bound (:attr:`perfsuite.verdict.paired.PairedResult.bound`,
#: :attr:`perfsuite.verdict.judge.BenchVerdict.bound`).
BOUND_FACTOR = 2.0
#: significance level of the rank test (asv's)
RANK_ALPHA = 0.002
#: the fewest samples per side for which a two-sided rank test can reach RANK_ALPHA
MIN_RANK_SAMPLES = 7
#: the fewest samples per side whose interval bounds a bench that cannot be judged
MIN_BOUND_SAMPLES = 5
#: confidence level of the interval around the relative change of the median
CONFIDENCE = 0.99
#: bootstrap resamples; the seed is fixed so verdicts are reproducible
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 20240605


def within_bound(bound: float | None, threshold: float) -> bool:
    """Whether ``bound``, the largest regression an interval has not ruled out, is below
    ``BOUND_FACTOR`` times ``threshold``: a bench not shown slower then passes, saying it.

    >>> within_bound(0.06, 0.05), within_bound(0.10, 0.05), within_bound(None, 0.05)
    (True, False, False)
    """
    return bound is not None and bound < BOUND_FACTOR * threshold


class Verdict(enum.Enum):
    """What a comparison of one bench concluded."""

    FASTER = "faster"
    SLOWER = "slower"
    SAME = "same"
    INCONCLUSIVE = "inconclusive"


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided Mann-Whitney p-value reachable with ``n`` and ``m`` samples."""
    if n < 1 or m < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n + m, n))


def min_rank_samples(alpha: float = RANK_ALPHA) -> int:
    """The fewest samples per side (equal sizes) for which ``p < alpha`` is reachable."""
    n = 1
    while smallest_p(n, n) >= alpha:
        n += 1
    return n


@dataclass(frozen=True)
class Comparison:
    """The statistics of one metric, baseline against current.

    ``change`` is ``median(current) / median(baseline) - 1``; ``ci`` its confidence
    interval (``None`` for an aggregate-only comparison); ``p`` the Mann-Whitney p-value
    (``None`` when the rank test was not run, with the reason in ``fallback``).
    ``verdict`` is expressed in terms of the metric's direction: for a time (lower is
    better) a positive change is ``slower``; for a rate (higher is better) it is ``faster``.
    """

    verdict: Verdict
    change: float
    ci: tuple[float, float] | None
    p: float | None
    threshold: float
    n_baseline: int
    n_current: int
    fallback: str | None = None

    @property
    def untested(self) -> bool:
        """Too few samples for the rank test: shown, never judged."""
        return self.fallback is not None and self.p is None

    @property
    def above_and_past(self) -> bool:
        """Its interval lies above 0 and reaches past the threshold, its change rising:
        neither ruled in nor out by it.

        >>> Comparison(Verdict.INCONCLUSIVE, 0.07, (0.02, 0.09), None, 0.05, 5, 5).above_and_past
        True
        """
        if self.ci is None:
            return False
        low, high = self.ci
        return self.change > 0 and low > 0 and high > self.threshold


def _as_array(samples: Sequence[float], side: str) -> np.ndarray:
    array = np.asarray(samples, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{side} samples must be a non-empty sequence of numbers")
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"{side} samples must be finite and positive")
    return array


def bootstrap_ci(
    baseline: np.ndarray,
    current: np.ndarray,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``median(current) / median(baseline) - 1``."""
    rng = np.random.default_rng(seed)
    base_idx = rng.integers(0, baseline.size, size=(resamples, baseline.size))
    cur_idx = rng.integers(0, current.size, size=(resamples, current.size))
    ratios = np.median(current[cur_idx], axis=1) / np.median(baseline[base_idx], axis=1) - 1
    tail = (1 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return float(low), float(high)


def _directed(change: float, higher_is_better: bool) -> Verdict:
    worse = change < 0 if higher_is_better else change > 0
    return Verdict.SLOWER if worse else Verdict.FASTER


def compare_samples(
    baseline: Sequence[float],
    current: Sequence[float],
    threshold: float,
    *,
    higher_is_better: bool = False,
    alpha: float = RANK_ALPHA,
    min_samples: int = MIN_RANK_SAMPLES,
    more: str = "raise the rounds",
) -> Comparison:
    """Judge raw per-round samples of one metric (times by default; rates with
    ``higher_is_better=True``). With too few samples, the reason ends with ``more``:
    how to get more.

    >>> compare_samples([1.0, 1.01, 0.99] * 4, [1.3, 1.31, 1.29] * 4, 0.05).verdict
    <Verdict.SLOWER: 'slower'>

    Five rounds a side: not judged, but bounded by the interval:

    >>> five = compare_samples([1.0, 1.02, 0.98, 1.01, 0.99], [1.0, 1.01, 1.03, 0.99, 1.02], 0.05)
    >>> five.verdict.value, five.fallback is not None, [round(x, 3) for x in five.ci]
    ('inconclusive', True, [-0.02, 0.051])
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    base = _as_array(baseline, "baseline")
    cur = _as_array(current, "current")
    change = float(np.median(cur) / np.median(base) - 1)
    if base.size < min_samples or cur.size < min_samples:
        fewest = min(base.size, cur.size)
        reason = (
            f"rank test needs >= {min_samples} rounds per side to reach p < {alpha}"
            f" (has {fewest}): medians alone are not judged; {more}"
        )
        unjudged = compare_aggregates(
            float(np.median(base)),
            float(np.median(cur)),
            threshold,
            higher_is_better=higher_is_better,
            reason=reason,
            n_baseline=int(base.size),
            n_current=int(cur.size),
        )
        if fewest < MIN_BOUND_SAMPLES:
            return unjudged
        return replace(unjudged, ci=bootstrap_ci(base, cur))
    from scipy.stats import mannwhitneyu

    if np.ptp(np.concatenate([base, cur])) == 0:
        p = 1.0  # every sample identical: no evidence of any difference
    else:
        p = float(mannwhitneyu(base, cur, alternative="two-sided", method="auto").pvalue)
    ci = bootstrap_ci(base, cur)
    if p < alpha and abs(change) > threshold:
        verdict = _directed(change, higher_is_better)
    elif ci[0] < -threshold or ci[1] > threshold:
        verdict = Verdict.INCONCLUSIVE
    else:
        verdict = Verdict.SAME
    return Comparison(verdict, change, ci, p, threshold, int(base.size), int(cur.size))


def compare_aggregates(
    baseline_median: float,
    current_median: float,
    threshold: float,
    *,
    higher_is_better: bool = False,
    reason: str = "baseline has no raw samples: medians alone are not judged",
    n_baseline: int = 0,
    n_current: int = 0,
) -> Comparison:
    """The fallback without enough raw samples: the change of the median, shown, never
    judged. Two medians carry no spread, so the verdict is ``inconclusive`` whatever the
    change, and ``reason`` (in ``fallback``) says what is missing.

    >>> compare_aggregates(1.0, 1.5, 0.05).verdict
    <Verdict.INCONCLUSIVE: 'inconclusive'>
    """
    if baseline_median <= 0 or current_median <= 0:
        raise ValueError("medians must be positive")
    change = current_median / baseline_median - 1
    return Comparison(
        Verdict.INCONCLUSIVE, change, None, None, threshold, n_baseline, n_current, reason
    )
