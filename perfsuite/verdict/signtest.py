"""The exact sign test of paired log-ratios: its p-value and its interval of the median.

The interval of the median of ``n`` log-ratios is ``[d_(k), d_(n-k+1)]``, with ``k``
the largest rank such that ``2 * P(Binomial(n, 1/2) <= k - 1) <= alpha``
(:func:`sign_rank`); it assumes only that the pairs are independent. Its users:
:mod:`perfsuite.verdict.paired` (the verdict) and :mod:`perfsuite.verdict.futility`
(the interval a budget can still buy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
