"""Futility: whether the evidence a budget can still buy could make a verdict decisive.

A sequential test stops at a decisive look; it can also stop at a look where no
amount of the evidence left could be decisive. The interval is projected to the
evidence the budget can still buy (:func:`reachable`: at the pace so far, within the
seconds left): :func:`sign_half_width` reads the sign-test interval of one pair of
processes off the narrowest window of the pairs that holds its share, and
:func:`t_half_width` scales the t interval across pairs of processes. The projection
is then narrowed by a margin (``FUTILITY_MARGIN``; :func:`t_margin` where a t
interval's spread rests on few pairs). If even that interval would hold 0 and reach
past the threshold, the result stays ``inconclusive`` however long it goes on.
Stopping without a verdict never adds a false alarm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from perfsuite.verdict.signtest import sign_rank
from perfsuite.verdict.stats import BOUND_FACTOR
from perfsuite.verdict.trimmed import interval_factor, kept


class Estimate(Protocol):
    """What futility reads of a verdict in progress
    (:class:`perfsuite.verdict.paired.PairedResult`): its relative change, its interval
    (``None``: none yet), its threshold, its error rate, and whether it decided."""

    @property
    def change(self) -> float: ...
    @property
    def ci(self) -> tuple[float, float] | None: ...
    @property
    def threshold(self) -> float: ...
    @property
    def alpha(self) -> float: ...
    @property
    def decisive(self) -> bool: ...
    @property
    def higher_is_better(self) -> bool: ...


#: :func:`futile` projects an interval to the evidence a budget can still buy and then
#: narrows it to this fraction, so a test stops only when even a luckier interval
#: could decide nothing
FUTILITY_MARGIN = 0.75


def futile(
    result: Estimate, half: float, margin: float = FUTILITY_MARGIN, *, bounding: bool = False
) -> bool:
    """Whether ``result`` could not become decisive with an interval of half-width
    ``half`` (in log-ratio: what the evidence its budget can still buy would give).

    ``half`` is narrowed by ``margin`` and laid around the current estimate: futile
    when it still holds 0 (so neither ``slower`` nor ``faster``) and still reaches past
    ``-threshold`` or ``+threshold`` (so not ``same``). An estimate beyond the
    threshold whose interval could clear 0 goes on, as does one that could fit inside
    the threshold. With ``bounding``, so does one whose interval could come to rule out
    a regression of ``BOUND_FACTOR`` times the threshold (it would then pass with that
    bound: :func:`perfsuite.verdict.stats.within_bound`).

    >>> from perfsuite.verdict.paired import judge
    >>> noisy = [0.12, -0.1, 0.02, 0.15, -0.08, 0.01] * 4
    >>> result = judge(noisy, 0.05, 0.001)
    >>> futile(result, sign_half_width(noisy, 0.001, 40))
    True
    >>> futile(result, sign_half_width(noisy, 0.001, 4000))
    False
    >>> futile(result, sign_half_width(noisy, 0.001, 40), bounding=True)
    False
    """
    if result.decisive or result.ci is None or not half < math.inf:
        return False
    return closeness(result, half * margin, bounding=bounding) < 1


def closeness(result: Estimate, half: float, *, bounding: bool = True) -> float:
    """How near ``result`` is to a decision with an interval of half-width ``half`` (in
    log-ratio, around its current estimate): the widest half-width any decision allows,
    over ``half``. At 1 or more such an interval decides: it clears 0 (slower or
    faster) or fits inside the threshold (same); with ``bounding``, or it rules out a
    regression of ``BOUND_FACTOR`` times the threshold (it would pass with that bound:
    :func:`perfsuite.verdict.stats.within_bound`). ``inf`` once decisive, 0 without an
    interval. :func:`futile` is this below 1.

    >>> from perfsuite.verdict.paired import PairedResult
    >>> from perfsuite.verdict.stats import Verdict
    >>> def open_at(change):
    ...     return PairedResult(Verdict.INCONCLUSIVE, change, (-0.5, 0.5), 3, 0.05, alpha=0.01)
    >>> round(closeness(open_at(0.12), 0.1), 2), round(closeness(open_at(0.0), 0.1), 2)
    (1.13, 0.95)
    >>> round(closeness(open_at(0.0), 0.1, bounding=False), 2)
    0.49
    """
    if result.decisive:
        return math.inf
    if result.ci is None or not half < math.inf:
        return 0.0
    center = math.log1p(result.change)
    threshold = result.threshold
    allows = [abs(center), min(math.log1p(threshold) - center, center - math.log1p(-threshold))]
    if bounding:  # the slower end of the interval under BOUND_FACTOR times the threshold
        bound = BOUND_FACTOR * threshold
        if result.higher_is_better:
            allows.append(center - math.log1p(-bound))
        else:
            allows.append(math.log1p(bound) - center)
    widest = max(allows)
    if half <= 0:
        return math.inf if widest >= 0 else 0.0
    return widest / half


def reachable(most: int, done: int, elapsed: float, seconds: float | None) -> int:
    """How much evidence (pairs of blocks, or pairs of processes) a test can have in
    all: up to ``most``, or as much as ``seconds`` leave time for at the pace so far
    (whole pairs only; :func:`seconds_leave` counts the one that crosses ``seconds``).

    >>> reachable(240, 12, 6.0, 60.0), reachable(240, 12, 0.0, 60.0), reachable(12, 3, 60.0, 90.0)
    (120, 240, 4)
    """
    if seconds is None or elapsed <= 0:
        return most
    return min(most, done + int(done / elapsed * max(0.0, seconds - elapsed)))


def seconds_leave(done: int, elapsed: float, seconds: float) -> int:
    """How many more pairs a bench runs, at the pace of its ``done`` pairs so far, before
    ``elapsed`` reaches ``seconds`` (the pair that crosses it included, as the budget
    lets it finish). :func:`reachable` counts only the pairs that fit whole: it
    projects what a test can still have, this what a bench will still run.

    >>> seconds_leave(1, 10.0, 12.0), seconds_leave(1, 5.0, 12.0), seconds_leave(2, 12.0, 12.0)
    (1, 2, 0)
    """
    if done <= 0 or elapsed <= 0:
        raise ValueError(f"no pace from {done} pairs in {elapsed} s")
    if elapsed >= seconds:
        return 0
    return math.ceil((seconds - elapsed) / (elapsed / done))


def sign_half_width(log_ratios: Sequence[float], alpha: float, pairs: int) -> float:
    """The half-width (in log-ratio) that the exact ``1 - alpha`` sign-test interval of
    the median could have with ``pairs`` pairs as spread as ``log_ratios``.

    That interval runs between the order statistics of ranks ``k`` and ``pairs + 1 -
    k`` (:func:`perfsuite.verdict.signtest.sign_rank`), which span the share ``1 - 2k /
    (pairs + 1)`` of the pairs around their median. The projection is half the
    narrowest window of ``log_ratios`` that holds that share (their shorth), not the
    window between their central quantiles: pairs drawn from a mixture (a decode whose
    blocks run at one of two speeds by memory layout) put outliers among the central
    few of a first look, though the interval of many pairs would lie in the narrow
    mode they came from; the shorth is what a luckier draw shows, and a test should
    stop only when even that could not decide. With no more pairs than
    ``log_ratios`` it is the interval of ``log_ratios`` itself; ``inf`` when ``pairs``
    are too few for any interval.

    >>> spread = [-0.2, -0.02, -0.01, 0.0, 0.01, 0.02, 0.2, 0.0, 0.01, -0.01, 0.02, -0.02]
    >>> round(sign_half_width(spread, 0.001, 12), 3), round(sign_half_width(spread, 0.001, 240), 3)
    (0.2, 0.005)
    """
    d = np.sort(np.asarray(log_ratios, dtype=float))
    k = sign_rank(max(pairs, int(d.size)), alpha)
    if k is None or d.size == 0:
        return math.inf
    if pairs <= d.size:
        return float(d[d.size - k] - d[k - 1]) / 2
    share = 1 - 2 * k / (pairs + 1)
    width = min(int(d.size), max(2, math.ceil(share * d.size)))
    return float(np.min(d[width - 1 :] - d[: d.size - width + 1])) / 2


def t_narrowing(n: int, reachable: int, alpha: float) -> float:
    """How a ``1 - alpha`` t interval of the trimmed mean of ``n`` estimates
    (:func:`perfsuite.verdict.trimmed.trimmed_interval`) scales at ``reachable``, the
    spread taken as it is: the ratio of their
    :func:`~perfsuite.verdict.trimmed.interval_factor` (Student's quantile falls as
    fewer degrees of freedom are lost, the standard error as about ``sqrt(n /
    reachable)``); 1 when no more can be had. Where :func:`~perfsuite.verdict.trimmed.kept`
    falls (8 keep 6 of 8; 10 keep 6 of 10 where 9 keep 7) it can exceed 1 or fall back:
    a trimmed interval of more estimates is not always narrower.

    >>> round(t_narrowing(3, 12, 0.01 / 3), 2), round(t_narrowing(3, 4, 0.05), 2)
    (0.13, 0.64)
    """
    if n < 2 or reachable <= n:
        return 1.0
    return interval_factor(reachable, alpha) / interval_factor(n, alpha)


def t_half_width(result: Estimate, n: int, reachable: int) -> float:
    """The half-width (in log-ratio) that ``result``'s t interval of ``n`` estimates
    would have with ``reachable`` of them, its spread taken as it is
    (:func:`t_narrowing`); ``inf`` when it has no interval.

    >>> from perfsuite.verdict.paired import PairedResult
    >>> from perfsuite.verdict.stats import Verdict
    >>> ci = (-0.5, 1.0)
    >>> three = PairedResult(Verdict.INCONCLUSIVE, 0.0, ci, pairs=3, threshold=0.05, alpha=0.01)
    >>> round(t_half_width(three, 3, 3), 3), round(t_half_width(three, 3, 12), 3)
    (0.693, 0.129)
    """
    if result.ci is None:
        return math.inf
    half = (math.log1p(result.ci[1]) - math.log1p(result.ci[0])) / 2
    return half * t_narrowing(n, reachable, result.alpha)


def t_futile(result: Estimate, estimates: Sequence[float], reachable: int) -> bool:
    """:func:`futile`, ``bounding``, for ``result``, a t interval of ``estimates`` (one
    relative change per pair of processes), projected to ``reachable`` of them
    (:func:`t_half_width`) and narrowed by :func:`t_margin`.

    Never while none of the estimates is trimmed and their median lies beyond the
    threshold: one pair off as a whole then sets the mean and the spread that the
    projection scales, and most of the pairs say the bench moved, so it earns more
    pairs: each one makes that pair's share of the mean smaller, and from 8 of them a
    trimmed mean no longer follows it. It holds whatever ``reachable`` is, as the
    pairs still to come may decide it untrimmed; the seconds it may spend are
    :mod:`perfsuite.ab.spend`'s to give, which ranks it by the plain projection.

    >>> from perfsuite.verdict.paired import judge_processes
    >>> pairs = [-0.42, 0.17, 0.24]
    >>> result = judge_processes([[math.log1p(e)] for e in pairs], 0.05, 0.05 / 3)
    >>> t_futile(result, pairs, 12), t_futile(result, [0.01, 0.0, -0.02], 12)
    (False, True)
    """
    n = len(estimates)
    if kept(n) == n and abs(float(np.median(estimates))) > result.threshold:
        return False
    return futile(result, t_half_width(result, n, reachable), t_margin(n), bounding=True)


def t_margin(n: int) -> float:
    """The margin for a t interval of ``n`` estimates: ``FUTILITY_MARGIN``, or less
    where their spread is known too poorly for it: the 90% lower confidence bound of
    a standard deviation on ``n - 1`` degrees of freedom, as a fraction of the
    estimate (``sqrt(df / chi2.ppf(0.9, df))``), whichever is smaller.

    >>> round(t_margin(3), 2), round(t_margin(6), 2), t_margin(12)
    (0.66, 0.74, 0.75)
    """
    from scipy.stats import chi2

    if n < 2:
        return 0.0
    df = n - 1
    return min(FUTILITY_MARGIN, math.sqrt(df / float(chi2.ppf(0.9, df))))
