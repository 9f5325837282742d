"""Screening tonight's run against the history: which benches are suspects.

For each bench of tonight's run (the newest saved run), over its comparable points:

* an exact counter that rose since the previous point is a **regression outright**;
* a peak memory that rose past the bench's memory threshold (and 64 MB) since the
  previous point makes the bench a **suspect**, where its time and CPU did not; the
  noise band of the earlier points' peaks widens that threshold, as it does the time's;
* with at least ``MIN_NIGHTLY_HISTORY`` earlier points, the bench is a **suspect** when a
  slowing step (:mod:`perfsuite.verdict.changepoint`) starts at tonight's point, or when
  tonight's median lies above the band of the recent runs: their median plus
  ``max(threshold, exp(3 sigma) - 1)``, the noise band of
  :func:`perfsuite.verdict.judge.noise_band` over the last ``HISTORY_RUNS`` points;
* with fewer, it is a suspect when it is slower than the previous point by more than its
  threshold (the noise of this machine is not known yet, so every move counts);
* where no time moved, its CPU per item is screened the same way;
* a bench none of these flagged is still a **suspect** when tonight's run could not
  have caught a regression of twice its threshold: its :class:`Bound` (tonight's change
  plus the recent runs' noise band; with fewer runs, the interval of tonight's rounds
  against the previous run's) reaches that far.

Every screened bench has its bound, which the summary lists: ``same`` when the
interval lies within the threshold, else ``no regression above +X%``.

Suspects are not verdicts: ``perfsuite nightly`` confirms them by an interleaved A/B
run of the two commits before it fails (:func:`perfsuite.nightly.command.confirm_tonight`).
The A/B of a suspect starts at the newest run it was screened against whose code is not
tonight's (:func:`base_point`): a slowdown that landed a few nights ago and kept its
commit since is still measured against the code before it. Where every run it was
screened against is tonight's code, or tonight is slower than those of them that are,
its A/B starts at such a run, and the move is the machine's.
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from perfsuite.verdict.changepoint import Step, find_steps
from perfsuite.verdict.commits import Commit, same_code
from perfsuite.verdict.cost import MemoryChange
from perfsuite.verdict.history import Point, Series, bench_histories
from perfsuite.verdict.judge import HISTORY_RUNS, MIN_HISTORY, noise_band
from perfsuite.verdict.runs import Run
from perfsuite.verdict.stats import MIN_BOUND_SAMPLES, compare_samples, within_bound
from perfsuite.verdict.table import bound_text

#: earlier comparable points a bench needs before its own noise band screens it. The
#: band's robust sigma (from adjacent runs) needs MIN_HISTORY points to mean anything:
#: with fewer, one odd night moves it by more than the changes we look for.
MIN_NIGHTLY_HISTORY = MIN_HISTORY
#: a bench's raw rounds in the previous run and tonight's
Rounds = tuple[Sequence[float], Sequence[float]]


@dataclass(frozen=True)
class Suspect:
    """A bench flagged tonight, why, and how much it moved (relative median time)."""

    series: Series
    reason: str
    change: float
    counter: bool = False  # an exact counter rose: a regression without confirmation
    #: the points it was screened against: ``series.points[compared_from:-1]``
    compared_from: int = -2
    metric: str = "time"  # what made it a suspect: time, cpu/item or memory

    @property
    def label(self) -> str:
        return self.series.label

    @property
    def test_name(self) -> str:
        """The name ``pytest -k`` selects the bench by (``test_x[variant]``)."""
        return self.series.fullname.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class Bound:
    """What tonight's screen rules out for one bench: an interval of tonight's change of
    median time. With ``MIN_NIGHTLY_HISTORY`` earlier runs since the bench's last step,
    tonight's change against their median, give or take their noise band
    (:func:`~perfsuite.verdict.judge.noise_band`, three robust sigmas of the run-to-run
    spread: :meth:`of_band`); with fewer, the rank test's interval of tonight's rounds
    against the previous run's, as the gate's screen bounds a bench
    (:func:`~perfsuite.verdict.stats.compare_samples`). The upper end is the largest
    slowdown tonight's run has not ruled out (:attr:`bound`); ``None`` where neither is
    known (fewer runs, and fewer than ``MIN_BOUND_SAMPLES`` saved rounds a side).

    The threshold is the bench's, widened to the noise band where that is wider (as the
    screen's band is), so a bench the screen did not flag has a bound under about twice
    it; one whose change lies just under the band can reach that, and is
    :attr:`too_noisy`: the screen makes it a suspect.

    >>> b = Bound.of_band("x", "t.py::x", 0.05, change=0.01, noise=0.03, runs=8)
    >>> round(b.bound, 4), b.word
    (0.0403, 'same')
    >>> Bound.of_band("x", "t.py::x", 0.05, change=0.04, noise=0.04, runs=8).word
    'no regression above +8.2%'
    >>> Bound.of_band("x", "t.py::x", 0.09, change=0.085, noise=0.09, runs=8).too_noisy
    True
    >>> Bound("x", "t.py::x", 0.05, change=0.02, interval=(-0.01, 0.06), runs=1).word
    'no regression above +6.0%'
    >>> Bound("x", "t.py::x", 0.05, change=0.02, interval=None, runs=2).word
    'no bound: 2 earlier runs (a noise band needs 5) and fewer than 5 saved rounds a side'
    """

    label: str
    fullname: str
    threshold: float  # the bench's, widened to the noise band where that is wider
    change: float  # tonight against the median of the recent runs (or the previous run)
    interval: tuple[float, float] | None  # of that change; None: not known
    runs: int  # the earlier runs tonight was judged against

    @classmethod
    def of_band(
        cls, label: str, fullname: str, threshold: float, change: float, noise: float, runs: int
    ) -> Bound:
        """``change`` give or take the noise band ``noise`` (both relative)."""
        center, width = math.log1p(change), math.log1p(noise)
        interval = (math.expm1(center - width), math.expm1(center + width))
        return cls(label, fullname, threshold, change, interval, runs)

    @property
    def bound(self) -> float | None:
        """The largest slowdown not ruled out: the interval's upper end."""
        return None if self.interval is None else self.interval[1]

    @property
    def judged(self) -> bool:
        """The whole interval lies within the threshold: ``same``."""
        if self.interval is None:
            return False
        low, high = self.interval
        return low >= -self.threshold and high <= self.threshold

    @property
    def too_noisy(self) -> bool:
        """A bound at twice the threshold or more: it could not have caught that."""
        return self.interval is not None and not (
            self.judged or within_bound(self.bound, self.threshold)
        )

    @property
    def word(self) -> str:
        if self.interval is None:
            return (
                f"no bound: {self.runs} earlier run{'s' if self.runs != 1 else ''} "
                f"(a noise band needs {MIN_NIGHTLY_HISTORY}) and fewer than "
                f"{MIN_BOUND_SAMPLES} saved rounds a side"
            )
        return "same" if self.judged else bound_text(self.bound)


def tonight_bound(series: Series, rounds: Rounds = ((), ())) -> Bound:
    """Tonight's :class:`Bound` for ``series`` (its time), judged against the runs
    since its history's last step, as the screen judges it; with fewer than
    ``MIN_NIGHTLY_HISTORY`` of them, by ``rounds``: the previous run's raw rounds of the
    bench and tonight's (:func:`raw_rounds`)."""
    values = series.medians
    _, since = _steps(values)
    recent = _recent(values, since)
    if len(recent) < MIN_NIGHTLY_HISTORY:
        change = _change(values[-1], values[-2])
        before, tonight = rounds
        interval = None
        if min(len(before), len(tonight)) >= MIN_BOUND_SAMPLES:
            with contextlib.suppress(ValueError):  # a round of no time bounds nothing
                interval = compare_samples(before, tonight, series.threshold).ci
        runs = 1 if interval is not None else len(recent)
        return Bound(series.label, series.fullname, series.threshold, change, interval, runs)
    noise = noise_band(recent) or 0.0
    threshold = max(series.threshold, noise)
    change = _change(values[-1], _center(recent))
    return Bound.of_band(series.label, series.fullname, threshold, change, noise, len(recent))


def raw_rounds(runs: Sequence[Run], series: Series) -> Rounds:
    """The raw per-round seconds of ``series``' bench in its previous point's run and in
    tonight's (its last point's), each empty where that run saved none."""
    before, tonight = (runs[p.position].benches[series.fullname] for p in series.points[-2:])
    return before.data, tonight.data


@dataclass(frozen=True)
class Screening:
    """Tonight's screening: the suspects, the risen counters and what was screened."""

    tonight: Run
    previous: Run | None  # the run most benches were screened against
    suspects: list[Suspect]
    counters: list[Suspect]
    screened: int
    short_history: list[str]  # benches screened against the previous run only
    unscreened: list[str] = field(default_factory=list)  # tonight's, with no earlier point
    #: the suspects by where an A/B of them starts, the oldest first: the run of each
    #: one's previous comparable point (a run that skipped a bench, or another
    #: machine's, is no point of its series), so each A/B's range holds its suspects'
    #: own step and no other
    groups: list[tuple[Run, list[Suspect]]] = field(default_factory=list)
    #: every screened bench's bound, in the order screened
    bounds: list[Bound] = field(default_factory=list)

    @property
    def base(self) -> Run | None:
        """Where the A/B of the oldest group starts (else the previous run)."""
        return self.groups[0][0] if self.groups else self.previous


def _change(new: float, old: float) -> float:
    return new / old - 1


def _center(medians: Sequence[float]) -> float:
    logs = sorted(math.log(m) for m in medians)
    mid = len(logs) // 2
    center = logs[mid] if len(logs) % 2 else (logs[mid - 1] + logs[mid]) / 2
    return math.exp(center)


def _steps(values: Sequence[float]) -> tuple[list[Step], int]:
    """The steps of ``values`` (none with fewer than ``MIN_NIGHTLY_HISTORY`` before the
    last), and the index of the first value after the last step before tonight's."""
    earlier = values[:-1]
    steps = find_steps(values) if len(earlier) >= MIN_NIGHTLY_HISTORY else []
    since = max((step.index for step in steps if step.index < len(earlier)), default=0)
    return steps, since


def _recent(values: Sequence[float], since: int) -> list[float]:
    """The earlier values tonight's (the last) is judged against: the newest
    ``HISTORY_RUNS`` since the history's last step."""
    return list(values[:-1][since:][-HISTORY_RUNS:])


def _slower(
    values: Sequence[float], threshold: float, what: str, previous: str
) -> tuple[str, int] | None:
    """Why tonight's value (the last) is a suspect of being slower, and the index of
    the first value it was judged against (the rest up to tonight's follow); or
    ``None``.

    Tonight is judged against the runs since the history's last step (a change of
    level, such as an accepted slowdown), so a level the bench has kept since is not
    read as a move; with fewer than ``MIN_NIGHTLY_HISTORY`` of them, against the
    previous run.
    """
    newest, earlier = values[-1], values[:-1]
    steps, since = _steps(values)
    for step in steps:
        if step.index == len(values) - 1 and step.up and step.change > threshold:
            low, high = step.ci
            return (
                f"a step starts tonight: {what} {step.change * 100:+.1f}% "
                f"[{low * 100:+.1f}%, {high * 100:+.1f}%]"
            ), since
    recent = _recent(values, since)
    if len(recent) < MIN_NIGHTLY_HISTORY:
        change = _change(newest, earlier[-1])
        if change <= threshold:
            return None
        counted = f"{len(recent)} earlier runs{' since its last step' if since else ''}"
        return (
            f"{what} {change * 100:+.1f}% against the previous run {previous} "
            f"(threshold {threshold * 100:g}%; {counted}, fewer than {MIN_NIGHTLY_HISTORY})"
        ), len(earlier) - 1
    band = max(threshold, noise_band(recent) or 0.0)
    change = _change(newest, _center(recent))
    if change <= band:
        return None
    return (
        f"{what} {change * 100:+.1f}% against the median of the last {len(recent)} runs, "
        f"outside their band of {band * 100:.1f}%"
    ), len(earlier) - len(recent)


def _commit(point: Point) -> Commit:
    return Commit.of({"id": point.commit, "dirty": point.dirty})


def _value(point: Point, metric: str) -> float | None:
    return point.cpu_per_item if metric == "cpu/item" else point.median


def base_point(suspect: Suspect) -> Point:
    """The point a suspect's A/B starts at: the newest it was screened against whose
    code is not tonight's. The previous point where none is, or where tonight is slower
    than its threshold beyond the median of those that are: the same code was faster
    before, so the move is the machine's (the newest such point then)."""
    points = suspect.series.points
    tonight = _commit(points[-1])
    window = points[suspect.compared_from : -1] or points[-2:-1]
    same = [p for p in window if same_code(_commit(p), tonight)]
    other = [p for p in window if p not in same]
    if not other or suspect.metric == "memory":
        return points[-2]
    values = [_value(p, suspect.metric) for p in same]
    now = _value(points[-1], suspect.metric)
    known = [v for v in values if v is not None and v > 0]
    if known and now and _change(now, _center(known)) > suspect.series.threshold:
        return same[-1]
    return other[-1]


def _outright(series: Series) -> list[str]:
    """What rose since the previous point and fails without confirmation: exact counters."""
    newest, before = series.points[-1], series.points[-2]
    old = before.counters
    rose = [f"{n} {old[n]} -> {v}" for n, v in newest.counters.items() if n in old and v > old[n]]
    return ["exact counter rose: " + ", ".join(rose)] if rose else []


def _memory_rose(series: Series) -> str | None:
    """Peak memory past the bench's memory threshold since the previous point: a
    suspect, since a process's peak moves between sessions of unchanged code. The
    threshold is at least the noise band of the earlier points' peaks (the last
    ``HISTORY_RUNS``), as the gate's is (:func:`perfsuite.verdict.judge.judge_bench`)."""
    newest, before = series.points[-1], series.points[-2]
    if newest.peak_mb is None or before.peak_mb is None:
        return None
    earlier = [p.peak_mb for p in series.points[:-1][-HISTORY_RUNS:] if p.peak_mb]
    threshold = max(series.memory_threshold, noise_band(earlier) or 0.0)
    memory = MemoryChange(before.peak_mb, newest.peak_mb, threshold)
    return f"{memory} (threshold {threshold * 100:.3g}%)" if memory.rose else None


def screen_series(
    series: Series, bound: Bound | None = None
) -> tuple[Suspect | None, Suspect | None, bool]:
    """(time or CPU suspect, outright regression, screened against the previous run only).
    ``bound`` is the series' :func:`tonight_bound`, where the caller has it."""
    points = series.points
    if len(points) < 2:
        return None, None, True
    change = _change(points[-1].median, points[-2].median)
    outright = _outright(series)
    counter = Suspect(series, "; ".join(outright), change, counter=True) if outright else None
    only_previous = len(points) - 1 < MIN_NIGHTLY_HISTORY
    previous = points[-2].run
    found, metric = _slower(series.medians, series.threshold, "time", previous), "time"
    if found is None:
        cpu = [p.cpu_per_item for p in points]
        if all(c is not None and c > 0 for c in cpu):
            known = [float(c) for c in cpu if c is not None]
            found, metric = _slower(known, series.threshold, "cpu/item", previous), "cpu/item"
    if found is None:
        memory = _memory_rose(series)
        found, metric = (memory, len(points) - 2) if memory else None, "memory"
    if found is None:
        bound = bound or tonight_bound(series)
        if bound.too_noisy:  # tonight could not rule out twice its threshold: the A/B can
            why = f"too noisy tonight: {bound_text(bound.bound)}, twice its threshold or more"
            found, metric = (why, len(points) - 1 - bound.runs), "time"
    if found is None:
        return None, counter, only_previous
    reason, compared_from = found
    return Suspect(series, reason, change, False, compared_from, metric), counter, only_previous


def screen(runs: Sequence[Run]) -> Screening:
    """Screen the newest of ``runs`` (oldest first) against the ones before it."""
    if not runs:
        raise ValueError("no runs to screen")
    tonight = runs[-1]
    suspects: list[Suspect] = []
    counters: list[Suspect] = []
    short: list[str] = []
    unscreened: list[str] = []
    bounds: list[Bound] = []
    bases: dict[str, int] = {}  # each screened bench's previous point, by run index
    index = {run.name: i for i, run in enumerate(runs)}
    screened = 0
    for series in bench_histories(runs):
        if not series.points or series.points[-1].run != tonight.name:
            continue  # not measured tonight
        if len(series.points) < 2:
            unscreened.append(series.label)  # new, renamed, or another machine's before
            continue
        screened += 1
        bounds.append(tonight_bound(series, raw_rounds(runs, series)))
        bases[series.fullname] = index[series.points[-2].run]
        suspect, counter, only_previous = screen_series(series, bounds[-1])
        if suspect is not None:
            suspects.append(suspect)
        if counter is not None:
            counters.append(counter)
        if only_previous:
            short.append(series.label)
    common = Counter(bases.values()).most_common(1)
    previous = runs[common[0][0]] if common else None
    grouped: dict[int, list[Suspect]] = {}
    for suspect in suspects:  # each was screened, so it has a previous point
        grouped.setdefault(index[base_point(suspect).run], []).append(suspect)
    groups = [(runs[i], grouped[i]) for i in sorted(grouped)]
    return Screening(
        tonight, previous, suspects, counters, screened, short, unscreened, groups, bounds
    )
