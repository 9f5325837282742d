"""What the dashboard shows, read from a storage: each machine folder's runs and, per
bench, its history with spread, steps, exact counters and resource figures.

The history and its steps are ``perfsuite history``'s (:mod:`perfsuite.verdict.history`):
the same comparable points, the same change points, the same accepted run. A point's
centre and spread are the median and interquartile range of the bench's per-round
items/s (per-round milliseconds for a bench that declares no items). Resource figures
are the numbers under :data:`RESOURCE_KEYS` in a bench's ``extra_info``, at its top
level, under ``extra_info["perfsuite"]``, or in a mapping one level below that
(``cost``, ``notes``); where a ``cost`` mapping records ``cpu_s`` with ``wall_s`` or
``calls`` instead, ``cores`` is ``cpu_s / wall_s`` and ``cpu_s_per_item`` is ``cpu_s /
(calls * items)``. A bench without them has none.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.changepoint import MIN_POINTS
from perfsuite.verdict.commits import commit_label, day_label
from perfsuite.verdict.history import (
    HistoryStep,
    Series,
    accepted_position,
    accepted_run,
    bench_histories,
    failing_steps,
    steps_of,
)
from perfsuite.verdict.runs import Bench, Run, parse_run
from perfsuite.verdict.storage import Storage, check_storage_root

#: the resource columns plotted where a bench records them, with their axis titles
RESOURCE_KEYS: dict[str, str] = {
    "cpu_s_per_item": "CPU s per item",
    "cores": "cores busy",
    "peak_rss_mb": "peak RSS (MB)",
    "gpu_peak_mb": "GPU peak (MB)",
}


def number(value: float) -> str:
    """A figure for a person: grouped thousands, a few significant digits below them.

    >>> number(455312.7), number(12.345), number(0.0012345)
    ('455,313', '12.35', '0.00123')
    """
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"


@dataclass(frozen=True)
class RunInfo:
    """One saved run as the dashboard names it: machine folder, date, commit."""

    name: str
    machine: str
    saved: str | None  # ISO datetime pytest-benchmark recorded
    commit: str | None
    dirty: bool = False

    @property
    def short_commit(self) -> str:
        return commit_label(self.commit, self.dirty)

    @property
    def moment(self) -> datetime | None:
        try:
            return datetime.fromisoformat(self.saved) if self.saved else None
        except ValueError:
            return None

    @property
    def day(self) -> str:
        """``Nov 25`` (the run's date), else its counter."""
        moment = self.moment
        return day_label(moment) if moment else self.name.split("_")[0]

    @property
    def when(self) -> str:
        moment = self.moment
        return moment.strftime("%Y-%m-%d %H:%M") if moment else "?"

    @property
    def anchor(self) -> str:
        return f"run-{self.machine}-{self.name}"


@dataclass(frozen=True)
class Point:
    """One run's figures for one bench; ``low``/``centre``/``high`` in the plotted unit."""

    run: RunInfo
    median_s: float
    low: float
    centre: float
    high: float
    counters: Mapping[str, int] = field(default_factory=dict)
    resources: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Mark:
    """A step of the history, before ``index`` (the first point of the new level)."""

    index: int
    regression: bool
    accepted: bool
    what: str  # "time", another series of medians, or "counter ..."
    size: str  # "+12.3%", "cpu/item +12.3%" or "counter traces 1 -> 2"
    text: str  # the step, its interval, where it starts and its commit range


@dataclass(frozen=True)
class History:
    """One bench on one machine: its points oldest first, its steps, its verdict."""

    machine: str
    fullname: str
    label: str
    group: str
    unit: str
    rates: bool  # plotted as items/s (else ms per call)
    points: tuple[Point, ...]
    marks: tuple[Mark, ...]
    searched: bool  # enough points for a step search

    @property
    def axis_title(self) -> str:
        better = "higher is better" if self.rates else "lower is better"
        return f"{self.unit}/s ({better})" if self.rates else f"ms per call ({better})"

    @property
    def verdict(self) -> str:
        """``regression``, ``accepted``, ``faster``, ``steady`` or ``too few runs``."""
        if any(m.regression and not m.accepted for m in self.marks):
            return "regression"
        if self.marks:
            newest = self.marks[-1]
            return "accepted" if newest.regression else "faster"
        return "steady" if self.searched else "too few runs"

    @property
    def anchor(self) -> str:
        return "b-" + "".join(c if c.isalnum() else "-" for c in f"{self.machine}-{self.label}")


@dataclass(frozen=True)
class Dashboard:
    """Everything the site shows: the runs per machine folder and every bench's history."""

    root: Path
    runs: dict[str, list[RunInfo]]
    histories: list[History]
    skipped: list[str]  # run files that could not be read

    def groups(self) -> dict[str, list[History]]:
        found: dict[str, list[History]] = {}
        for history in self.histories:
            found.setdefault(history.group, []).append(history)
        return dict(sorted(found.items()))


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def _numbers(source: Any) -> dict[str, float]:
    if not isinstance(source, dict):
        return {}
    return {
        key: float(source[key])
        for key in RESOURCE_KEYS
        if isinstance(source.get(key), int | float) and not isinstance(source.get(key), bool)
    }


def _derived(cost: Any, items: int | None) -> dict[str, float]:
    """``cores`` and ``cpu_s_per_item`` from a ``cost`` mapping's CPU and wall seconds."""
    if not isinstance(cost, dict):
        return {}
    cpu, wall, calls = (_positive(cost.get(k)) for k in ("cpu_s", "wall_s", "calls"))
    found: dict[str, float] = {}
    if cpu is None:
        return found
    if wall is not None:
        found["cores"] = cpu / wall
    if calls is not None:
        found["cpu_s_per_item"] = cpu / (calls * (items or 1))
    return found


def _positive(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


def resources_of(extra_info: Mapping[str, Any], items: int | None = None) -> dict[str, float]:
    """The resource figures a bench recorded (see the module docstring).

    >>> resources_of({"perfsuite": {"cost": {"peak_rss_mb": 812, "cores": 3.5}}})
    {'cores': 3.5, 'peak_rss_mb': 812.0}
    >>> resources_of({"perfsuite": {"cost": {"cpu_s": 2.0, "wall_s": 1.0, "calls": 4}}}, 10)
    {'cores': 2.0, 'cpu_s_per_item': 0.05}
    """
    found: dict[str, float] = {}
    nested = extra_info.get("perfsuite")
    if isinstance(nested, dict):  # the nearer the top, the more it counts
        found.update(_derived(nested.get("cost"), items))
        for value in nested.values():
            found.update(_numbers(value))
        found.update(_numbers(nested))
    found.update(_numbers(dict(extra_info)))
    return dict(sorted(found.items()))


def _point(info: RunInfo, bench: Bench, extra: Mapping[str, Any]) -> Point | None:
    rates = bench.items is not None
    values = bench.rates() if rates else [t * 1000 for t in bench.data if t > 0]
    median_s = statistics.median(bench.data) if bench.data else bench.median
    if not median_s or median_s <= 0:
        return None
    if not values:
        centre = bench.items / median_s if bench.items else median_s * 1000
        values = [centre]
    low, centre, high = _quartiles(values)
    return Point(
        info, median_s, low, centre, high, bench.counters(), resources_of(extra, bench.items)
    )


def _history(
    machine: str,
    runs: Sequence[Run],
    infos: Sequence[RunInfo],
    extras: Sequence[Mapping[str, Mapping[str, Any]]],
    accepted: int | None,
    series: Series,
) -> History:
    points: list[Point] = []
    for sp in series.points:
        run = runs[sp.position]
        bench = run.benches[series.fullname]
        point = _point(infos[sp.position], bench, extras[sp.position].get(series.fullname, {}))
        if point is not None:
            points.append(point)
    steps = steps_of(series)
    failing = failing_steps(steps, accepted)
    marks = tuple(
        Mark(
            index=step.index,
            regression=step.regression,
            accepted=step.regression and step not in failing,
            what=step.what,
            size=_size(step),
            text=_describe(step, infos[step.after.position]),
        )
        for step in steps
    )
    newest = runs[series.points[-1].position].benches[series.fullname]
    return History(
        machine=machine,
        fullname=series.fullname,
        label=series.label,
        group=newest.result.group if newest.result else (newest.group or "ungrouped"),
        unit=series.unit,
        rates=newest.items is not None,
        points=tuple(points),
        marks=marks,
        searched=len(series.points) >= MIN_POINTS,
    )


def _size(step: HistoryStep) -> str:
    """``+12.3%`` for a time step; other steps say what stepped."""
    if step.change is None:
        return step.what
    size = f"{step.change * 100:+.1f}%"
    return size if step.what == "time" else f"{step.what} {size}"


def _describe(step: HistoryStep, after: RunInfo) -> str:
    """``time +14.3% [+11.7%, +16.9%] from Nov 16 (run 0021, commits a..b)``."""
    size = step.what if step.change is None else f"{step.what} {step.change * 100:+.1f}%"
    if step.ci is not None:
        size += f" [{step.ci[0] * 100:+.1f}%, {step.ci[1] * 100:+.1f}%]"
    counter = after.name.split("_")[0]
    return f"{size} from {after.day} (run {counter}, commits {step.commits})"


def _read(path: Path) -> tuple[Run, dict[str, dict[str, Any]]]:
    """One run file: the run, and each bench's raw ``extra_info``."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PerfsuiteError(f"{path}: cannot be read ({exc})") from None
    run = parse_run(document, str(path))
    extras: dict[str, dict[str, Any]] = {}
    for entry in document.get("benchmarks", []):
        extra = entry.get("extra_info")
        extras[entry["fullname"]] = extra if isinstance(extra, dict) else {}
    return run, extras


def _info(run: Run, machine: str) -> RunInfo:
    commit = run.commit_info.get("id")
    return RunInfo(
        name=run.name,
        machine=machine,
        saved=run.datetime,
        commit=commit if isinstance(commit, str) else None,
        dirty=bool(run.commit_info.get("dirty")),
    )


def load_dashboard(storage: Storage) -> Dashboard:
    """Every machine folder's runs in ``storage``, and each bench's history in each.

    Raises :class:`PerfsuiteError` when the storage holds no readable run.
    """
    root = storage.root
    check_storage_root(root)
    by_machine: dict[str, list[Path]] = {}
    for path in storage.runs():
        by_machine.setdefault(path.parent.name, []).append(path)
    runs_of: dict[str, list[RunInfo]] = {}
    histories: list[History] = []
    skipped: list[str] = []
    for machine, paths in sorted(by_machine.items()):
        runs: list[Run] = []
        extras: list[dict[str, dict[str, Any]]] = []
        for path in paths:
            try:
                run, extra = _read(path)
            except PerfsuiteError:
                skipped.append(f"{machine}/{path.name}")
                continue
            runs.append(run)
            extras.append(extra)
        if not runs:
            continue
        infos = [_info(run, machine) for run in runs]
        runs_of[machine] = infos
        accepted = accepted_position(runs, accepted_run(root, machine))
        for series in bench_histories(runs):
            histories.append(_history(machine, runs, infos, extras, accepted, series))
    if not runs_of:
        found = f" ({len(skipped)} unreadable)" if skipped else ""
        raise PerfsuiteError(
            f"{root}: no saved runs{found} to build a dashboard from "
            "(save some with pytest --benchmark-autosave, or pass --storage)"
        )
    histories.sort(key=lambda h: (h.group, h.label, h.machine))
    return Dashboard(root=root, runs=runs_of, histories=histories, skipped=skipped)
