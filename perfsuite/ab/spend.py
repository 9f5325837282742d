"""Where a bench file's confirmation spends its seconds: on the suspects nearest a decision.

Before the first look, the file's first pair of processes sets the pace
(:meth:`Pace.of_first_pair`) and, with the screen's reading, picks the suspects it
measures (:func:`first_reads`, :func:`first_look`), none that its spread across runs
says no pairs could decide (:func:`unresolvable`); the rest are not measured again.
After a look, each suspect still open is ranked by how near its next look would come to
deciding it (:func:`near`). The pairs of processes that follow measure the nearest
suspects that the seconds left can take to their next look together, at the pace so far
(:class:`Pace`: each pair's start-up and teardown, each suspect's alternation); the
others end at the look they had. When the seconds left take no suspect there, the
nearest one still goes on, alone, to its next look, if that look could decide it
(:func:`near`) and no regression fails the A/B yet: once per confirmation, so a file's
confirmation outlasts ``--confirm-seconds`` by at most the first look's suspects taken
whatever and one bench's look.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from perfsuite.ab.budget import SESSION_PAIRS_FACTOR, SESSION_SECONDS
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.rows import slower_by
from perfsuite.ab.verdicts import Verdicts
from perfsuite.options import Spread
from perfsuite.verdict.futility import closeness, t_half_width, t_margin
from perfsuite.verdict.paired import PairedResult
from perfsuite.verdict.stats import BOUND_FACTOR, Verdict
from perfsuite.verdict.trimmed import interval_factor

#: a fresh pair of processes' spread, as a share of its bench's across saved runs: about half
PAIR_SHARE = 0.5


@dataclass
class Pace:
    """What a bench file's fresh pairs of processes took so far."""

    #: per pair: its seconds besides its benches' own (start-up, set-up, teardown)
    overheads: list[float] = field(default_factory=list)
    #: per suspect: its own seconds in each pair that measured it
    own: dict[str, list[float]] = field(default_factory=dict)

    def add(self, seconds: float, found: Verdicts, ids: Collection[str]) -> None:
        """A pair of ``seconds`` over ``ids``, as ``found``: each bench's own seconds are its
        alternation and ``setup`` (a first bench: its warm-up), the rest start-up and teardown."""
        spent = 0.0
        for run in found.runs:
            if run.nodeid in ids:
                own = run.seconds + (run.setup or sum(sum(s) for s in run.warmup.values()))
                self.own.setdefault(run.nodeid, []).append(own)
                spent += own
        self.overheads.append(max(0.0, seconds - spent))

    @classmethod
    def of_first_pair(cls, seconds: float, found: Verdicts, min_pairs: int) -> Pace:
        """The pace a file's fresh pairs are expected to keep, from its first pair of
        processes (``seconds`` over ``found``): that pair's overhead, and each bench's
        own seconds at the pairs of blocks a fresh pair of ``min_pairs`` runs
        (:func:`perfsuite.ab.budget.session_budget`), never more than the first pair ran."""
        pace = cls()
        pace.add(seconds, found, [row.nodeid for row in found.rows])
        for run in found.runs:
            pairs = run.result.pairs if run.result is not None else 0
            if pairs == 0 or run.seconds <= 0 or run.nodeid not in pace.own:
                continue
            per = run.seconds / pairs
            wanted = max(min_pairs, math.ceil(SESSION_SECONDS / per))
            fresh = min(pairs, wanted, SESSION_PAIRS_FACTOR * min_pairs)
            warm_up = pace.own[run.nodeid][0] - run.seconds
            pace.own[run.nodeid] = [per * fresh + warm_up]
        return pace

    def pair(self, ids: Collection[str]) -> float:
        """The seconds a pair over ``ids`` takes, at the pace so far."""
        own = sum(statistics.fmean(self.own.get(n) or [0.0]) for n in ids)
        return (statistics.fmean(self.overheads) if self.overheads else 0.0) + own


@dataclass(frozen=True)
class Open:
    """A suspect still open after a look."""

    nodeid: str
    result: PairedResult
    have: int  # its fresh pairs so far
    next: int  # the pairs its next look is at


def surely_slower(run: BenchRun, spread: float | None = None, fastest: bool = True) -> float:
    """How surely one pair of processes read ``run`` slower, the metric's slower way: the
    log-ratio of its sides' fastest rounds (noise only adds time; ``fastest`` False: its
    median paired log-ratio) over the standard error of its paired log-ratios by their
    median absolute deviation, which one disturbed round does not set (most of them equal:
    their standard deviation; 0 if all are), never more than that log-ratio over ``spread``
    (``--spread``: the bench's spread across unchanged runs), at most 0 within the threshold."""
    from scipy.stats import median_abs_deviation

    ratios = run.ratios
    if len(set(ratios)) < 2:
        return 0.0
    scatter = float(median_abs_deviation(ratios, scale="normal")) or statistics.stdev(ratios)
    fast = math.log(min(map(min, run.b_blocks)) / min(map(min, run.a_blocks)))
    moved = fast if fastest else statistics.median(ratios)  # the first pair's estimate
    moved = -moved if run.result is not None and run.result.higher_is_better else moved
    t = moved / (scatter / math.sqrt(len(ratios)))
    t = t if spread is None else min(t, moved / spread)
    within = moved <= math.log1p(run.threshold)
    return min(t, 0.0) if within else t


def first_reads(
    found: Verdicts, spreads: Mapping[str, Spread]
) -> tuple[dict[str, tuple[float, float]], set[str]]:
    """How surely a file's first pair of processes read each bench of ``found`` slower
    (:func:`surely_slower` by the fastest rounds and by the estimate, over its ``spreads``'
    spread), no surer than the screen's reading over it (a regression is in both, an
    offset between processes in one pair only), and those it read ``slower`` (to confirm)."""
    reads = {}
    for run in (r for r in found.runs if r.result):
        spread, screen = spreads.get(run.nodeid, (None, None))
        most = math.inf if spread is None or screen is None else screen / spread
        read = surely_slower(run, spread), surely_slower(run, spread, False)
        reads[run.nodeid] = (min(read[0], most), min(read[1], most))
    return reads, {r.nodeid for r in found.rows if r.verdict is Verdict.SLOWER}


def unresolvable(
    found: Verdicts, spreads: Mapping[str, Spread], most: int, alphas: Mapping[str, float], k: int
) -> dict[str, float]:
    """The suspects (``alphas``: each one's level over its ``k`` looks) a file's first pair
    of processes ``found`` left undecided, with no cost or counter risen, that ``most``
    fresh pairs could not decide at ``PAIR_SHARE`` of their ``spreads`` across unchanged
    runs (``--spread``), each with the half-width (in log-ratio) those pairs would give:
    narrowed by the futility margin of ``most``
    (:func:`perfsuite.verdict.futility.t_margin`), it is too wide to clear 0 around the
    first pair's estimate, or to bound a regression of ``BOUND_FACTOR`` times the
    threshold around no change."""
    halves = {}
    for row in found.rows:
        spread, result = spreads.get(row.nodeid, (None,))[0], row.run.result if row.run else None
        if spread is None or result is None or row.nodeid not in alphas:
            continue
        if result.decisive or row.regressed:  # only fresh pairs can confirm a regression
            continue
        half = PAIR_SHARE * spread * interval_factor(most, alphas[row.nodeid] / k)
        bound = BOUND_FACTOR * result.threshold
        bound = -math.log1p(-bound) if result.higher_is_better else math.log1p(bound)
        if half * t_margin(most) > max(abs(math.log1p(result.change)), bound):
            halves[row.nodeid] = half
    return halves


def first_look(
    suspects: Sequence[str],
    checks: Sequence[str],
    first: Mapping[str, tuple[float, float]],
    pace: Pace,
    seconds: float,
    plan: Sequence[int],
    always: Collection[str] = (),
    never: Collection[str] = (),
) -> list[str]:
    """Which of ``suspects`` a file's first look measures, in their order: those in
    ``always`` (for their CPU or peak memory, or read ``slower``: :func:`first_reads`);
    of the others not in ``never`` (:func:`unresolvable`), ranked by how surely their
    ``first`` pair read them slower by the fastest rounds (unread last), the first and
    the one read most surely slower by its estimate where that is beyond its threshold,
    whatever, and each other while the first look's pairs over those taken so far (the
    first pair with the ``checks`` too) and the next look's over the first keep within
    ``seconds`` at ``pace`` (looks: ``plan``)."""
    ranked = sorted(suspects, key=lambda n: (n in first, first.get(n, (0, 0))[0]), reverse=True)
    ranked = [n for n in ranked if n in always or n not in never]
    others = [n for n in ranked if n not in always]
    top = max(others, key=lambda n: first.get(n, (0, 0))[1], default="")
    hedge = top if first.get(top, (0, 0))[1] > 0 else None
    then = (plan[1] - plan[0]) * pace.pair(ranked[:1]) if len(plan) > 1 else 0.0

    def cost(ids: list[str]) -> float:
        return pace.pair([*checks, *ids]) + (plan[0] - 1) * pace.pair(ids) + then

    chosen = [nodeid for nodeid in suspects if nodeid in always]
    for i, nodeid in enumerate(others):
        if i == 0 or nodeid == hedge or cost([*chosen, nodeid]) <= seconds:
            chosen.append(nodeid)
    return [nodeid for nodeid in suspects if nodeid in chosen]


def near(suspect: Open) -> float:
    """How near ``suspect``'s next look comes to a decision
    (:func:`perfsuite.verdict.futility.closeness`): its t interval projected there and
    narrowed by :func:`~perfsuite.verdict.futility.t_margin`, as futility projects it.
    1 or more: that look could decide it, so futility would not stop it."""
    half = t_half_width(suspect.result, suspect.have, suspect.next) * t_margin(suspect.have)
    return closeness(suspect.result, half)


def nearest_first(suspects: Sequence[Open]) -> list[Open]:
    """``suspects`` by how near their next look comes to a decision (:func:`near`), a
    regression first: one whose estimate is slower by more than its threshold and
    whose next look could decide it. A regression decides the A/B whatever
    the other benches read; a bound missed leaves one bench unjudged."""

    def rank(suspect: Open) -> tuple[bool, float]:
        score = near(suspect)
        return slower_by(suspect.result) > suspect.result.threshold and score >= 1, score

    return sorted(suspects, key=rank, reverse=True)


def going_on(
    suspects: Sequence[Open],
    going: Mapping[str, int],
    pace: Pace,
    left: float | None,
    no_grace: bool,
) -> tuple[list[str], bool]:
    """Which of ``suspects`` (at a look, still open) the next pairs measure, and whether
    the grace is taken (see the module doc). ``going``: the suspects between looks,
    which go on whatever, with the pairs each still needs to its next look; ``left``:
    the seconds left (None: no bound, every suspect goes on); ``no_grace``: whether the
    grace is off (taken before, or a regression decided: the A/B fails whatever)."""
    if left is None:
        return [s.nodeid for s in suspects], False
    ranked = nearest_first(suspects)
    chosen: list[Open] = []
    for suspect in ranked:
        trial = [*chosen, suspect]
        pairs = max([*(s.next - s.have for s in trial), *going.values()])
        if pairs * pace.pair([*going, *(s.nodeid for s in trial)]) > left:
            break
        chosen = trial
    if chosen or going or no_grace or not ranked:
        return [s.nodeid for s in chosen], False
    top = ranked[0]
    return ([top.nodeid], True) if near(top) >= 1 else ([], False)
