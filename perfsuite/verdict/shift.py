"""The session's move, for the gate's confirmation (:mod:`perfsuite.suspects`).

A shared machine shifts whole sessions: against a baseline of minutes before, many
benches of an unchanged tree can read slower, by more than their threshold. Where no
bench's code changed, an A/B measures a sample of those suspects, the slowest
(:func:`same_code_sample`), and clears the rest with it (:func:`cleared_with`).

The same drift can hide a regression: where a bench's group read faster, a bench slowed
down by its threshold can read unchanged. :func:`mark_standouts` makes a bench that
stands out slower from the move of its group (or, in a group of fewer than
``MIN_GROUP`` others, of the session) a time suspect too, and so does a bench left
undecided whose interval lies above 0 and past its threshold, where the rank test found
it slower with significance or had too few rounds to run (:func:`undecided_slower`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from perfsuite.verdict.compare import RunComparison
from perfsuite.verdict.judge import CLEARED, NOT_SHOWN, UNCONFIRMED, BenchVerdict, Confirmed
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.table import bound_text, pct

#: other judged benches needed before the session's median change is the reference of a
#: bench alone in its group (:func:`standout`)
MIN_FOR_SHIFT = 10
#: how many suspects whose code did not change an A/B measures before clearing the rest
SAME_CODE_SAMPLE = 3
#: other judged benches of a group needed before its median change is the bench's reference
MIN_GROUP = 2


def screen_change(item: BenchVerdict) -> float:
    """The change the screen read of ``item``'s time, 0 where it has none: the key
    suspects are ranked by, slowest first."""
    return item.time.change if item.time is not None else 0.0


def screen_low(item: BenchVerdict) -> tuple[bool, float]:
    """How surely the screen read ``item`` slower: the low end of its time's interval
    (after every bench that has one, its change, 0 where it has none), the key the
    same-code sample is drawn by, surest first. A bench the screen read slow only
    through its noise has a low end near or below 0; one a data file slowed has its
    whole interval up.

    >>> from types import SimpleNamespace as N
    >>> noisy = N(time=N(change=0.3, ci=(-0.1, 0.7)))
    >>> steady = N(time=N(change=0.1, ci=(0.05, 0.15)))
    >>> screen_low(noisy) < screen_low(steady)
    True
    """
    if item.time is None:
        return False, 0.0
    if item.time.ci is None:
        return False, item.time.change
    return True, item.time.ci[0]


def same_code_sample(
    pool: Sequence[BenchVerdict],
    decidable: Callable[[BenchVerdict], bool] = lambda item: True,
) -> tuple[list[BenchVerdict], list[BenchVerdict]]:
    """Suspects whose code is the same on both sides, split into the sample an A/B
    measures (the ``SAME_CODE_SAMPLE`` the screen read most surely slower,
    :func:`screen_low`, of those the A/B can ``decidable``, or of all where it can
    decide none) and the rest, surest first. A real slowdown of one of them (a data or
    configuration file both sides read differently) adds to the machine's move, so it
    ranks high; a bench the screen read slow only through its noise would be as noisy
    in the A/B, and one whose A/B could not reach its first look would leave the
    sample, and so the rest, unconfirmed.

    >>> from types import SimpleNamespace as N
    >>> t = lambda name, c: N(fullname=name, time=N(change=c, ci=(c - 0.02, c + 0.02)))
    >>> pool = [t("a", 0.1), t("b", 0.3), t("c", 0.2), t("d", 0.4)]
    >>> sample, rest = same_code_sample(pool)
    >>> [v.fullname for v in sample], [v.fullname for v in rest]
    (['d', 'b', 'c'], ['a'])
    >>> sample, rest = same_code_sample(pool, lambda item: item.fullname != "b")
    >>> [v.fullname for v in sample], [v.fullname for v in rest]
    (['d', 'c', 'a'], ['b'])
    """
    ranked = sorted(pool, key=screen_low, reverse=True)
    fit = [v for v in ranked if decidable(v)] or ranked
    sample = fit[:SAME_CODE_SAMPLE]
    return sample, [v for v in ranked if v not in sample]


def cleared_with(
    sample: Sequence[BenchVerdict], decided: Mapping[str, Confirmed], sha: str
) -> Confirmed:
    """What a suspect of the rest (:func:`same_code_sample`) concludes from the A/B of
    its sample, not measured: where no sampled suspect was confirmed or left
    unconfirmed, ``cleared`` (each was cleared) or ``not shown`` (one was not shown);
    otherwise ``unconfirmed``, with the command that would measure it."""
    outcomes = [decided[v.fullname].outcome for v in sample]
    names = ", ".join(v.fullname for v in sample)
    if not all(outcome in (CLEARED, NOT_SHOWN) for outcome in outcomes):
        return Confirmed(
            UNCONFIRMED,
            f"unconfirmed, not measured: its code is the same as at {sha[:12]}, and the A/B "
            f"did not clear all {len(sample)} suspect(s) of the same code the screen read "
            f"most surely slower ({names}); to decide it: perfsuite ab {sha} -- NODEID",
            measured=False,
        )
    cleared = all(outcome == CLEARED for outcome in outcomes)
    word = "cleared" if cleared else "showed none slower"
    return Confirmed(
        CLEARED if cleared else NOT_SHOWN,
        f"not measured: its code is the same as at {sha[:12]}, and the A/B {word} of the "
        f"{len(sample)} suspect(s) of the same code the screen read most surely slower "
        f"({names})",
        measured=False,
    )


def standout(item: BenchVerdict, ranked: Sequence[BenchVerdict]) -> str | None:
    """Why ``item`` (``same`` or ``faster`` by the rank test) is slower than its
    reference's move, or None. The reference is the median change of the other benches
    of its group (``MIN_GROUP`` or more), else of the session (``MIN_FOR_SHIFT`` or
    more). Only a reference that read faster can hide a slowdown; ``item`` stands out
    when its change beyond that move exceeds its threshold and the lower end of its
    interval lies above that move too. An ``inconclusive`` bench is too noisy to stand
    out of anything: its interval already spans the threshold.

    >>> from types import SimpleNamespace as N
    >>> same = Verdict.SAME
    >>> def t(c, lo, group="g"):
    ...     time = N(change=c, ci=(lo, c + 0.02), threshold=0.05, fallback=None, verdict=same)
    ...     return N(time=time, current=N(group=group), not_comparable=None)
    >>> group = [t(-0.10, -0.12), t(-0.12, -0.14), t(-0.09, -0.11)]
    >>> print(standout(t(-0.02, -0.04), group))  # doctest: +NORMALIZE_WHITESPACE
    slower than its group's move: -2.0% while the other 3 benches of its group moved
    -10.0%: +8.9% beyond that move
    >>> standout(t(-0.07, -0.09), group) is None
    True
    """
    time = item.time
    if time is None or time.ci is None or time.verdict not in (Verdict.SAME, Verdict.FASTER):
        return None
    group = item.current.group
    others = [v for v in ranked if v is not item and v.current.group == group]
    whose, where = "its group's", f"the other {len(others)} benches of its group"
    if group is None or len(others) < MIN_GROUP:
        others = [v for v in ranked if v is not item]
        whose, where = "the session's", f"the other {len(others)} benches of the session"
        if len(others) < MIN_FOR_SHIFT:
            return None
    reference = statistics.median(math.log1p(screen_change(v)) for v in others)
    if reference >= 0:
        return None
    beyond = math.expm1(math.log1p(time.change) - reference)
    lower = math.expm1(math.log1p(time.ci[0]) - reference)
    if beyond <= time.threshold or lower <= 0:
        return None
    return (
        f"slower than {whose} move: {pct(time.change)} while {where} moved "
        f"{pct(math.expm1(reference))}: {pct(beyond)} beyond that move"
    )


def undecided_slower(item: BenchVerdict) -> str | None:
    """Why ``item`` is a time suspect though ``inconclusive``, or None: its interval lies
    above 0 and reaches past its threshold, and the rank test found it slower with
    significance (or could not run: too few rounds for it, yet enough for the interval).
    The screen can neither rule that regression in nor out; the A/B can.

    >>> from types import SimpleNamespace as N
    >>> from perfsuite.verdict.stats import Comparison
    >>> def t(c, lo, hi, p=1e-5, fallback=None):
    ...     undecided = Verdict.INCONCLUSIVE
    ...     return N(time=Comparison(undecided, c, (lo, hi), p, 0.05, 12, 12, fallback))
    >>> print(undecided_slower(t(0.049, 0.03, 0.063)))
    slower, undecided: +4.9% [+3.0%, +6.3%] lies above 0 and reaches past its +5.0% threshold
    >>> undecided_slower(t(0.03, 0.01, 0.045)), undecided_slower(t(0.08, -0.01, 0.2, p=0.1))
    (None, None)
    >>> few = t(0.07, 0.02, 0.09, p=None, fallback="too few rounds")
    >>> print(undecided_slower(few))
    slower, undecided: +7.0% [+2.0%, +9.0%] lies above 0 and reaches past its +5.0% threshold
    """
    time = item.time
    if time is None or time.verdict is not Verdict.INCONCLUSIVE or time.ci is None:
        return None
    if not ((time.significant or time.untested) and time.above_and_past):
        return None
    low, high = time.ci
    return (
        f"slower, undecided: {pct(time.change)} [{pct(low)}, {pct(high)}] lies above 0 "
        f"and reaches past its {pct(time.threshold)} threshold"
    )


def mark_standouts(comparison: RunComparison) -> RunComparison:
    """``comparison`` with each bench that stands out slower (:func:`standout`) or is
    slower but undecided (:func:`undecided_slower`) marked a time suspect."""
    ranked = [  # the benches whose time the rank test judged
        v
        for v in comparison.verdicts
        if v.time is not None and v.time.fallback is None and not v.not_comparable
    ]
    verdicts = [
        replace(v, suspected=why)
        if (why := standout(v, ranked) or undecided_slower(v)) is not None
        else v
        for v in comparison.verdicts
    ]
    return replace(comparison, verdicts=verdicts)


#: the most benches a screen left too noisy that it sends to the A/B to decide
UNDECIDED_AT_MOST = 16


def mark_undecided(
    comparison: RunComparison,
    at_most: int | None = UNDECIDED_AT_MOST,
    then: str = "the A/B decides it",
    among: Callable[[BenchVerdict], bool] = lambda item: True,
) -> tuple[RunComparison, set[str]]:
    """``comparison`` with each bench the screen left too noisy
    (:attr:`~perfsuite.verdict.judge.BenchVerdict.too_noisy`: measured on both sides,
    neither judged nor bounded under twice its threshold) made a time suspect, its note
    saying what ``then`` decides it (the A/B, or the rule that no code changed); and
    their names. Only those ``among`` holds for, at most ``at_most`` (None: every one),
    those the screen read slowest first; where no counter rose.

    A screen compares runs of two processes, whose offsets can hide a few percent of
    either sign; the A/B measures both commits in one session, so it can decide them.
    """
    verdicts = comparison.verdicts
    if any(v.counters_rose for v in verdicts):
        return comparison, set()
    noisy = (v for v in verdicts if v.too_noisy and among(v))
    undecided = sorted(noisy, key=screen_change, reverse=True)[:at_most]
    names = {v.fullname for v in undecided}
    marked = [
        replace(v, suspected=f"too noisy on the screen ({_reading(v)}); {then}")
        if v.fullname in names
        else v
        for v in verdicts
    ]
    return replace(comparison, verdicts=marked), names


def _reading(item: BenchVerdict) -> str:
    """What the screen read of an undecided bench: its change, or why it could not."""
    fallback = item.time.fallback if item.time is not None else None
    reading = f"{pct(screen_change(item))}, {bound_text(item.bound)}"
    if fallback is None:
        return reading
    return fallback if item.bound is None else f"{reading}; {fallback}"
