"""Suspects measured again in fresh pairs of processes, looked at as they come in.

A confirmation judges a suspect across fresh pairs of processes only (the first pair,
chosen for looking slow, is never pooled in). One pair of processes costs a start-up
(a framework import, the datasets, the warm-up) and a teardown, so the confirmation
looks at the evidence after 3, 6, 12, ... pairs (doubling, the last look at
``--confirm N``) and stops a bench at the first look whose interval is decisive:
slower, faster or same. A clear regression stops after 3 pairs; one whose pairs of
processes scatter (a single-threaded bench whose speed follows its memory layout)
goes on to 12.

A suspect that only leans (slower or faster, or beyond the threshold) is judged at
``CONFIRM_ALPHA``: a false alarm needs the first stage to have erred that way too. An
undecided one (``--suspects undecided``: the first stage could not rule a regression
out, which on a noisy machine is most benches) is judged at the first stage's
``PAIRED_ALPHA``, as the fresh pairs are then its only evidence. The test is one-sided,
in the direction the first estimate leaned, except for an undecided suspect taken
whichever way it points (:func:`interval_alphas`).

The false-alarm rate holds under this early stopping by Bonferroni's rule: each of
the ``k`` looks is judged at ``alpha / k``, so the chance that any look errs is at
most ``alpha`` whatever the dependence between looks. It costs some power at the last
look against a single look at ``alpha``, which the extra pairs more than repay.

A look also keeps a suspect whose interval rules out a regression of twice its
threshold (:attr:`perfsuite.ab.rows.Row.bounded`) and whose estimate is within the
threshold: it passes as it stands, saying its bound, and no `slower` is near, so the
budget goes to the suspects still open. One whose estimate is beyond the threshold goes
on: it is where a decision is closest.

A look also stops a suspect that the pairs still to come could not decide
(:func:`perfsuite.verdict.futility.futile`): its t interval, narrowed to what the
pairs of processes left (up to the last look, or as many as ``--confirm-seconds``
leaves time for at the pace so far) would make of it and then by a margin
(:func:`perfsuite.verdict.futility.t_margin`: 3/4, less while the spread rests on
fewer than 7 pairs), would still hold 0 and reach past the threshold, and would still
reach twice the threshold the slower way: more pairs of processes would end
``inconclusive`` and too noisy all the same. It ends ``inconclusive`` there,
``futile``; stopping without a verdict adds no false alarm. A suspect that more pairs
could bound under twice its threshold goes on: it would pass.

``--confirm-seconds`` bounds the time a bench file's confirmation spends, counted
from its first pair of processes; the first look's pairs always run. Once it has run
out, no further pair of processes starts and the look due then is taken at once on
the pairs so far, as the last one. It is still one
of the planned looks, judged at the same ``alpha / k``, so the bound costs power only
(a suspect left undecided stays ``inconclusive``), never false alarms.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

from perfsuite.ab.budget import SUSPECT_KINDS
from perfsuite.ab.rows import Row
from perfsuite.ab.verdicts import Verdicts
from perfsuite.verdict.futility import futile, reachable, t_half_width, t_margin
from perfsuite.verdict.stats import Verdict

#: the first look of a confirmation: the fewest pairs of processes a t interval of
#: their medians can be decisive with, at a clear regression
FIRST_LOOK = 3
DECISIVE = (Verdict.SLOWER, Verdict.FASTER, Verdict.SAME)


def looks(most: int) -> list[int]:
    """After how many pairs of processes a confirmation of at most ``most`` looks.

    >>> looks(12), looks(6), looks(3), looks(2), looks(20)
    ([3, 6, 12], [3, 6], [3], [2], [3, 6, 12, 20])
    """
    if most < 2:
        raise ValueError(f"a confirmation needs at least 2 pairs of processes, got {most}")
    found, k = [], FIRST_LOOK
    while k < most:
        found.append(k)
        k *= 2
    return [*found, most]


def pick_suspects(
    verdicts: Verdicts, kind: str, lean_alpha: float, undecided_alpha: float
) -> dict[str, float]:
    """The benches a confirmation measures again, each with its error rate, in order.

    ``kind`` is ``--suspects``: ``leaning`` takes :attr:`Row.suspect` at ``lean_alpha``,
    ``leaning-slower`` those of them that are decisive or lean slower
    (:func:`perfsuite.ab.rows.suspicious`); ``undecided`` also takes
    :attr:`Row.undecided` at ``undecided_alpha``. A first pair whose CPU per call or
    peak memory rose is a suspect at ``lean_alpha`` whatever its time: one pair of
    processes' layout moves its CPU as it moves its time.
    """
    if kind not in SUSPECT_KINDS:
        raise ValueError(f"unknown kind of suspects {kind!r}")
    chosen: dict[str, float] = {}
    for row in verdicts.rows:
        alpha = _time_alpha(row, kind, lean_alpha, undecided_alpha)
        if alpha is None and (row.memory_rose or row.cpu_slower):
            alpha = lean_alpha
        if alpha is not None:
            chosen[row.nodeid] = alpha
    return chosen


def _time_alpha(row: Row, kind: str, lean_alpha: float, undecided_alpha: float) -> float | None:
    """The error rate ``row``'s time makes it a suspect of ``--suspects kind`` at, or None:
    an undecided first pair that does not lean slower is judged at ``undecided_alpha``
    even where it leans faster beyond the threshold, as its confirmation is then taken
    whichever way it points (:attr:`Row.open_either_way`)."""
    if kind == "undecided" and row.open_either_way:
        return undecided_alpha
    if row.suspect_of(kind):
        return lean_alpha
    if kind == "undecided" and row.undecided:
        return undecided_alpha
    return None


def interval_alphas(
    verdicts: Verdicts, alphas: Mapping[str, float], either: Collection[str]
) -> dict[str, float]:
    """The two-sided level of each suspect's t intervals, from its error rate in ``alphas``.

    A confirmation counts only in the direction the suspect's first estimate leaned
    (:attr:`Row.suspicion`): a check the other way is `inconclusive`
    (:meth:`Verdicts.confirmed`). Its test is then one-sided, so its interval is the
    two-sided one at twice its rate. The lower bound alone decides `slower` (the upper
    alone `faster`), and both bounds decide `same` as two one-sided tests. Each claim errs
    with at most the suspect's rate. A suspect in ``either``
    (:func:`either_way`: taken whichever way it points), or whose first estimate is
    exactly 0, keeps the two-sided interval at its rate.
    """
    rows = {row.nodeid: row for row in verdicts.rows}
    found: dict[str, float] = {}
    for nodeid, alpha in alphas.items():
        row = rows.get(nodeid)
        lead = row.suspicion if row is not None else None
        one_way = nodeid not in either and lead is not None and lead.change != 0
        found[nodeid] = 2 * alpha if one_way else alpha
    return found


def memory_only(verdicts: Verdicts, chosen: Collection[str], kind: str) -> frozenset[str]:
    """The suspects of :func:`pick_suspects` chosen for their peak memory alone: one
    pair of processes saw it rise, and their time made no suspect. Their confirmation
    ends at its first look, and only their peak memory is taken from it
    (:meth:`Verdicts.confirmed`): the first pair's time verdict stands."""
    rows = _cost_only(verdicts, chosen, kind)
    return frozenset(row.nodeid for row in rows if row.memory_rose and not row.cpu_slower)


def either_way(verdicts: Verdicts, chosen: Collection[str], kind: str) -> frozenset[str]:
    """The suspects of :func:`pick_suspects` whose confirmation is taken whichever way it
    points: with ``--suspects undecided``, a first pair that could not rule out a
    regression and does not lean slower (:attr:`Row.open_either_way`). It is judged at
    the first stage's error rate on the fresh pairs alone, so no direction is needed to
    hold the false-alarm rate (:meth:`Verdicts.confirmed`)."""
    if kind != "undecided":
        return frozenset()
    return frozenset(r.nodeid for r in verdicts.rows if r.nodeid in chosen and r.open_either_way)


def _cost_only(verdicts: Verdicts, chosen: Collection[str], kind: str) -> list[Row]:
    """The rows of the suspects in ``chosen`` that their time made no suspect of."""
    return [
        row
        for row in verdicts.rows
        if row.nodeid in chosen and _time_alpha(row, kind, 0, 0) is None
    ]


def cpu_only(verdicts: Verdicts, chosen: Collection[str], kind: str) -> frozenset[str]:
    """The suspects of :func:`pick_suspects` chosen for their CPU per call (one pair of
    processes read it slower) and not their time: a look keeps them only once their
    CPU, judged across the fresh pairs, is decisive too."""
    return frozenset(row.nodeid for row in _cost_only(verdicts, chosen, kind) if row.cpu_slower)


def _settled(row: Row) -> bool:
    """Bounded (:attr:`Row.bounded`: it passes as it stands, saying its bound) with an
    estimate within the threshold, so that no `slower` is near: more pairs would only
    narrow its bound."""
    result = row.run.result if row.run else None
    if result is None or not result.bounded:
        return False
    slower_by = -result.change if result.higher_is_better else result.change
    return slower_by <= result.threshold


def _decisive(row: Row, cpu: Collection[str]) -> bool:
    """Whether a look can keep ``row``: its time is decisive or :func:`_settled`, and so
    is its CPU per call where it is in ``cpu`` (a suspect for its CPU)."""
    if row.verdict not in DECISIVE and not _settled(row):
        return False
    if row.nodeid not in cpu:
        return True
    found = row.run.cpu if row.run is not None else None
    return found is not None and found.verdict in DECISIVE


def _stop_if_futile(row: Row, can_have: int) -> bool:
    """Whether ``row``'s suspect could not be decided in ``can_have`` pairs of processes
    in all; if so, its result is marked ``futile``."""
    run = row.run
    if run is None or run.result is None:
        return False
    n = len(run.sessions)
    if can_have <= n:
        return False  # the budget's own rule ends it
    half = t_half_width(run.result, n, can_have)
    if not futile(run.result, half, t_margin(n), bounding=True):
        return False
    run.result = replace(run.result, futile=True)
    return True


def _memory_settled(
    runs: Sequence[Verdicts],
    suspects: Sequence[str],
    kept: Mapping[str, Row],
    memory: Collection[str],
) -> bool:
    """Whether every suspect not yet kept is in ``memory`` and some pair of processes
    in ``runs`` read its peak as not risen: a peak rose only if it rose in every pair
    (:attr:`perfsuite.verdict.cost.MemoryChange.rose`), so no further pair could
    confirm it."""
    left = [n for n in suspects if n not in kept]
    if not left or any(n not in memory for n in left):
        return False
    calm = {
        row.nodeid
        for run in runs
        for row in run.rows
        if row.run is not None and row.run.memory is not None and not row.run.memory.rose
    }
    return all(n in calm for n in left)


def confirm_in_fresh_pairs(
    session: Callable[[int, list[str]], Verdicts],
    suspects: Sequence[str],
    most: int,
    alpha: float | Mapping[str, float],
    seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    memory: Collection[str] = (),
    cpu: Collection[str] = (),
) -> Verdicts:
    """The suspects of one bench file, each judged at its first decisive look.

    ``session(i, ids)`` runs the ``i``-th fresh pair of processes over ``ids``, the
    suspects not yet kept, and returns its verdicts: a kept suspect's verdict is final,
    so it is not measured again. Pairs are added up to each look of :func:`looks`; at a look,
    every suspect not yet decided is judged on all pairs so far at its ``alpha`` (one
    for all, or one per node id) divided by the number of looks, and kept if decisive,
    futile (the pairs still to come could not decide it), or at the last look,
    whatever it is. The confirmation stops as soon as every
    suspect is kept. Once ``seconds`` (by ``clock``) have passed and the first look is
    in, no further pair starts: the look due is taken on the pairs so far and is the
    last. A suspect in ``memory`` (:func:`memory_only`) is kept at the first look, or
    as soon as a pair reads its peak as not risen, which settles it: once only such
    suspects are left, no further pair starts. A suspect in ``cpu`` (:func:`cpu_only`)
    is kept before the last look only once its CPU per call is decisive too.
    """
    plan = looks(most)
    alphas = alpha if isinstance(alpha, Mapping) else dict.fromkeys(suspects, alpha)
    start = clock()
    runs: list[Verdicts] = []
    kept: dict[str, Row] = {}
    for look in plan:
        spent = False
        # kept suspects are final; the open ones were measured in every pair so far
        left = [n for n in suspects if n not in kept]
        while len(runs) < look and not spent:
            spent = seconds is not None and len(runs) >= plan[0] and clock() - start >= seconds
            if not spent:
                runs.append(session(len(runs), left))
                if _memory_settled(runs, suspects, kept, memory):
                    break
        open_runs = [run.limited(left) for run in runs]
        pooled = {
            a: {row.nodeid: row for row in Verdicts.pool(open_runs, a / len(plan)).rows}
            for a in {alphas[n] for n in suspects}
        }
        found = [pooled[alphas[n]].get(n) for n in suspects]
        measured = [row for row in found if row and row.run and row.run.result]
        can_have = reachable(plan[-1], len(runs), clock() - start, seconds)
        for row in measured:
            if row.nodeid in kept:
                continue
            ends = _decisive(row, cpu) or look == plan[-1] or spent or row.nodeid in memory
            if ends or _stop_if_futile(row, can_have):
                kept[row.nodeid] = row
        if all(row.nodeid in kept for row in measured):
            break
    rows = [kept[n] for n in suspects if n in kept]
    return Verdicts(rows, runs[0].specs, runs[0].seed, [r.run for r in rows if r.run])
