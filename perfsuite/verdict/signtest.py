"""The exact sign test of paired log-ratios: its p-value and its interval of the median.

The interval of the median of ``n`` log-ratios is ``[d_(k), d_(n-k+1)]``, with ``k``
the largest rank such that ``2 * P(Binomial(n, 1/2) <= k - 1) <= alpha``
(:func:`sign_rank`); it assumes only that the pairs are independent. Its users:
:mod:`perfsuite.verdict.paired` (the verdict) and :mod:`perfsuite.verdict.futility`
(the interval a budget can still buy).

Looked at repeatedly, as the pairs come in, the intervals miss the true median at
*some* look with a probability that is known exactly: whatever the distribution of
the log-ratios, the count of them below their true median is a walk of fair coin
flips, and an interval misses at a look of ``n`` pairs exactly when that count is
under ``k`` or over ``n - k`` (:func:`family_rate`). :func:`look_level` uses it to
give each look of a schedule the largest level that keeps the whole schedule's rate
within a target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np


def _binom_cdf(k: int, n: int) -> float:
    """P(Binomial(n, 1/2) <= k), exactly."""
    return sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)


def sign_rank(n: int, alpha: float) -> int | None:
    """The order statistic ``k`` of the exact ``1 - alpha`` sign-test interval, or None.

    None when ``n`` pairs are too few for any interval at that level (the smallest
    two-sided error the sign test can reach is ``2 / 2**n``).
    """
    k, term, below, total = 0, 1, 1, 1 << n  # below: sum of comb(n, i) for i <= k
    while k + 1 <= n // 2 and 2 * (below / total) <= alpha:
        k += 1
        term = term * (n - k + 1) // k
        below += term
    return k if k >= 1 else None


def min_pairs_for(alpha: float) -> int:
    """The fewest pairs for which a ``1 - alpha`` sign-test interval exists."""
    n = 1
    while sign_rank(n, alpha) is None:
        n += 1
    return n


def sign_test_p(log_ratios: Sequence[float]) -> float:
    """The two-sided exact sign test's p-value that the median of ``log_ratios`` is 0.

    Pairs with a ratio of exactly 1 carry no sign and are left out. Fewer than 3 pairs
    with a sign can never go below 0.5.

    >>> sign_test_p([0.1, 0.2, 0.05])
    0.25
    >>> sign_test_p([0.1, -0.1, 0.2, -0.3])
    1.0
    """
    signed = [d for d in log_ratios if d != 0]
    if not signed:
        return 1.0
    fewer = min(sum(d > 0 for d in signed), sum(d < 0 for d in signed))
    return min(1.0, 2 * _binom_cdf(fewer, len(signed)))


def median_interval(log_ratios: Sequence[float], alpha: float) -> tuple[float, float] | None:
    """The exact distribution-free ``1 - alpha`` interval of the median of ``log_ratios``."""
    d = np.sort(np.asarray(log_ratios, dtype=float))
    k = sign_rank(int(d.size), alpha)
    if k is None:
        return None
    return float(d[k - 1]), float(d[d.size - k])


def family_rate(looks: Sequence[int], level: float) -> float:
    """The probability that the ``1 - level`` interval misses the true median at one or
    more of ``looks`` (pair counts, ascending), for independent pairs: exact.

    >>> round(family_rate([20], 0.05), 4)  # one look: the interval's own exact error
    0.0414
    >>> family_rate([12, 24, 48], 0.01) < 3 * 0.01  # below the union bound
    True
    """
    from scipy.stats import binom

    walk = np.ones(1)  # walk[s]: the chance that s of the pairs so far lie below
    missed, n = 0.0, 0
    for look in looks:
        if look > n:
            walk = np.convolve(walk, binom.pmf(np.arange(look - n + 1), look - n, 0.5))
            n = look
        k = sign_rank(n, level)
        if k is None:
            continue
        missed += float(walk[:k].sum() + walk[n - k + 1 :].sum())
        walk[:k] = 0.0
        walk[n - k + 1 :] = 0.0
    return missed


@lru_cache(maxsize=512)
def look_level(looks: tuple[int, ...], alpha: float) -> float:
    """The level of each look of ``looks`` such that the schedule's :func:`family_rate`
    plus one more look's level is at most ``alpha``: the largest such level, and never
    below Bonferroni's ``alpha / len(looks)``.

    The one look more covers a final look taken off the schedule, where a time budget
    ends between two looks and replaces the rest: the looks taken then miss at most
    as often as the schedule's (a subset of its misses), plus that look's level.

    >>> round(look_level((12, 16, 20, 24, 28, 32, 40, 48, 60, 72, 88, 108, 132, 164,
    ...                   204, 240), 0.01) / (0.01 / 16), 1)
    2.5
    """
    if not looks:
        raise ValueError("a schedule needs at least one look")
    low, high = alpha / len(looks), alpha
    if family_rate(looks, low) + low > alpha:
        return low
    for _ in range(40):
        middle = (low + high) / 2
        if family_rate(looks, middle) + middle <= alpha:
            low = middle
        else:
            high = middle
    return low
