"""Judging one bench present in both runs: its time, its throughput, its exact counters,
and its cost: CPU seconds per item by the same rank test and threshold as time, on each
round's CPU time, and peak memory against the bench's memory threshold
(:mod:`perfsuite.verdict.cost`).

Per bench, a different ``scale`` or dataset hash makes the pair "not comparable": it
is listed with the reason and never judged. The threshold is the bench's own (saved
in its result), else the session's default.

Run-to-run noise. The rank test sees only the spread *within* each run; on a shared or
throttling machine whole runs shift by more than that (seen on our 2-core development
VM: the medians of one unchanged bench spread over +-15% across sessions). When the
storage holds at least ``MIN_HISTORY`` earlier comparable runs of a bench, the spread of
their medians from one run to the next sets a floor under the bench's threshold:
``exp(3 sigma) - 1``, ``sigma`` a robust standard deviation of the log medians taken
from the differences of adjacent runs (:func:`noise_band`), so that a step in the
history (a change of code, data or machine between two runs) is one large difference,
which the median passes over, and never reads as noise. A change inside that band is
what this machine does between unchanged runs, so it is never called slower or
faster; the table says when a threshold was widened, and by how much. A quiet,
dedicated runner has a small band and keeps the bench's threshold. The same band of
the earlier runs' peak memory sets a floor under the bench's memory threshold: a
peak that moves by half between unchanged runs (a bench with worker processes) is
not a rise until it moves by more.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfsuite.verdict.cost import (
    MEMORY_THRESHOLD,
    MIN_ROUND_CPU_S,
    MemoryChange,
    memory_change,
)
from perfsuite.verdict.runs import Bench, Run
from perfsuite.verdict.stats import (
    Comparison,
    Verdict,
    compare_aggregates,
    compare_samples,
    within_bound,
)

DEFAULT_THRESHOLD = 0.05
#: earlier comparable runs of a bench needed before their spread widens its threshold
MIN_HISTORY = 5
#: how many robust standard deviations of run-to-run noise a change must exceed
NOISE_SIGMAS = 3.0
#: at most this many of the newest earlier runs are used for the noise band
HISTORY_RUNS = 20
#: per-bench result facts that must match for a pair to be judged at all
COMPARABLE_KEYS: tuple[str, ...] = ("scale", "dataset_hash")


@dataclass(frozen=True)
class CounterChange:
    """An exact counter of one bench: baseline and current values (``None`` if absent)."""

    name: str
    baseline: int | None
    current: int | None

    @property
    def rose(self) -> bool:
        return (
            self.baseline is not None
            and self.current is not None
            and (self.current > self.baseline)
        )

    @property
    def fell(self) -> bool:
        return (
            self.baseline is not None
            and self.current is not None
            and (self.current < self.baseline)
        )

    def __str__(self) -> str:
        def show(value: int | None) -> str:
            return "-" if value is None else str(value)

        return f"{self.name} {show(self.baseline)} -> {show(self.current)}"


@dataclass(frozen=True)
class BenchVerdict:
    """The verdict on one bench present in both runs."""

    fullname: str
    label: str
    baseline: Bench
    current: Bench
    time: Comparison | None  # None when not comparable
    rate_change: float | None  # relative change of the median items/s
    unit: str
    counters: tuple[CounterChange, ...] = ()
    not_comparable: str | None = None
    note: str | None = None  # e.g. the threshold was widened by run-to-run noise
    cpu: Comparison | None = None  # CPU seconds per item, where both runs recorded them
    memory: MemoryChange | None = None  # peak memory, where both runs recorded it
    #: why the gate makes it a time suspect beyond a `slower` verdict (gate only): the
    #: screen left it too noisy, or its code changed
    suspected: str | None = None
    #: why its code changed since the baseline, naming a changed file (gate only)
    changed: str | None = None
    #: the spread of two unchanged runs' log-ratio in the history that judged it
    #: (:func:`pair_spread`; None: too short a history)
    spread: float | None = None

    @property
    def verdict(self) -> Verdict | None:
        return self.time.verdict if self.time is not None else None

    @property
    def counters_rose(self) -> list[CounterChange]:
        return [c for c in self.counters if c.rose]

    confirmation: Confirmed | None = None  # what an A/B said of a screened suspect

    @property
    def too_few_samples(self) -> bool:
        """Not judged: too few raw samples on a side for a test of significance."""
        return self.time is not None and self.time.fallback is not None

    @property
    def judged(self) -> bool:
        """Its time decided by the rank test (``same``, ``slower``, ``faster``), or by
        the A/B that confirmed or cleared it. Exact counters are compared whatever the
        time's verdict, but an unchanged counter does not make a bench judged: its time
        would go unjudged."""
        if self.confirmation is not None and self.confirmation.outcome in (CONFIRMED, CLEARED):
            return True
        decided = self.time is not None and self.time.fallback is None
        return decided and self.verdict is not Verdict.INCONCLUSIVE

    @property
    def bound(self) -> float | None:
        """The largest slowdown the screen's interval of the time change has not ruled
        out (its upper end); None without an interval (fewer than
        :data:`~perfsuite.verdict.stats.MIN_BOUND_SAMPLES` rounds a side, or no raw
        samples)."""
        if self.time is None or self.time.ci is None:
            return None
        return self.time.ci[1]

    @property
    def bounded(self) -> bool:
        """Not judged, yet passing, saying the largest regression not ruled out: the A/B
        that measured it ruled out twice its threshold (``not shown``), or, for a bench
        no A/B measured, the screen's interval did (:attr:`bound`)."""
        if self.confirmation is not None:
            return self.confirmation.outcome == NOT_SHOWN
        if self.suspect or self.not_comparable or self.judged or self.time is None:
            return False
        if self.time.untested and self.time.above_and_past:
            return False  # not tested, and its interval rules nothing out: no pass
        return within_bound(self.bound, self.time.threshold)

    @property
    def too_noisy(self) -> bool:
        """Comparable, not a suspect, neither judged nor :attr:`bounded`: the screen has
        not ruled out a regression of twice its threshold (or could not test it)."""
        if self.suspect or self.not_comparable or self.time is None:
            return False
        return not (self.judged or self.bounded)

    @property
    def cpu_slower(self) -> bool:
        """More CPU seconds per item by the rank test (beyond the threshold)."""
        return self.cpu is not None and self.cpu.verdict is Verdict.SLOWER and not self.cpu.fallback

    @property
    def memory_rose(self) -> bool:
        """Peak memory rose beyond the bench's memory threshold."""
        return self.memory is not None and self.memory.rose

    @property
    def time_suspect(self) -> bool:
        """Slower by the rank test, or marked by the gate (``suspected``): too noisy on
        the screen, or its code changed."""
        slower = self.verdict is Verdict.SLOWER and not self.too_few_samples
        return slower or self.suspected is not None

    @property
    def suspect(self) -> bool:
        """A time suspect, more CPU per item by the rank test, or a peak memory that rose:
        a regression on a screen, a suspect where the command confirms (``--perf-gate``)."""
        return self.time_suspect or self.cpu_slower or self.memory_rose

    @property
    def regressed(self) -> bool:
        """A suspect not cleared by a confirmation, or an exact counter rose."""
        cleared = self.confirmation is not None and not self.confirmation.regressed
        return (self.suspect and not cleared) or bool(self.counters_rose)

    @property
    def unconfirmed(self) -> bool:
        """A suspect whose confirmation could not decide (or could not run)."""
        return self.confirmation is not None and self.confirmation.outcome == UNCONFIRMED


#: outcomes of a suspect's confirmation
CONFIRMED = "confirmed"
CLEARED = "cleared"
MACHINE = "machine"
UNCONFIRMED = "unconfirmed"
NOT_SHOWN = "not shown"


@dataclass(frozen=True)
class Confirmed:
    """What confirming a suspect concluded, and the line that says how.

    ``outcome`` is ``confirmed`` (the A/B found it slower: a regression), ``cleared``
    (the A/B found it not slower), ``machine`` (both runs are of one commit on a clean
    tree, or none of its code or data changed between them: the move is the
    machine's), ``not shown`` (the A/B could not decide, and its estimate is within the
    threshold: no evidence of a regression, which passes) or
    ``unconfirmed`` (no A/B could decide, or its estimate is beyond the threshold;
    ``command`` is the one that would, said once for all the suspects it measures)."""

    outcome: str
    text: str
    command: str = ""
    #: False: not measured, decided with the A/B of a sample of the suspects of the
    #: same code (:func:`perfsuite.verdict.shift.cleared_with`)
    measured: bool = True
    #: True: the A/B readings that gave ``outcome`` are of the suspect's cost alone (its
    #: CPU per call, its peak memory), not of its time
    cost: bool = False

    @property
    def to_confirm(self) -> str | None:
        """``to confirm: COMMAND``, the words that give :attr:`command`; None without one."""
        return f"to confirm: {self.command}" if self.command else None

    @property
    def regressed(self) -> bool:
        """A confirmed suspect regressed; so does an unconfirmed one, until an A/B says
        otherwise (the gate reports it apart, with its own exit status)."""
        return self.outcome in (CONFIRMED, UNCONFIRMED)


def _threshold(
    baseline: Bench, current: Bench, default: float, override: float | None = None
) -> float:
    """``override`` (an explicit command-line threshold), else the recorded one, else default."""
    if override is not None:
        return override
    for bench in (current, baseline):
        if bench.threshold is not None:
            return bench.threshold
    return default


def _comparable_facts(bench: Bench) -> dict[str, str | None]:
    result = bench.result
    if result is None:
        return {}
    return {"scale": result.scale, "dataset_hash": result.dataset_hash}


def _not_comparable(baseline: Bench, current: Bench) -> str | None:
    reasons = []
    old_facts, new_facts = _comparable_facts(baseline), _comparable_facts(current)
    for key in COMPARABLE_KEYS:
        old, new = old_facts.get(key), new_facts.get(key)
        if old is not None and new is not None and old != new:
            reasons.append(f"{key} {old} -> {new}")
    if current.median is None and not current.data:
        reasons.append("current run has no timings")
    elif baseline.median is None and not baseline.data:
        reasons.append("baseline has no timings")
    return "; ".join(reasons) or None


def counter_changes(baseline: Bench | None, current: Bench | None) -> tuple[CounterChange, ...]:
    """Each exact counter either bench recorded, old against new (none of a missing bench)."""
    old = baseline.counters() if baseline is not None else {}
    new = current.counters() if current is not None else {}
    names = list(dict.fromkeys([*old, *new]))
    return tuple(CounterChange(n, old.get(n), new.get(n)) for n in names)


def pair_spread(medians: Sequence[float]) -> float | None:
    """The standard deviation of the log-ratio of two unchanged runs of a bench, or
    ``None`` with fewer than ``MIN_HISTORY`` of ``medians`` (its medians in earlier
    runs, oldest first): 1.4826 x the median of the absolute differences of adjacent log
    medians, a robust standard deviation that a step between two runs (a few large
    differences) leaves as it is, where a spread about the overall median would take the
    step for noise.

    >>> round(pair_spread([1.0, 1.1, 0.9, 1.0, 1.05]), 3)
    0.149
    """
    logs = [math.log(m) for m in medians if m > 0]
    if len(logs) < MIN_HISTORY:
        return None
    return 1.4826 * _median([abs(b - a) for a, b in itertools.pairwise(logs)])


def noise_band(medians: Sequence[float]) -> float | None:
    """The relative change unchanged runs of a bench show: ``exp(3 sigma) - 1``, where
    ``sigma`` is one run's share of :func:`pair_spread` (over sqrt(2): the difference of
    two runs has twice one run's variance); ``None`` where that is.

    >>> round(noise_band([1.0, 1.1, 0.9, 1.0, 1.05]), 3)
    0.371
    >>> noise_band([1.0, 1.01, 0.99, 4.0, 4.04, 3.96]) < 0.1  # a step of 4x is no noise
    True
    """
    spread = pair_spread(medians)
    if spread is None:
        return None
    return math.exp(NOISE_SIGMAS * spread / math.sqrt(2)) - 1


def _comparable(history: Sequence[Run], current: Bench) -> list[Bench]:
    """``current``'s bench in the newest earlier runs it is comparable with, oldest first."""
    found = []
    for run in history[-HISTORY_RUNS:]:
        bench = run.benches.get(current.fullname)
        if bench is not None and _not_comparable(bench, current) is None:
            found.append(bench)
    return found


def history_medians(history: Sequence[Run], current: Bench) -> list[float]:
    """Median times of ``current``'s bench in earlier runs it is comparable with."""
    medians = (_median(b.data) if b.data else b.median for b in _comparable(history, current))
    return [m for m in medians if m is not None and m > 0]


def history_peaks(history: Sequence[Run], current: Bench) -> list[float]:
    """Peak memory (MB) of ``current``'s bench in earlier runs it is comparable with."""
    peaks = (b.cost.peak_rss_mb for b in _comparable(history, current) if b.cost is not None)
    return [p for p in peaks if p is not None and p > 0]


def judge_bench(
    baseline: Bench,
    current: Bench,
    default_threshold: float = DEFAULT_THRESHOLD,
    history: Sequence[float] = (),
    threshold_override: float | None = None,
    peaks: Sequence[float] = (),
) -> BenchVerdict:
    """Compare one bench: rank test on raw samples, else medians; counters exactly.

    ``history`` holds the bench's median times in earlier comparable runs, ``peaks``
    its peak memory there: their spread can widen the time and memory thresholds (see
    the module docstring). ``threshold_override`` replaces the thresholds the runs
    recorded (``perfsuite compare --threshold``).
    """
    counters = counter_changes(baseline, current)
    time_note: str | None = None
    memory_threshold, memory_note = _banded(
        "peak-memory threshold",
        current.memory_threshold or baseline.memory_threshold or MEMORY_THRESHOLD,
        peaks,
    )
    memory = memory_change(baseline.cost, current.cost, memory_threshold)
    if memory is None or memory_threshold * memory.baseline_mb <= memory.floor_mb:
        memory_note = None  # the floor still rules: the band changed nothing
    cpu: Comparison | None = None

    def verdict(
        time: Comparison | None, rate_change: float | None = None, reason: str | None = None
    ) -> BenchVerdict:
        return BenchVerdict(
            fullname=current.fullname,
            label=current.label,
            baseline=baseline,
            current=current,
            time=time,
            rate_change=rate_change,
            unit=current.unit,
            counters=counters,
            not_comparable=reason,
            note="; ".join(n for n in (time_note, memory_note) if n) or None,
            cpu=cpu,
            memory=memory if reason is None else None,
            spread=pair_spread(history),
        )

    reason = _not_comparable(baseline, current)
    if reason is not None:
        return verdict(None, reason=reason)
    threshold, time_note = _banded(
        "threshold", _threshold(baseline, current, default_threshold, threshold_override), history
    )
    try:
        time = _compare_times(baseline, current, threshold)
    except ValueError as exc:  # zero or negative timings: nothing sound to judge
        return verdict(None, reason=str(exc))
    cpu = _compare_cpu(baseline, current, threshold)
    rate_change = None
    old_rate, new_rate = baseline.median_rate(), current.median_rate()
    if baseline.data and current.data and baseline.items and current.items:
        old_rate, new_rate = _median(baseline.rates()), _median(current.rates())
    if old_rate and new_rate:
        rate_change = new_rate / old_rate - 1
    return verdict(time, rate_change)


def _banded(what: str, threshold: float, history: Sequence[float]) -> tuple[float, str | None]:
    """``threshold`` widened to the noise band of ``history`` where that is wider, and the
    note that says so (None where it is not)."""
    band = noise_band(history)
    if band is None or band <= threshold:
        return threshold, None
    shown = f"{band * 100:.3g}" if band < 10 else f"{band * 100:.0f}"
    return band, (
        f"{what} widened from {threshold * 100:g}% to {shown}%: unchanged runs "
        f"of this bench on this machine spread that much ({len(history)} earlier runs)"
    )


def _compare_cpu(baseline: Bench, current: Bench, threshold: float) -> Comparison | None:
    """CPU seconds per item by the rank test, where both runs saved each round's."""
    old, new = baseline.cpu_samples(), current.cpu_samples()
    if not old or not new or min(old) <= 0 or min(new) <= 0:
        return None
    for bench in (baseline, current):
        assert bench.cost is not None
        if _median(list(bench.cost.rounds_cpu_s)) < MIN_ROUND_CPU_S:
            return None  # the readings' own cost and resolution would dominate
    return compare_samples(old, new, threshold)


def _compare_times(baseline: Bench, current: Bench, threshold: float) -> Comparison:
    if baseline.data and current.data:
        more = (
            "raise the rounds (--perf-rounds, or the perf marker's rounds)"
            if current.result is not None
            else "raise the rounds (--benchmark-min-rounds; benchmark.pedantic's rounds=)"
        )
        return compare_samples(baseline.data, current.data, threshold, more=more)
    old = baseline.median if baseline.median is not None else _median(baseline.data)
    new = current.median if current.median is not None else _median(current.data)
    side = "baseline" if not baseline.data else "current run"
    return compare_aggregates(
        old,
        new,
        threshold,
        reason=f"{side} has no raw samples: medians alone are not judged; save runs with "
        "--benchmark-save-data (perfsuite adds it under --perf-gate)",
        n_baseline=len(baseline.data),
        n_current=len(current.data),
    )


def _median(values: tuple[float, ...] | list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
