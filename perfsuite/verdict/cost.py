"""What a bench's measured rounds cost, as saved, and how a change in it is judged.

A bench saves its cost under ``extra_info["perfsuite"]["cost"]``::

    {"calls": 30, "round_calls": 1, "cpu_s": 1.92, "wall_s": 0.98,
     "rounds_cpu_s": [0.064, ...], "peak_rss_mb": 41.5, "rss_growth_mb": 3.1,
     "rounds_rss_mb": [512.0, ...], "gpu_peak_mb": null, "warmup_cpu_s": 0.31,
     "warmup_wall_s": 0.2}

``cpu_s`` is user plus system time over the measured rounds, of every thread of the
bench's process and of its child processes; ``wall_s`` is the same rounds' wall time;
``calls`` the calls they made (``round_calls`` a round). ``peak_rss_mb`` is the rise of
resident memory over the whole bench (set-up, warm-up and rounds) above what the
process and its children held when it started. ``rounds_rss_mb`` is the process's
resident memory after each measured round, thinned to at most :data:`MAX_RSS_POINTS`.
``gpu_peak_mb`` is the framework's peak GPU allocation over the bench, ``null`` where
the bench used no GPU. ``memory_threshold`` is the bench's peak-memory threshold (its
``perf`` marker's ``memory_threshold``, else ``--perf-memory-threshold``). Runs saved
before cost was recorded have no ``cost``: they load, and their cost reads as unknown.

CPU per item is judged with the time statistics on the per-round samples; peak memory
against a threshold: a rise of more than ``threshold`` of the baseline's peak and more
than :data:`MEMORY_FLOOR_MB` is a regression. This module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfsuite.errors import PerfsuiteError

#: the ``cost`` key inside ``extra_info["perfsuite"]``
COST_KEY = "cost"
#: the default threshold on peak memory: a rise of more than this fraction is a regression
MEMORY_THRESHOLD = 0.25
#: ... and of more than this many MB: a process's peak moves by tens of MB between runs
#: of unchanged code (what earlier benches warmed, thread pools, the allocator)
MEMORY_FLOOR_MB = 64.0
#: the least median CPU time of a round for CPU per item to be judged: below it, the
#: readings' own cost and resolution would dominate
MIN_ROUND_CPU_S = 0.001
#: the most per-round resident-memory points a bench saves
MAX_RSS_POINTS = 100

_NUMBERS = ("cpu_s", "wall_s")
_OPTIONAL_NUMBERS = (
    "peak_rss_mb",
    "rss_growth_mb",
    "gpu_peak_mb",
    "warmup_cpu_s",
    "warmup_wall_s",
    "memory_threshold",
)
_LISTS = ("rounds_cpu_s", "rounds_rss_mb")
_INTS = ("calls", "round_calls")
KEYS = frozenset({*_NUMBERS, *_OPTIONAL_NUMBERS, *_LISTS, *_INTS})


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Cost:
    """One bench's resource cost (see the module docstring for each field)."""

    calls: int
    round_calls: int
    cpu_s: float
    wall_s: float
    rounds_cpu_s: tuple[float, ...] = ()
    peak_rss_mb: float | None = None
    rss_growth_mb: float | None = None
    rounds_rss_mb: tuple[float, ...] = ()
    gpu_peak_mb: float | None = None
    warmup_cpu_s: float | None = None
    warmup_wall_s: float | None = None
    memory_threshold: float | None = None

    @property
    def cores(self) -> float | None:
        """CPU seconds per wall second over the measured rounds: the cores the bench kept busy."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else None

    def cpu_per_item(self, items_per_call: int | None) -> float | None:
        """CPU seconds per item (per call where a call's items are unknown)."""
        total = self.calls * (items_per_call or 1)
        return self.cpu_s / total if total > 0 else None

    def items_per_cpu_s(self, items_per_call: int | None) -> float | None:
        """Items (calls) per CPU second."""
        per_item = self.cpu_per_item(items_per_call)
        return 1.0 / per_item if per_item else None

    def round_samples(self, items_per_call: int | None) -> list[float]:
        """CPU seconds per item, one sample a measured round: what the time test reads."""
        per_round = self.round_calls * (items_per_call or 1)
        if per_round <= 0:
            return []
        return [cpu / per_round for cpu in self.rounds_cpu_s]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "calls": self.calls,
            "round_calls": self.round_calls,
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "rounds_cpu_s": list(self.rounds_cpu_s),
            "rounds_rss_mb": list(self.rounds_rss_mb),
        }
        for key in _OPTIONAL_NUMBERS:
            out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Cost:
        """Parse a saved ``cost`` object; ``where`` names the file and the bench."""

        def fail(why: str) -> PerfsuiteError:
            return PerfsuiteError(f"{where}: cost {why}")

        if not isinstance(data, dict):
            raise fail(f"must be an object, got {data!r}")
        unknown = sorted(set(data) - KEYS)
        if unknown:
            raise fail(f"has unknown key(s) {', '.join(map(repr, unknown))}")
        for key in _INTS:
            value = data.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise fail(f"{key} must be a non-negative integer, got {value!r}")
        for key in _NUMBERS:
            if not _number(data.get(key)) or data[key] < 0:
                raise fail(f"{key} must be a non-negative number, got {data.get(key)!r}")
        for key in _OPTIONAL_NUMBERS:
            if data.get(key) is not None and not _number(data[key]):
                raise fail(f"{key} must be a number or null, got {data[key]!r}")
        lists: dict[str, tuple[float, ...]] = {}
        for key in _LISTS:
            value = data.get(key, [])
            if not isinstance(value, list) or not all(_number(v) for v in value):
                raise fail(f"{key} must be a list of numbers, got {value!r}")
            lists[key] = tuple(float(v) for v in value)

        def optional(key: str) -> float | None:
            return None if data.get(key) is None else float(data[key])

        return cls(
            calls=data["calls"],
            round_calls=data["round_calls"],
            cpu_s=float(data["cpu_s"]),
            wall_s=float(data["wall_s"]),
            rounds_cpu_s=lists["rounds_cpu_s"],
            peak_rss_mb=optional("peak_rss_mb"),
            rss_growth_mb=optional("rss_growth_mb"),
            rounds_rss_mb=lists["rounds_rss_mb"],
            gpu_peak_mb=optional("gpu_peak_mb"),
            warmup_cpu_s=optional("warmup_cpu_s"),
            warmup_wall_s=optional("warmup_wall_s"),
            memory_threshold=optional("memory_threshold"),
        )


def thin(values: Sequence[float], most: int = MAX_RSS_POINTS) -> list[float]:
    """At most ``most`` of ``values``, evenly spaced, the first and the last kept."""
    if len(values) <= most:
        return list(values)
    step = (len(values) - 1) / (most - 1)
    return [values[round(i * step)] for i in range(most)]


@dataclass(frozen=True)
class MemoryChange:
    """Peak memory in two runs of one bench, judged against a threshold."""

    baseline_mb: float
    current_mb: float
    threshold: float
    floor_mb: float = MEMORY_FLOOR_MB
    pairs: int = 1  # pairs of processes whose median peaks these are (perfsuite ab)
    #: of those pairs, how many read a rise on their own (None: one pair, or not known)
    pairs_rose: int | None = None

    @property
    def change_mb(self) -> float:
        return self.current_mb - self.baseline_mb

    @property
    def median_rose(self) -> bool:
        """Up by more than ``threshold`` of the baseline's peak and more than the floor."""
        allowed = max(self.threshold * max(self.baseline_mb, 0.0), self.floor_mb)
        return self.change_mb > allowed

    @property
    def rose(self) -> bool:
        """:attr:`median_rose`, and, over pairs of processes, a rise in every pair on its
        own: a peak of unchanged code can move by a third between processes, so the
        medians of three pairs can differ by the threshold while the pairs disagree."""
        every = self.pairs_rose is None or self.pairs_rose == self.pairs
        return self.median_rose and every

    def __str__(self) -> str:
        words = " ROSE" if self.rose else ""
        over = f" (median of {self.pairs} pairs)" if self.pairs > 1 else ""
        if self.median_rose and not self.rose:
            over = f" (median of {self.pairs} pairs; rose in {self.pairs_rose} of them)"
        return f"peak {_mb(self.baseline_mb)} -> {_mb(self.current_mb)} MB{over}{words}"


def _mb(value: float) -> str:
    """Megabytes as a row shows them: whole above 10 MB, to 0.1 MB below, so that a rise
    of under 1 MB does not read as 0 -> 1.

    >>> _mb(730.4), _mb(0.44), _mb(0.6), _mb(9.96)
    ('730', '0.4', '0.6', '10')
    """
    return f"{value:.0f}" if round(abs(value), 1) >= 10 else f"{value:.1f}"


def memory_change(
    baseline: Cost | None, current: Cost | None, threshold: float
) -> MemoryChange | None:
    """The peak-memory comparison, where both runs recorded a peak."""
    if baseline is None or current is None:
        return None
    if baseline.peak_rss_mb is None or current.peak_rss_mb is None:
        return None
    return MemoryChange(baseline.peak_rss_mb, current.peak_rss_mb, threshold)


#: the word a cost cell gives a verdict on CPU per item (an upper-case one is a regression)
CPU_WORDS = {"slower": "ROSE", "faster": "fell", "same": "same", "inconclusive": "inconclusive"}

#: resident memory that grew by this much over the rounds is shown beside the peak
GROWTH_SHOWN_MB = 8.0

#: the columns :func:`cost_cells` fills, beside a table's throughput
COST_HEADER = ["cores", "items/cpu-s", "peak-MB"]


def cost_cells(spent: Cost | None, items_per_call: int | None, unit: str) -> list[str]:
    """Cores used, items per CPU second and peak memory, as table cells (``-`` unknown)."""
    if spent is None:
        return ["-", "-", "-"]
    cores = spent.cores
    per_cpu = spent.items_per_cpu_s(items_per_call)
    return [
        "-" if cores is None else f"{cores:.2f}",
        "-" if per_cpu is None else f"{per_cpu:,.4g} {unit if items_per_call else 'calls'}",
        _peak_cell(spent),
    ]


def _peak_cell(spent: Cost) -> str:
    """Peak MB, and how much resident memory grew over the rounds where it grew."""
    if spent.peak_rss_mb is None:
        return "-"
    cell = f"{spent.peak_rss_mb:,.0f}"
    growth = spent.rss_growth_mb
    if growth is not None and growth >= GROWTH_SHOWN_MB:
        cell += f" (+{growth:,.0f} in rounds)"
    return cell
