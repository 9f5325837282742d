"""A bench's history over the saved runs of one machine, its steps, and accepted changes.

:func:`bench_histories` turns runs (oldest first) into one :class:`Series` per bench:
its median call time and items/s in every run comparable with the newest one (the same
machine and stack, the same ``scale`` and ``dataset_hash``), each point with the run's
commit and date. :func:`steps_of` finds its steps: change points of the medians
(:mod:`perfsuite.verdict.changepoint`) at least as large as the bench's threshold (the
one its newest run recorded, from a ``perf`` marker or ini, else the default) and,
exactly, every rise of an exact counter between consecutive points.

A step is a **regression** when the bench got slower by more than its threshold, or
when an exact counter rose. It **fails** ``perfsuite
history`` when it starts at a run saved after the last run the user accepted
(``perfsuite history --accept RUN``, kept per machine in ``perfsuite-accepted.json`` at
the storage root); with nothing accepted, every regression step fails.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from perfsuite.data.fsutil import atomic_write_text
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.changepoint import find_steps
from perfsuite.verdict.commits import short_sha
from perfsuite.verdict.cost import MEMORY_FLOOR_MB, MEMORY_THRESHOLD
from perfsuite.verdict.judge import DEFAULT_THRESHOLD
from perfsuite.verdict.machine import machine_mismatch
from perfsuite.verdict.runs import Bench, Run

ACCEPTED_FILE = "perfsuite-accepted.json"


@dataclass(frozen=True)
class Point:
    """One run's figures for one bench."""

    run: str  # the run's name, e.g. 0007_nightly
    position: int  # the run's place in the storage's order (0: the oldest)
    commit: str | None
    dirty: bool
    date: str | None
    median: float  # seconds per call
    rate: float | None  # items/s at the median
    counters: dict[str, int] = field(default_factory=dict)
    cpu_per_item: float | None = None  # median CPU seconds per item over the rounds
    peak_mb: float | None = None  # peak resident memory over the bench, MB

    @property
    def short_commit(self) -> str:
        if not self.commit:
            return "?"
        return short_sha(self.commit) + ("+dirty" if self.dirty else "")


@dataclass(frozen=True)
class Series:
    """One bench's points over the comparable runs, oldest first."""

    fullname: str
    label: str
    unit: str
    threshold: float
    points: tuple[Point, ...]
    memory_threshold: float = MEMORY_THRESHOLD

    @property
    def medians(self) -> list[float]:
        return [p.median for p in self.points]


@dataclass(frozen=True)
class HistoryStep:
    """A step of one series, starting at ``points[index]``.

    ``change`` and ``ci`` are relative changes of the median call time (``None`` for a
    counter step, whose ``what`` names the counter and its values); ``what`` is
    ``time``, ``cpu/item`` or ``peak memory`` for a step of a series of medians.
    """

    index: int
    before: Point  # the last point before the step
    after: Point  # the first point after it
    regression: bool
    change: float | None = None
    ci: tuple[float, float] | None = None
    what: str = "time"

    @property
    def commits(self) -> str:
        """The commit range the step falls in: ``last before..first after``."""
        return f"{self.before.short_commit}..{self.after.short_commit}"

    def describe(self) -> str:
        if self.change is None or self.ci is None:
            size = self.what
        else:
            low, high = self.ci
            size = f"{self.what} {self.change * 100:+.1f}% [{low * 100:+.1f}%, {high * 100:+.1f}%]"
        return f"{size} at {self.after.run} (commits {self.commits})"


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _point(run: Run, bench: Bench, position: int) -> Point | None:
    median = _median(bench.data) if bench.data else bench.median
    if median is None or not median > 0:
        return None
    commit = run.commit_info.get("id")
    date = run.commit_info.get("time") or run.datetime
    rate = bench.items / median if bench.items else None
    cpu = bench.cpu_samples()
    return Point(
        run=run.name,
        position=position,
        commit=commit if isinstance(commit, str) else None,
        dirty=bool(run.commit_info.get("dirty")),
        date=str(date) if date else None,
        median=median,
        rate=rate,
        counters=bench.counters(),
        cpu_per_item=_median(cpu) if cpu and min(cpu) > 0 else None,
        peak_mb=bench.cost.peak_rss_mb if bench.cost is not None else None,
    )


def _threshold(bench: Bench, default: float) -> float:
    result = bench.result
    return result.threshold if result is not None and result.threshold is not None else default


def _comparable(reference: Bench, bench: Bench) -> bool:
    """The same ``scale`` and dataset (hash) as the series' newest point."""
    old, new = bench.result, reference.result
    if old is None or new is None:
        return old is new
    return (old.scale, old.dataset_hash) == (new.scale, new.dataset_hash)


def bench_series(
    runs: Sequence[Run], fullname: str, default_threshold: float = DEFAULT_THRESHOLD
) -> Series | None:
    """The series of one bench over ``runs`` (oldest first), as seen from its newest run."""
    holding = [(i, run) for i, run in enumerate(runs) if fullname in run.benches]
    if not holding:
        return None
    newest = holding[-1][1]
    reference = newest.benches[fullname]
    points = []
    for position, run in holding:
        bench = run.benches[fullname]
        if run is not newest and (
            machine_mismatch(run, newest) or not _comparable(reference, bench)
        ):
            continue
        point = _point(run, bench, position)
        if point is not None:
            points.append(point)
    return Series(
        fullname=fullname,
        label=reference.label,
        unit=reference.unit,
        threshold=_threshold(reference, default_threshold),
        points=tuple(points),
        memory_threshold=reference.memory_threshold or MEMORY_THRESHOLD,
    )


def bench_histories(
    runs: Sequence[Run], default_threshold: float = DEFAULT_THRESHOLD
) -> list[Series]:
    """Every bench's series; benches of the newest run first, then older ones."""
    names: dict[str, None] = {}
    for run in reversed(runs):
        names.update(dict.fromkeys(run.benches))
    found = [bench_series(runs, name, default_threshold) for name in names]
    return [s for s in found if s is not None and s.points]


def steps_of(series: Series) -> list[HistoryStep]:
    """The series' time steps of at least its threshold and counter rises, oldest first."""
    points = series.points
    steps = []
    for step in find_steps(series.medians, min_change=series.threshold):
        slower = step.up and step.change > series.threshold
        steps.append(
            HistoryStep(
                index=step.index,
                before=points[step.index - 1],
                after=points[step.index],
                regression=slower,
                change=step.change,
                ci=step.ci,
            )
        )
    steps.extend(_cost_steps(series))
    for i in range(1, len(points)):
        old, new = points[i - 1].counters, points[i].counters
        rose = [f"{n} {old[n]} -> {v}" for n, v in new.items() if n in old and v > old[n]]
        if rose:
            steps.append(
                HistoryStep(i, points[i - 1], points[i], True, what="counter " + ", ".join(rose))
            )
    return sorted(steps, key=lambda s: (s.index, s.what))


def _cost_steps(series: Series) -> list[HistoryStep]:
    """Steps of CPU per item (at least the time threshold) and of peak memory (at least
    its threshold and floor), where every point recorded them; rises are regressions."""
    points = series.points
    found = []
    cpu = [p.cpu_per_item for p in points]
    peak = [p.peak_mb for p in points]
    for what, values, least in (
        ("cpu/item", cpu, series.threshold),
        ("peak memory", peak, series.memory_threshold),
    ):
        if any(v is None or not v > 0 for v in values):
            continue
        known = [float(v) for v in values if v is not None]
        for step in find_steps(known, min_change=least):
            up = step.up and step.change > least
            if what == "peak memory":
                up = up and known[step.index] - known[step.index - 1] > MEMORY_FLOOR_MB
            before, after = points[step.index - 1], points[step.index]
            found.append(HistoryStep(step.index, before, after, up, step.change, step.ci, what))
    return found


def failing_steps(steps: Sequence[HistoryStep], accepted: int | None) -> list[HistoryStep]:
    """Regression steps that start at a run after position ``accepted`` (``None``: any)."""
    return [s for s in steps if s.regression and (accepted is None or s.after.position > accepted)]


# -- accepted changes ------------------------------------------------------------------


def accepted_path(root: Path) -> Path:
    return root / ACCEPTED_FILE


def _read_accepted(root: Path) -> dict[str, Any]:
    path = accepted_path(root)
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PerfsuiteError(
            f"{path}: cannot be read ({exc}); delete it and accept the change again"
        ) from None
    if not isinstance(document, dict):
        raise PerfsuiteError(f"{path}: not an object; delete it and accept the change again")
    return document


def accepted_run(root: Path, machine_id: str) -> dict[str, Any] | None:
    """The record of the last run accepted on this machine, or ``None``."""
    entry = _read_accepted(root).get(machine_id)
    return entry if isinstance(entry, dict) and isinstance(entry.get("run"), str) else None


def accepted_position(runs: Sequence[Run], record: dict[str, Any] | None) -> int | None:
    """Where the accepted run lies in ``runs`` (oldest first); ``None``: nothing accepted.

    A run no longer in the storage (pruned) is placed by the moment it was saved, so
    the runs saved after it still count as after it.
    """
    if record is None:
        return None
    for position, run in enumerate(runs):
        if run.name == record["run"]:
            return position
    saved = record.get("datetime")
    if not isinstance(saved, str):
        return -1
    return sum(1 for run in runs if run.datetime is not None and run.datetime <= saved) - 1


def accept(root: Path, machine_id: str, run: Run) -> None:
    """Record ``run`` as this machine's accepted state, atomically."""
    record = {
        "run": run.name,
        "datetime": run.datetime,
        "commit": run.commit_info.get("id"),
        "accepted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    write_accepted(root, machine_id, record)


def write_accepted(root: Path, machine_id: str, record: dict[str, Any]) -> None:
    """Set the accepted record of one machine folder (:func:`accept`'s), atomically."""
    document = _read_accepted(root)
    document[machine_id] = record
    atomic_write_text(accepted_path(root), json.dumps(document, indent=2, sort_keys=True) + "\n")


def find_accept_target(runs: Sequence[Run], spec: str) -> Run:
    """The run ``spec`` names: a run name or its number (``12`` is ``0012``), else a
    commit id prefix (newest)."""
    for run in reversed(runs):
        number = run.name.split("_")[0]
        if run.name == spec or number == spec or run.name.startswith(spec + "_"):
            return run
        if spec.isdigit() and number.isdigit() and int(number) == int(spec):
            return run
    if len(spec) >= 4:
        for run in reversed(runs):
            commit = run.commit_info.get("id")
            if isinstance(commit, str) and commit.startswith(spec.lower()):
                return run
    recent = ", ".join(r.name for r in runs[-5:]) or "none saved"
    raise PerfsuiteError(f"--accept {spec}: no saved run or commit matches (newest runs: {recent})")


def format_point(point: Point, unit: str) -> str:
    rate = f"{point.rate:,.1f} {unit}/s" if point.rate else "-"
    counters = ", ".join(f"{k} {v}" for k, v in point.counters.items())
    date = (point.date or "?")[:19]
    line = f"  {point.run:<28} {date:<19} {point.short_commit:<16} "
    line += f"{point.median * 1000:10.3f} ms  {rate}"
    return line + (f"  ({counters})" if counters else "")
