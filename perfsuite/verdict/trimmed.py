"""The trimmed mean of the pairs of processes' estimates, and its t interval.

A confirmation judges a bench across fresh pairs of processes, one estimate each (the
median of the pair's log-ratios). Most pairs agree within a few percent, but now and
then one is off as a whole, for its life, by far more than the change it should show
(a compile bench's pair read -42% in a run whose other pairs read +17% and +24%). A
mean and its standard deviation follow that one pair wherever it goes, and a t interval
of them then neither calls the change nor rules it out.

So the estimates' mean is trimmed: ``TRIM`` of them, rounded down, are cut from each end
(none of fewer than 5, one of 5 to 9, two of 10 to 14), and the interval is Yuen's: the
winsorized standard deviation (the cut estimates replaced by the nearest kept ones)
over the kept count, with Student's t on one less degree of freedom than the estimates
kept. Where nothing is cut it is the mean and its t interval. On estimates as normal
as the pairs usually are it loses little power (a 20% trimmed mean's efficiency there
is about 94%, and a few degrees of freedom at 5 to 9 pairs); on a wild pair it keeps
its width.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

#: the share of the estimates cut from each end, rounded down
TRIM = 0.2


def kept(n: int) -> int:
    """How many of ``n`` estimates the trimmed mean keeps.

    >>> [kept(n) for n in (2, 3, 4, 5, 6, 9, 10, 12)]
    [2, 3, 4, 3, 4, 7, 6, 8]
    """
    return n - 2 * int(TRIM * n)


def standard_error_factor(n: int) -> float:
    """The trimmed mean's standard error over the winsorized standard deviation of
    ``n`` estimates (Yuen's ``sqrt((n - 1) / (h * (h - 1)))`` for ``h`` kept;
    ``1 / sqrt(n)`` where nothing is cut).

    >>> round(standard_error_factor(3), 4) == round(1 / math.sqrt(3), 4)
    True
    >>> round(standard_error_factor(6), 3)
    0.645
    """
    h = kept(n)
    return math.sqrt((n - 1) / (h * (h - 1)))


@functools.cache
def spread_share(n: int) -> float:
    """The winsorized standard deviation of ``n`` estimates drawn from a normal
    population, as a share of its standard deviation (the root of its mean square over
    a fixed draw of 20,000 samples; 1 where nothing is cut): how much narrower a
    trimmed spread reads than a plain one on estimates as normal as the pairs usually are.

    >>> spread_share(3), round(spread_share(6), 2), round(spread_share(12), 2)
    (1.0, 0.67, 0.69)
    """
    g = n - kept(n)
    if g == 0:
        return 1.0
    draws = np.sort(np.random.default_rng(0).standard_normal((20_000, n)), axis=1)
    g //= 2
    draws[:, :g] = draws[:, [g]]
    draws[:, n - g :] = draws[:, [n - g - 1]]
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

    >>> mean, half = trimmed_interval([0.12, 0.15, -0.55, 0.13, 0.14, 0.16], 0.05)
    >>> round(mean, 3), round(half, 3)
    (0.135, 0.028)
    """
    from scipy.stats import mstats, trim_mean
    from scipy.stats import t as student_t

    values = np.asarray(estimates, dtype=float)
    mean = float(trim_mean(values, TRIM))
    if values.size < 2:
        return mean, None
    winsorized = np.asarray(mstats.winsorize(values, limits=(TRIM, TRIM)), dtype=float)
    spread = float(winsorized.std(ddof=1)) * standard_error_factor(values.size)
    return mean, float(student_t.ppf(1 - alpha / 2, kept(values.size) - 1)) * spread
