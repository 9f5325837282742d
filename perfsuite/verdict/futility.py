"""Futility: whether the evidence a budget can still buy could make a verdict decisive.

A sequential test stops at a decisive look; it can also stop at a look where no
amount of the evidence left could be decisive. The interval is projected to the
evidence the budget can still buy (:func:`reachable`: at the pace so far, within the
seconds left) by how its width scales (:func:`sign_narrowing` for the sign-test
interval of one pair of processes, :func:`t_narrowing` for the t interval across
pairs of processes), then narrowed by ``FUTILITY_MARGIN``. If even that interval
would hold 0 and reach past the threshold, the result stays ``inconclusive`` however
long it goes on. Stopping without a verdict never adds a false alarm.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfsuite.verdict.paired import PairedResult

#: :func:`futile` projects an interval to the evidence a budget can still buy and then
#: narrows it to this fraction, so a test stops only when even a luckier interval
#: could decide nothing
FUTILITY_MARGIN = 0.75


def futile(result: PairedResult, narrowing: float, margin: float = FUTILITY_MARGIN) -> bool:
    """Whether ``result`` could not become decisive with its interval ``narrowing``
    times as wide (what the evidence its budget can still buy would do to it).

    The half-width (in log-ratio) is narrowed by ``narrowing`` and then by ``margin``,
    around the current estimate: futile when it still holds 0 (so neither ``slower``
    nor ``faster``) and still reaches past ``-threshold`` or ``+threshold`` (so not
    ``same``). An estimate beyond the threshold whose interval could clear 0 goes on,
    as does one that could fit inside the threshold.

    >>> from perfsuite.verdict.paired import judge
    >>> noisy = judge([0.12, -0.1, 0.02, 0.15, -0.08, 0.01] * 4, 0.05, 0.001)
    >>> futile(noisy, sign_narrowing(24, 40)), futile(noisy, sign_narrowing(24, 4000))
    (True, False)
    """
    if result.decisive or result.ci is None or not narrowing < 1:
        return False
    center = math.log1p(result.change)
    low, high = math.log1p(result.ci[0]), math.log1p(result.ci[1])
    half = (high - low) / 2 * narrowing * margin
    holds_zero = center - half <= 0 <= center + half
    limit = math.log1p(result.threshold), math.log1p(-result.threshold)
    sticks_out = center + half >= limit[0] or center - half <= limit[1]
    return holds_zero and sticks_out


def reachable(most: int, done: int, elapsed: float, seconds: float | None) -> int:
    """How much evidence (pairs of blocks, or pairs of processes) a test can have in
    all: up to ``most``, or as much as ``seconds`` leave time for at the pace so far.

    >>> reachable(240, 12, 6.0, 60.0), reachable(240, 12, 0.0, 60.0), reachable(12, 3, 60.0, 90.0)
    (120, 240, 4)
    """
    if seconds is None or elapsed <= 0:
        return most
    return min(most, done + int(done / elapsed * max(0.0, seconds - elapsed)))


def sign_narrowing(pairs: int, reachable: int) -> float:
    """How a sign-test interval's width scales from ``pairs`` to ``reachable`` pairs:
    ``sqrt(pairs / reachable)`` (1 when no more can be had)."""
    return math.sqrt(pairs / reachable) if reachable > pairs > 0 else 1.0


def t_narrowing(n: int, reachable: int, alpha: float) -> float:
    """How a ``1 - alpha`` t interval of ``n`` estimates scales at ``reachable``: the
    fall of Student's quantile (fewer degrees of freedom lost) times ``sqrt(n /
    reachable)``, the spread taken as it is (1 when no more can be had).

    >>> round(t_narrowing(3, 12, 0.01 / 3), 2)
    0.11
    """
    from scipy.stats import t as student_t

    if n < 2 or reachable <= n:
        return 1.0
    quantile = student_t.ppf(1 - alpha / 2, [n - 1, reachable - 1])
    return float(quantile[1] / quantile[0]) * math.sqrt(n / reachable)
