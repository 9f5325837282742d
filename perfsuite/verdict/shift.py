"""The session's shift, for the gate's confirmation (:mod:`perfsuite.suspects`).

A shared machine shifts whole sessions: against a baseline of minutes before, most
benches of an unchanged tree can read a few percent slower. Where at least
``MIN_FOR_SHIFT`` benches were judged, the session's shift is the median change of all
of them, and a time suspect whose change less that shift stays under its threshold
*moved with the session*.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from perfsuite.verdict.compare import RunComparison
from perfsuite.verdict.judge import CLEARED, BenchVerdict, Confirmed
from perfsuite.verdict.stats import Verdict

#: judged benches needed before the session's median change is taken as its shift
MIN_FOR_SHIFT = 10
#: how many suspects that moved with the session an A/B measures before clearing the rest
SHIFT_SAMPLE = 2


def _pct(value: float) -> str:
    return f"{value * 100:+.1f}%"


def session_shift(comparison: RunComparison) -> float | None:
    """The session's shift: the median change of every bench judged by the rank test
    (``None`` under ``MIN_FOR_SHIFT`` of them, or where it is not a slowdown).

    >>> from types import SimpleNamespace as N
    >>> t = lambda c: N(time=N(change=c, fallback=None), not_comparable=None)
    >>> round(session_shift(N(verdicts=[t(0.1)] * 6 + [t(0.0)] * 5)), 3)
    0.1
    >>> session_shift(N(verdicts=[t(0.1)] * 9)) is None
    True
    """
    changes = [
        math.log1p(v.time.change)
        for v in comparison.verdicts
        if v.time is not None and v.time.fallback is None and not v.not_comparable
    ]
    if len(changes) < MIN_FOR_SHIFT:
        return None
    shift = math.expm1(statistics.median(changes))
    return shift if shift > 0 else None


def with_session(item: BenchVerdict, shift: float | None) -> bool:
    """A time suspect whose change, less the session's shift, is under its threshold."""
    if shift is None or item.time is None or item.verdict is not Verdict.SLOWER:
        return False
    if item.cpu_slower or item.memory_rose:
        return False
    return (1 + item.time.change) / (1 + shift) - 1 < item.time.threshold


def cleared_with(shift: float, sample: Sequence[BenchVerdict], item: BenchVerdict) -> Confirmed:
    change = item.time.change if item.time is not None else 0.0
    names = ", ".join(v.fullname for v in sample)
    return Confirmed(
        CLEARED,
        f"cleared with the session: the session moved {_pct(shift)} (its median change), "
        f"this bench {_pct(change)}, and the A/B cleared what moved most with it ({names})",
    )
