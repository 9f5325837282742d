"""The trimmed mean of the pairs of processes' estimates, and its t interval.

A confirmation judges a bench across fresh pairs of processes, one estimate each (the
median of the pair's log-ratios). Most pairs agree within a few percent, but now and
then one is off as a whole, for its life, by far more than the change it should show
(a compile bench's pair read -42% in a run whose other pairs read +17% and +24%). A
mean and its standard deviation follow that one pair wherever it goes, and a t interval
of them then neither calls the change nor rules it out.

So from ``TRIM_FROM`` estimates on, their mean is trimmed: ``TRIM`` of them, rounded
down, are cut from each end (one of 8 or 9, two of 10 to 14), and the interval is
Yuen's: the winsorized standard deviation (the cut estimates replaced by the nearest
kept ones) times ``sqrt((n - 1) / (h * (h - 1)))`` for ``h`` kept, with Student's t on
``h - 1`` degrees of freedom. Below that it is the mean and Student's t interval: at a
look's small error rate (a ``leaning`` suspect's two-sided interval at ``2 *
CONFIRM_ALPHA / 3``, an ``undecided`` one's at ``PAIRED_ALPHA / 3``) t on 3 degrees of
freedom is 28-63% above t on 5, so trimming 6 estimates to 4 would cost a clean
slowdown more than a wild pair does (``tools/validation/trim_power.py``).

A trimmed spread is not a plain one: where the estimates scatter evenly (two layouts
of memory, each as likely) winsorizing narrows it less than on normal estimates, and
the interval is wider than the mean's (+10% with pairs at +-12% in turn is ``slower``
in 12 pairs by the mean, ``inconclusive`` by the trimmed mean).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

#: the share of the estimates cut from each end, rounded down
TRIM = 0.2
#: the fewest estimates that are trimmed: 6 are then kept, t on 5 degrees of freedom
TRIM_FROM = 8


def kept(n: int) -> int:
    """How many of ``n`` estimates the trimmed mean keeps.

    >>> [kept(n) for n in (2, 3, 6, 7, 8, 9, 10, 12)]
    [2, 3, 6, 7, 6, 7, 6, 8]
    """
    return n if n < TRIM_FROM else n - 2 * int(TRIM * n)


def standard_error_factor(n: int) -> float:
    """The trimmed mean's standard error over the winsorized standard deviation of
    ``n`` estimates (Yuen's ``sqrt((n - 1) / (h * (h - 1)))`` for ``h`` kept;
    ``1 / sqrt(n)`` where nothing is cut).

    >>> round(standard_error_factor(3), 4) == round(1 / math.sqrt(3), 4)
    True
    >>> round(standard_error_factor(8), 3)
    0.483
    """
    h = kept(n)
    return math.sqrt((n - 1) / (h * (h - 1)))


def winsorized(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``values`` sorted, the ``(n - kept(n)) / 2`` at each end replaced by the nearest
    kept one, and that count."""
    ordered = np.sort(values, axis=-1)
    n = ordered.shape[-1]
    cut = (n - kept(n)) // 2
    if cut:
        ordered[..., :cut] = ordered[..., [cut]]
        ordered[..., n - cut :] = ordered[..., [n - cut - 1]]
    return ordered, cut


@functools.cache
def spread_share(n: int) -> float:
    """The winsorized standard deviation of ``n`` estimates drawn from a normal
    population, as a share of its standard deviation (the root of its mean square over
    a fixed draw of 20,000 samples; 1 where nothing is cut): how much narrower a
    trimmed spread reads than a plain one on estimates as normal as the pairs usually are.

    >>> spread_share(6), round(spread_share(8), 2), round(spread_share(12), 2)
    (1.0, 0.77, 0.69)
    """
    if kept(n) == n:
        return 1.0
    draws, _ = winsorized(np.random.default_rng(0).standard_normal((20_000, n)))
    return float(np.sqrt(np.mean(draws.var(axis=1, ddof=1))))


def interval_factor(n: int, alpha: float) -> float:
    """The half-width of the ``1 - alpha`` trimmed interval of ``n`` estimates drawn
    from a normal population of standard deviation 1, about: what a projection of the
    interval to more estimates scales by (:func:`perfsuite.verdict.futility.t_narrowing`).

    >>> round(interval_factor(3, 0.05), 3), round(interval_factor(12, 0.05), 3)
    (2.484, 0.722)
    """
    from scipy.stats import t as student_t

    quantile = float(student_t.ppf(1 - alpha / 2, kept(n) - 1))
    return quantile * standard_error_factor(n) * spread_share(n)


def trimmed_interval(estimates: Sequence[float], alpha: float) -> tuple[float, float | None]:
    """The trimmed mean of ``estimates`` and the half-width of its two-sided ``1 -
    alpha`` interval (None for a single estimate).

    >>> mean, half = trimmed_interval([0.12, 0.15, -0.55, 0.13, 0.14, 0.16, 0.11, 0.13], 0.05)
    >>> round(mean, 3), round(half, 3)
    (0.13, 0.02)
    """
    from scipy.stats import t as student_t

    ordered, cut = winsorized(np.asarray(estimates, dtype=float))
    n = ordered.size
    mean = float(ordered[cut : n - cut].mean())  # winsorizing leaves the kept ones as they are
    if n < 2:
        return mean, None
    spread = float(ordered.std(ddof=1)) * standard_error_factor(n)
    return mean, float(student_t.ppf(1 - alpha / 2, kept(n) - 1)) * spread
