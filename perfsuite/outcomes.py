"""A confirmation's A/B run, and each suspect's outcome read from its report's rows
(``pairs.json``): confirmed, cleared, not shown or unconfirmed
(:mod:`perfsuite.suspects` runs the A/B and applies these)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.judge import (
    CLEARED,
    CONFIRMED,
    NOT_SHOWN,
    UNCONFIRMED,
    Confirmed,
)
from perfsuite.verdict.stats import within_bound
from perfsuite.verdict.table import bound_text, pct

#: the exit statuses of an A/B that ran to a verdict; any other is a fault
VERDICT_STATUSES = (ExitCode.OK, ExitCode.REGRESSION, ExitCode.NOT_JUDGED)


@dataclass(frozen=True)
class AbRun:
    """One confirmation: the command, its exit status, its seconds and each bench's row."""

    command: tuple[str, ...]
    shown: str  # the command as a user would type it
    status: int | None  # None: not run
    seconds: float = 0.0
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    why_not: str | None = None  # why the A/B was not run
    last_line: str = ""  # the A/B's last line of output, for a failure

    @property
    def concluded(self) -> bool:
        """The A/B ran and ended with a verdict's status (no regression, a regression,
        or nothing judged), not a fault."""
        return self.status in VERDICT_STATUSES


def row_of(ab: AbRun, nodeid: str) -> dict[str, Any] | None:
    """The A/B's row (``pairs.json``) of ``nodeid``, given from the rootdir or from a
    folder below it; None where it has none."""
    return ab.rows.get(nodeid) or next(
        (r for n, r in ab.rows.items() if n.endswith("/" + nodeid)), None
    )


def _interval(row: dict[str, Any]) -> list[Any] | None:
    """A row's interval (``ci``: its low and high ends), None where it has none."""
    found = row.get("ci")
    return found if isinstance(found, list) and len(found) == 2 else None


def decide(nodeid: str, ab: AbRun, what: str = "time") -> Confirmed:
    """One suspect's outcome from the A/B's row for it: its time's verdict, with
    ``what="cpu"`` its CPU per call's, with ``what="memory"`` its peak memory's (either
    of these marked :attr:`~perfsuite.verdict.judge.Confirmed.cost`).

    ``slower`` confirms it, ``same`` or ``faster`` clears it. An undecided verdict passes
    as ``not shown`` when its interval rules out a regression of ``BOUND_FACTOR`` times
    the A/B's own threshold, the bench's (it says its bound, as ``perfsuite ab`` does),
    never a screen's threshold widened by the spread between earlier runs: both sides
    ran in one session, so that spread is not in the A/B's evidence, and a bound under
    twice the widened threshold would pass a regression the A/B could have caught. One
    that does not (or a row with no interval) is ``unconfirmed``: too noisy to have
    caught such a regression.
    """
    return replace(_reading(nodeid, ab, what), cost=what != "time")


def _reading(nodeid: str, ab: AbRun, what: str) -> Confirmed:
    """:func:`decide`'s outcome, unmarked."""
    shown = ab.shown
    if ab.status is None:
        return Confirmed(UNCONFIRMED, f"unconfirmed: {ab.why_not}", shown)
    row = row_of(ab, nodeid)
    if row is None or not ab.concluded:
        why = f"the A/B failed (exit {ab.status}: {ab.last_line})"
        if ab.concluded:
            why = "not measured by the A/B"
        return Confirmed(UNCONFIRMED, f"unconfirmed: {why}", shown)
    from perfsuite.ab.report import LEFT_OUT

    if str(row.get("status", "")).startswith(LEFT_OUT):
        return Confirmed(UNCONFIRMED, f"unconfirmed: {row['status']}", shown)
    if what == "memory":
        return _memory_outcome(row.get("memory"), shown)
    threshold = row.get("threshold")
    if what == "cpu":
        row = row.get("cpu") or {"verdict": None, "pairs": row.get("pairs")}
    verdict = row.get("verdict")
    ci = _interval(row)
    interval = f" [{pct(ci[0])}, {pct(ci[1])}]" if ci is not None else ""
    measured = f"{pct(row.get('change'))}{interval} in {row.get('pairs', '?')} pairs"
    label = "" if what == "time" else f"{what} "
    if verdict == "slower":
        return Confirmed(CONFIRMED, f"{label}confirmed by A/B: {measured}")
    if verdict in ("same", "faster"):
        return Confirmed(CLEARED, f"{label}cleared by A/B ({verdict}): {measured}")
    if verdict and ci is not None and isinstance(threshold, int | float):
        bound = float(ci[1])
        named = f"{threshold * 100:.3g}%"
        if within_bound(bound, float(threshold)):
            return Confirmed(
                NOT_SHOWN,
                f"{label}not shown by A/B: {bound_text(bound)} ({measured}; threshold {named})",
            )
        return Confirmed(
            UNCONFIRMED,
            f"{label}unconfirmed: A/B too noisy ({measured}): it did not rule out "
            f"{pct(bound)}, over twice the {named} threshold; more pairs "
            "(perfsuite ab --max-pairs, --max-seconds) would decide",
            shown,
        )
    return Confirmed(
        UNCONFIRMED,
        f"{label}unconfirmed: A/B {verdict or 'not measured'} ({measured}); more pairs "
        "(perfsuite ab --max-pairs, --max-seconds) would decide",
        shown,
    )


def _memory_outcome(memory: Any, shown: str) -> Confirmed:
    """A peak-memory suspect's outcome from the A/B's two peaks (``pairs.json``)."""
    if not isinstance(memory, dict) or not isinstance(memory.get("rose"), bool):
        return Confirmed(UNCONFIRMED, "unconfirmed: no peak memory from the A/B", shown)
    peaks = f"peak {memory.get('a_mb', 0):.0f} -> {memory.get('b_mb', 0):.0f} MB"
    pairs = memory.get("pairs")
    if isinstance(pairs, int) and pairs > 1:
        rose = memory.get("pairs_rose")
        each = f"; rose in {rose} of them" if isinstance(rose, int) and rose < pairs else ""
        peaks += f" (median of {pairs} pairs of processes{each})"
    if memory["rose"]:
        return Confirmed(CONFIRMED, f"memory confirmed by A/B: {peaks}")
    return Confirmed(CLEARED, f"memory cleared by A/B: {peaks}")


def time_held(nodeid: str, ab: AbRun) -> bool:
    """Whether the A/B's time interval for ``nodeid`` rules out a gain of the bench's
    threshold. Where it does not, a CPU per call that rose may have bought that time
    (the work spread over more cores), and a bench whose processes settle in modes
    tens of percent apart (a multi-threaded one) can read its CPU risen in three pairs
    by chance while its time says nothing.

    >>> row = {"x": {"ci": [-0.02, 0.25], "threshold": 0.05}}
    >>> time_held("x", AbRun((), "", 1, rows=row)), time_held("y", AbRun((), "", 1, rows=row))
    (True, False)
    >>> time_held("x", AbRun((), "", 1, rows={"x": {"ci": [-0.38, 0.85], "threshold": 0.05}}))
    False
    """
    row = row_of(ab, nodeid) or {}
    ci, threshold = _interval(row), row.get("threshold")
    if ci is None or not isinstance(threshold, int | float):
        return False
    return isinstance(ci[0], int | float) and ci[0] > -threshold


#: which outcome stands when a suspect's measures disagree: the first of these found
PRECEDENCE = (CONFIRMED, UNCONFIRMED, NOT_SHOWN, CLEARED)


def decide_all(nodeid: str, ab: AbRun, whats: Sequence[str]) -> Confirmed:
    """One suspect's outcome over every measure that made it one (``whats``):
    :func:`combined` of each one's :func:`decide`."""
    return combined([decide(nodeid, ab, what) for what in whats])


def combined(outcomes: Sequence[Confirmed]) -> Confirmed:
    """One suspect's outcome from those of its measures (at least one): a regression if
    any confirms, else unconfirmed if any is, and so on by PRECEDENCE; marked ``cost``
    where only its CPU or memory readings gave that outcome."""
    for outcome in PRECEDENCE:
        found = [o for o in outcomes if o.outcome == outcome]
        if found:
            command = next((o.command for o in found if o.command), "")
            text = "; ".join(o.text for o in found)
            return Confirmed(outcome, text, command, cost=all(o.cost for o in found))
    return outcomes[0]
