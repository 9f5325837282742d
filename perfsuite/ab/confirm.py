"""After the first pair of processes: fresh pairs, one sequence per bench file.

A pair of processes can be off as a whole, for its life, which its own interval does
not show, so no verdict rests on the first pair alone (``--confirm`` on). Each file's
fresh pairs of processes follow one plan:

- The first fresh pair is the first pair's mirror (the other side starts first and
  every pair of blocks runs in the other order: :func:`perfsuite.ab.process_pairs.first_side`,
  ``session_seed``). It checks each pass of the first stage (`same`, or bounded under
  twice the threshold: :func:`same_benches`), and measures the file's suspects for the
  first time. A pass stands (``same (second pair of processes +x%)``) unless that pair
  leans beyond the threshold (:func:`perfsuite.ab.rows.suspicious`); then it is a
  suspect from the next pair on, judged one-sided at its kind's rate the way that pair
  leaned. Only a lean makes a suspect of a pass: that pair reads ``--min-pairs`` pairs
  of blocks, too few to rule a regression out on their own.
- Every suspect is judged across its own fresh pairs only, never the pair that made it
  one: chosen for looking slow, it is never pooled in.

A pair of processes costs a start-up and a teardown, so the evidence is looked at after
3, 6, 12, ... pairs (doubling, the last look at ``--confirm N``: :func:`looks`), and a
bench stops at the first look whose interval is decisive: slower, faster or same.

Under ``--suspects leaning`` and ``leaning-slower`` a suspect (it leans slower or faster,
or beyond the threshold) is judged at ``CONFIRM_ALPHA``: a false alarm needs the first
stage to have erred that way too. Under ``--suspects undecided`` (the default at default
scale; the gate's for changed code) every suspect, and each bench the first stage could
not rule a regression out for, is judged at ``PAIRED_ALPHA``: where processes differ by
offsets of tens of percent (a torch bench run eagerly), one pair's lean is no evidence.
The test is one-sided, in the direction the first estimate leaned, except for an
undecided suspect taken whichever way it points (:attr:`Suspects.alphas`).

Each of the ``k`` looks is judged at ``alpha / k`` (Bonferroni's rule): the chance that
any look errs is at most ``alpha``, whatever the dependence between looks.

A look also keeps a suspect whose interval rules out a regression of twice its
threshold (:attr:`perfsuite.ab.rows.Row.bounded`) and whose estimate is within the
threshold: it passes, saying its bound. One whose estimate is beyond it goes on.

A look also stops a suspect that the pairs still to come (up to the last look, or as
many as ``--confirm-seconds`` leaves time for) could neither decide nor bound under
twice its threshold (:func:`perfsuite.verdict.futility.t_futile`), unless most of its
pairs read it beyond the threshold before any is trimmed. It ends ``inconclusive``,
``futile``: stopping without a verdict adds no false alarm.

``--confirm-seconds`` bounds a bench file's confirmation, counted from its first fresh
pair of processes: :mod:`perfsuite.ab.spend` says which suspects its pairs measure. One
it leaves out keeps its first pair's row, saying so; one it ends takes the look due
then, on the pairs so far, as its last, at its ``alpha / k``: the bound costs power,
never false alarms.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from perfsuite.ab.budget import SUSPECT_KINDS
from perfsuite.ab.process_pairs import ProcessPairs, by_file, key
from perfsuite.ab.report import LEFT_OUT
from perfsuite.ab.rows import Row, slower_by, suspicious
from perfsuite.ab.spend import Open, Pace, first_look, first_reads, going_on, unresolvable
from perfsuite.ab.verdicts import Verdicts
from perfsuite.options import Spread
from perfsuite.verdict.futility import reachable, t_futile
from perfsuite.verdict.paired import PAIRED_ALPHA, PairedResult
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.table import pct

#: two-sided error rate of a confirmation's t intervals, shared by its looks: the second
#: of two stages that must both find the bench slower, so a false alarm needs both to err
CONFIRM_ALPHA = 0.05

#: the first look of a confirmation: the fewest pairs of processes a t interval of
#: their medians can be decisive with, at a clear regression
FIRST_LOOK = 3


def looks(most: int) -> list[int]:
    """After how many pairs of processes a confirmation of at most ``most`` looks."""
    if most < 2:
        raise ValueError(f"a confirmation needs at least 2 pairs of processes, got {most}")
    found, k = [], FIRST_LOOK
    while k < most:
        found.append(k)
        k *= 2
    return [*found, most]


def _rate(kind: str) -> float:
    """The error rate a suspect of ``--suspects kind`` is judged at (see the module doc)."""
    return PAIRED_ALPHA if kind == "undecided" else CONFIRM_ALPHA


def _settled(row: Row) -> bool:
    """:attr:`Row.bounded`, with an estimate within the threshold (see the module doc)."""
    result = row.run.result if row.run else None
    return result is not None and result.bounded and slower_by(result) <= result.threshold


def _decisive(row: Row, cpu: Collection[str]) -> bool:
    """Whether a look can keep ``row``: its time is decisive or :func:`_settled`, and so
    is its CPU per call where it is in ``cpu`` (a suspect for its CPU)."""
    if not (row.judged or _settled(row)):
        return False
    return row.nodeid not in cpu or bool(row.run and row.run.cpu and row.run.cpu.decisive)


def _stop_if_futile(row: Row, can_have: int) -> bool:
    """Whether ``row``'s suspect could not be decided in ``can_have`` pairs of processes
    in all; if so, its result is marked ``futile``."""
    run = row.run
    if run is None or run.result is None or can_have <= len(run.sessions):
        return False  # nothing to judge, or at ``can_have`` the budget's own rule ends it
    if not t_futile(run.result, run.sessions, can_have):
        return False
    run.result = replace(run.result, futile=True)
    return True


def _calm(runs: Sequence[Verdicts], nodeid: str) -> bool:
    """Whether a pair of processes in ``runs`` read ``nodeid``'s peak as not risen, so no
    further pair could confirm it (a peak rose only where it rose in every pair:
    :attr:`perfsuite.verdict.cost.MemoryChange.rose`)."""
    return any(
        row.nodeid == nodeid and row.run and row.run.memory and not row.run.memory.rose
        for run in runs
        for row in run.rows
    )


def _look(runs: Sequence[Verdicts], nodeid: str, alpha: float) -> Row | None:
    """``nodeid`` judged across the pairs of processes ``runs`` at ``alpha``, or None
    where one of them did not measure it."""
    own = [run.limited([nodeid]) for run in runs]
    if not all(any(r.run and r.run.result for r in part.rows) for part in own):
        return None
    (row,) = Verdicts.pool(own, alpha).rows
    return row


@dataclass(frozen=True)
class Suspects:
    """The benches fresh pairs of processes measure again, and how each is judged."""

    #: each suspect's two-sided interval level, in order. A confirmation counts only in
    #: the direction the suspect's first estimate leaned (:attr:`Row.suspicion`; a check
    #: the other way is `inconclusive`, :meth:`Verdicts.confirmed`), so its test is
    #: one-sided and its interval the two-sided one at twice its error rate
    #: (:meth:`pick`): the lower bound alone decides `slower`, the upper alone
    #: `faster`, both bounds `same` (two one-sided tests), each claim erring with at most
    #: that rate. One in ``either``, or whose first estimate is exactly 0, keeps the
    #: two-sided interval at its rate.
    alphas: dict[str, float]
    #: suspects for their peak memory alone: one pair of processes saw it rise, and their
    #: time made no suspect. Their confirmation ends at its first look, and only their
    #: peak memory is taken from it (:meth:`Verdicts.confirmed`): the first pair's time
    #: verdict stands.
    memory: frozenset[str] = frozenset()
    #: suspects for their CPU per call (one pair of processes read it slower), not their
    #: time: a look keeps them only once their CPU, judged across the fresh pairs, is
    #: decisive too.
    cpu: frozenset[str] = frozenset()
    #: suspects taken whichever way their fresh pairs point (:meth:`Verdicts.confirmed`):
    #: with ``--suspects undecided``, each :attr:`Row.open_either_way`.
    either: frozenset[str] = frozenset()

    @classmethod
    def pick(cls, verdicts: Verdicts, kind: str) -> Suspects:
        """The benches of ``verdicts`` a confirmation under ``--suspects kind`` measures
        again, in order, each at the kind's error rate (:func:`_rate`): ``leaning`` takes
        :meth:`Row.suspect_of`, ``leaning-slower`` those of them that are decisive or
        lean slower (:func:`perfsuite.ab.rows.suspicious`); ``undecided`` also takes
        :attr:`Row.undecided`. A first pair whose CPU per call or peak memory rose is a
        suspect whatever its time: one pair of processes' layout moves its CPU as it
        moves its time."""
        if kind not in SUSPECT_KINDS:
            raise ValueError(f"unknown kind of suspects {kind!r}")
        alphas: dict[str, float] = {}
        memory, cpu, either = set[str](), set[str](), set[str]()
        for row in verdicts.rows:
            taken = kind == "undecided" and row.undecided
            alpha = _rate(kind) if taken or row.suspect_of(kind) else None
            if alpha is None:
                if not (row.cpu_slower or row.memory_rose):
                    continue
                (cpu if row.cpu_slower else memory).add(row.nodeid)
                alpha = _rate(kind)
            if kind == "undecided" and row.open_either_way:
                either.add(row.nodeid)
            lead = row.suspicion
            one_way = row.nodeid not in either and lead is not None and lead.change != 0
            alphas[row.nodeid] = 2 * alpha if one_way else alpha
        return cls(alphas, frozenset(memory), frozenset(cpu), frozenset(either))


@dataclass(frozen=True)
class FollowUp:
    """What a bench file's fresh pairs of processes made of its first stage."""

    #: each checked pass's reading in the first fresh pair (:func:`rechecked`)
    second: dict[str, PairedResult]
    #: each suspect at the look that kept it (:meth:`Verdicts.confirmed`)
    confirmed: Verdicts
    #: the checks the first fresh pair made suspects
    promoted: Suspects
    #: the suspects the first look left out (:func:`perfsuite.ab.spend.first_look`)
    left_out: tuple[str, ...] = ()


def confirm_in_fresh_pairs(
    session: Callable[[int, list[str], bool], Verdicts],
    suspects: Sequence[str],
    most: int,
    alpha: float | Mapping[str, float],
    seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    memory: Collection[str] = (),
    cpu: Collection[str] = (),
    checks: Sequence[str] = (),
    promote: Callable[[dict[str, PairedResult]], Suspects] | None = None,
    first: tuple[Pace, Mapping[str, tuple[float, float]], Collection[str]] | None = None,
    never: Collection[str] = (),
) -> FollowUp:
    """One bench file's fresh pairs of processes: its checks and its suspects.

    ``session(i, ids, more)`` runs the ``i``-th fresh pair over ``ids`` and returns its
    verdicts; ``more``: whether a next pair may follow (so it can start beside this
    one's teardown). The first fresh pair measures the ``checks`` (first-stage passes,
    none of them a suspect) beside the suspects; ``promote(readings)`` then says which
    checks are suspects after it, each judged from the next pair on.

    Each suspect is judged on its own fresh pairs at the looks of :func:`looks`
    (counted from its first pair), at its ``alpha`` (one for all, or one per node id)
    over the number of looks, and kept once decisive, futile or at its last look (see
    the module doc), with ``seconds`` (by ``clock``) as ``--confirm-seconds``; a kept
    suspect is not measured again, and the pairs stop once none is open. A suspect in
    ``memory`` (:attr:`Suspects.memory`) is kept at its first look, or as soon as a pair
    reads its peak as not risen; one in ``cpu`` (:attr:`Suspects.cpu`) before its last
    look only once its CPU per call is decisive too. ``first``: the pace of the file's
    first pair of processes, how surely it read each suspect slower (two ways:
    :func:`perfsuite.ab.spend.first_reads`), and the suspects it read ``slower``; with
    ``seconds``, the first look measures only the suspects ``first_look`` takes, none of
    those in ``never`` (:func:`perfsuite.ab.spend.unresolvable`).
    """
    plan = looks(most)
    alphas = dict(alpha) if isinstance(alpha, Mapping) else dict.fromkeys(suspects, alpha)
    if set(checks) & set(suspects):
        raise ValueError(f"a check is no suspect: {sorted(set(checks) & set(suspects))}")
    going = list(suspects)  # what the next pair measures
    pace = first[0] if first is not None else Pace()  # consulted only with seconds
    if first is not None and seconds is not None:
        always = {*memory, *cpu, *first[2]}
        going = first_look(going, checks, first[1], pace, seconds, plan, always, never)
    left_out = tuple(n for n in suspects if n not in going)
    own: dict[str, list[Verdicts]] = {n: [] for n in going}  # each suspect's fresh pairs
    graced: str | None = None  # the one suspect taken past the seconds (perfsuite.ab.spend)
    promoted = Suspects({})
    start = clock()
    runs: list[Verdicts] = []
    kept: dict[str, Row] = {}
    second: dict[str, PairedResult] = {}
    while going or checks:
        ids = [*checks, *going]
        more = any(len(own[n]) + 1 < most for n in going)
        before = clock()
        runs.append(session(len(runs), ids, more))
        pace.add(clock() - before, runs[-1], ids)
        for nodeid in going:
            own[nodeid].append(runs[-1])
        if checks:  # the checks' pair is in: their suspects join
            for row in runs[0].limited(checks).rows:
                if row.run is not None and row.run.result is not None:
                    second[row.nodeid] = row.run.result
            promoted = promote(second) if promote and second else promoted
            alphas.update(promoted.alphas)
            own.update({n: [] for n in promoted.alphas})
            going.extend(promoted.alphas)
            memory, cpu = {*memory, *promoted.memory}, {*cpu, *promoted.cpu}
            checks = ()
        elapsed = clock() - start
        spent = seconds is not None and elapsed >= seconds
        spent = spent and all(len(own[n]) >= plan[0] for n in going)
        per = elapsed / len(runs) if elapsed > 0 else 0.0
        at_look: dict[str, Open] = {}  # open after this look (their row kept until the next)
        for nodeid in list(going):
            have = len(own[nodeid])
            calm = nodeid in memory and _calm(own[nodeid], nodeid)
            due = have in plan or have >= most or calm or (spent and nodeid != graced)
            if have == 0 or not due:
                continue
            found = _look(own[nodeid], nodeid, alphas[nodeid] / len(plan))
            if found is None:  # a pair did not measure it: its first-stage row stands
                going.remove(nodeid)
                own.pop(nodeid)
                continue
            left_s = None if seconds is None else per * have + max(0.0, seconds - elapsed)
            can_have = reachable(most, have, per * have, left_s)
            ends = _decisive(found, cpu) or have >= most or nodeid in memory
            ends = ends or nodeid == graced or _stop_if_futile(found, can_have)
            result = found.run.result if found.run is not None else None
            kept[nodeid] = found
            if ends or result is None:
                going.remove(nodeid)
            else:
                at_look[nodeid] = Open(nodeid, result, have, _next_look(plan, have))
        if at_look:
            between = {
                n: _next_look(plan, len(own[n])) - len(own[n]) for n in going if n not in at_look
            }
            left = None if seconds is None else seconds - elapsed
            no_grace = graced is not None or any(kept[n].regressed for n in kept if n not in going)
            on, grace = going_on(list(at_look.values()), between, pace, left, no_grace)
            graced = on[0] if grace else graced
            going = [n for n in going if n not in at_look or n in on]
    rows = [kept[n] for n in own if n in kept]
    specs, seed = (runs[0].specs, runs[0].seed) if runs else ([], 0)
    return FollowUp(second, Verdicts(rows, specs, seed), promoted, left_out)


def _next_look(plan: Sequence[int], have: int) -> int:
    """The pairs of processes at which a suspect with ``have`` has its next look."""
    return min(k for k in plan if k > have)


def same_benches(verdicts: Verdicts) -> list[str]:
    """The first stage's benches that would pass on one pair of processes, in order:
    `same`, or inconclusive with a bound under twice the threshold
    (:attr:`perfsuite.ab.rows.Row.bounded`). What the first fresh pair checks."""
    return [
        row.nodeid
        for row in verdicts.rows
        if row.run is not None
        and (row.verdict is Verdict.SAME or row.bounded)
        and row.run.second is None
    ]


def rechecked(
    verdicts: Verdicts, second: Mapping[str, PairedResult], ids: Collection[str], kind: str
) -> Verdicts:
    """``verdicts`` with each check of ``ids`` carrying what its first fresh pair of
    processes read (``second``), shown in its status, which says when that made it a
    suspect of ``--suspects kind``; a check that pair did not measure keeps its verdict,
    its status saying so."""
    rows = []
    for row in verdicts.rows:
        if row.nodeid not in ids or row.run is None:
            rows.append(row)
            continue
        again = second.get(row.nodeid)
        if again is None:
            rows.append(replace(row, status="the second pair of processes did not measure it"))
            continue
        said = f"second pair of processes {pct(again.change)}"
        said += ", a suspect" if suspicious(again, kind) else ""
        rows.append(replace(row, run=replace(row.run, second=again), status=said))
    return Verdicts(rows, verdicts.specs, verdicts.seed)


def follow_up(
    pairs: ProcessPairs,
    verdicts: Verdicts,
    whole: bool,
    kind: str,
    most: int,
    seconds: float,
    min_pairs: int,
    spreads: Mapping[str, Spread],
) -> Verdicts:
    """``verdicts`` after each bench file's fresh pairs of processes
    (:func:`confirm_in_fresh_pairs`: at most ``most`` pairs a suspect, ``seconds`` a
    file, its first look at the pace of the file's first pair of processes, whose
    lockstep sessions start at ``min_pairs`` pairs of blocks; ``whole``: one pair of
    processes over the whole selection, not one per file; ``kind``: ``--suspects``;
    ``spreads``: ``--spread``, for the first look).

    A first-stage pass (:func:`same_benches`) is a check, never a suspect at once, whatever
    its cost: :meth:`Suspects.pick` judges it again on its first fresh pair's reading
    (:attr:`perfsuite.ab.rows.Row.suspicion`), as the module doc says."""
    checks = same_benches(verdicts)
    others = [row.nodeid for row in verdicts.rows if row.nodeid not in checks]
    first = Suspects.pick(verdicts.limited(others), kind)
    if not checks and not first.alphas:
        return verdicts
    hopeless = unresolvable(verdicts, spreads, most, first.alphas, len(looks(most)))
    plan = ", ".join(str(k) for k in looks(most))
    names = f": {', '.join(first.alphas)}" if first.alphas else ""
    if hopeless:
        names += f"; left out, as {most} could not decide them at their spread across runs: "
        names += ", ".join(hopeless)
    print(
        f"perfsuite ab: fresh pairs of processes: {len(checks)} pass(es) checked in one, "
        f"{len(first.alphas)} suspect(s) in up to {most} each, looked at after {plan} (at "
        f"most {seconds:g} s a file, the suspects its first pair read most surely slower "
        f"first, at least one of those left in){names}",
        flush=True,
    )

    def promote(second: dict[str, PairedResult]) -> Suspects:
        """The checks read in ``second`` that are suspects on that reading."""
        return Suspects.pick(rechecked(verdicts.limited(second), second, second, kind), kind)

    measured = list(dict.fromkeys([*checks, *first.alphas]))
    groups: list[tuple[list[str] | None, list[str]]] = [(None, measured)]
    if not whole:
        groups = [([file], ids) for file, ids in by_file(measured).items()]
    found: list[FollowUp] = []
    for only, ids in groups:
        wall = pairs.seconds.get(key(only, 0))
        file = by_file([row.nodeid for row in verdicts.rows]).get(only[0], []) if only else None
        run = verdicts if file is None else verdicts.limited(file)
        pace = None if wall is None else Pace.of_first_pair(wall, run, min_pairs)
        reads, slower = first_reads(run, spreads)

        def again(i: int, ids: list[str], more: bool, only: list[str] | None = only) -> Verdicts:
            return pairs.session(key(only, 1 + i), ids, key(only, 2 + i) if more else None)

        try:
            found.append(
                confirm_in_fresh_pairs(
                    again,
                    [n for n in first.alphas if n in ids],
                    most,
                    first.alphas,
                    seconds,
                    memory=first.memory,
                    cpu=first.cpu,
                    checks=[n for n in checks if n in ids],
                    promote=promote,
                    first=None if pace is None else (pace, reads, slower),
                    never=hopeless,
                )
            )
        finally:  # a pair started for a look that was not needed
            pairs.drop_ahead()
    second = {n: r for part in found for n, r in part.second.items()}
    verdicts = rechecked(verdicts, second, checks, kind)
    memory = first.memory.union(*(part.promoted.memory for part in found))
    either = first.either.union(*(part.promoted.either for part in found))
    verdicts = verdicts.confirmed([part.confirmed for part in found], memory, either)
    left = {nodeid for part in found for nodeid in part.left_out}
    said = f"{LEFT_OUT}: the file's {seconds:g} s (--confirm-seconds) went to "
    said += "the suspects its first pair read slower"
    noisy = f"{LEFT_OUT}: at its spread across unchanged runs, {most} pairs of processes resolve"
    why = dict.fromkeys(left, said)
    why.update((n, f"{noisy} ±{math.sinh(h):.1%}") for n, h in hopeless.items() if n in left)
    rows = [replace(row, status=why.get(row.nodeid, row.status)) for row in verdicts.rows]
    return Verdicts(rows, verdicts.specs, verdicts.seed)
