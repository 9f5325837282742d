"""The session's move, for the gate's confirmation (:mod:`perfsuite.suspects`).

A shared machine shifts whole sessions: against a baseline of minutes before, many
benches of an unchanged tree can read slower, by more than their threshold. Where a
data or configuration file changed (so that no bench is untouched:
:class:`perfsuite.changed.Changes`) but a suspect's code did not, an A/B measures a
sample of those suspects, the surest slower (:func:`same_code_sample`), and clears the
rest with it (:func:`cleared_with`). :func:`mark_undecided` makes each bench the screen
left too noisy a suspect, for the A/B or the machine's move to decide.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from perfsuite.verdict.compare import RunComparison
from perfsuite.verdict.judge import CLEARED, NOT_SHOWN, UNCONFIRMED, BenchVerdict, Confirmed
from perfsuite.verdict.table import bound_text, pct

#: how many suspects whose code did not change an A/B measures before clearing the rest
SAME_CODE_SAMPLE = 3


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


def same_code_sample(pool: Sequence[BenchVerdict]) -> tuple[list[BenchVerdict], list[BenchVerdict]]:
    """Suspects whose code is the same on both sides, split into the sample an A/B
    measures (the ``SAME_CODE_SAMPLE`` the screen read most surely slower,
    :func:`screen_low`) and the rest, surest first. A real slowdown of one of them (a
    data or configuration file both sides read differently) adds to the machine's move,
    so it ranks high; a bench the screen read slow only through its noise would be as
    noisy in the A/B.

    >>> from types import SimpleNamespace as N
    >>> t = lambda name, c: N(fullname=name, time=N(change=c, ci=(c - 0.02, c + 0.02)))
    >>> pool = [t("a", 0.1), t("b", 0.3), t("c", 0.2), t("d", 0.4)]
    >>> sample, rest = same_code_sample(pool)
    >>> [v.fullname for v in sample], [v.fullname for v in rest]
    (['d', 'b', 'c'], ['a'])
    """
    ranked = sorted(pool, key=screen_low, reverse=True)
    return ranked[:SAME_CODE_SAMPLE], ranked[SAME_CODE_SAMPLE:]


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
