"""The report's PNG plots: per-group throughput, and each bench's history with its cost.

matplotlib is imported only here, inside the plotting functions, with the Agg canvas
(no display needed, no global pyplot state). A history plot puts runs on x by date and
short commit, marks the current run and the steps ``perfsuite history`` finds (red for
a regression) and, where the runs recorded a cost, shows CPU per item and peak memory
in a panel below.
"""

from __future__ import annotations

import contextlib
import io
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from perfsuite.verdict.commits import commit_label, day_label
from perfsuite.verdict.runs import Bench, Run


def quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    import numpy as np

    q1, q2, q3 = np.quantile(np.asarray(values, dtype=float), [0.25, 0.5, 0.75])
    return float(q1), float(q2), float(q3)


def variant_of(bench: Bench) -> str:
    """The bench's variant, else its name."""
    return bench.result.variant if bench.result is not None else bench.name


def is_baseline(bench: Bench) -> bool:
    return bench.result is not None and bench.result.baseline


def is_roofline(bench: Bench) -> bool:
    return bench.result is not None and bench.result.roofline


def new_figure(width: float, height: float) -> Any:
    """A figure of that size in inches, drawn off-screen, its labels fitted inside."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # constrained: labels, titles and legends are fitted inside the figure, none clipped
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def png_of(figure: Any) -> bytes:
    """``figure`` as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def throughput_png(group: str, benches: Sequence[Bench]) -> bytes | None:
    """Box plot of each variant's per-round throughput (seconds when no items are declared)."""
    use_rates = all(b.items for b in benches)
    series = [(b, b.rates() if use_rates else list(b.data)) for b in benches]
    series = [(b, values) for b, values in series if values]
    if not series:
        return None
    figure = new_figure(max(5.0, 1.2 * len(series) + 2), 4.0)
    axes = figure.add_subplot(1, 1, 1)
    labels = [variant_of(b) + ("\n(baseline)" if is_baseline(b) else "") for b, _ in series]
    boxes = axes.boxplot([values for _, values in series], patch_artist=True)
    axes.set_xticks(range(1, len(labels) + 1), labels, rotation=20, ha="right")
    for patch, (bench, _) in zip(boxes["boxes"], series, strict=True):
        patch.set_facecolor("#f4a261" if is_baseline(bench) else "#8ecae6")
    unit = series[0][0].unit
    axes.set_ylabel(
        f"{unit}/s per round (higher is better)"
        if use_rates
        else "seconds per call (lower is better)"
    )
    axes.set_title(f"{group}: {'throughput' if use_rates else 'time per call'} by variant")
    axes.grid(axis="y", alpha=0.3)
    return png_of(figure)


def memory_png(group: str, benches: Sequence[Bench]) -> bytes | None:
    """Each variant's resident memory (MB) over its measured rounds, where recorded."""
    series = [
        (b, list(b.cost.rounds_rss_mb))
        for b in benches
        if b.cost is not None and len(b.cost.rounds_rss_mb) >= 2
    ]
    if not series:
        return None
    figure = new_figure(7.0, 4.0)
    axes = figure.add_subplot(1, 1, 1)
    for bench, values in series:
        spread = [i / (len(values) - 1) for i in range(len(values))]
        axes.plot(spread, values, label=variant_of(bench))
    axes.set_xlabel("measured rounds (first to last)")
    axes.set_ylabel("resident memory, MB")
    axes.set_title(f"{group}: memory over the rounds")
    axes.legend(fontsize=7, loc="best")
    axes.grid(alpha=0.3)
    return png_of(figure)


#: the most x tick labels a history plot shows
HISTORY_TICKS = 12


def run_label(run: Run) -> str:
    """A run's name on an axis, as the dashboard names it: its date (``Nov 25``) over its
    8-character commit (``+`` when saved from uncommitted changes), else its counter.

    >>> from perfsuite.verdict.runs import Run
    >>> run_label(Run("0007_eb1eee44f501ef5545_20261125_060117.json", {},
    ...               commit_info={"id": "eb1eee44f501ef5545", "dirty": True},
    ...               datetime="2026-11-25T06:01:17"))
    'Nov 25\\neb1eee44+'
    >>> run_label(Run("0007_nightly.json", {}))
    '0007'
    """
    parts = []
    with contextlib.suppress(ValueError):
        parts.append(day_label(datetime.fromisoformat(run.datetime or "")))
    commit = run.commit_info.get("id")
    if isinstance(commit, str) and commit:
        parts.append(commit_label(commit, run.commit_info.get("dirty") is True))
    return "\n".join(parts) or run.name.split("_")[0][:20]


def _one_line(label: str) -> str:
    return label.replace("\n", " ")


def history_png(fullname: str, history: Sequence[Run], current: Run) -> bytes | None:
    """One bench's median (with IQR error bars) across ``history``; ``current`` is marked."""
    figure = history_figure(fullname, history, current)
    return None if figure is None else png_of(figure)


def history_figure(fullname: str, history: Sequence[Run], current: Run) -> Any:
    """:func:`history_png`'s figure: runs on x by date and short commit (at most
    ``HISTORY_TICKS`` labels), ``None`` when the bench has no figures."""
    points: list[tuple[str, float, float, float, bool]] = []
    labels: list[str] = []
    costs: list[tuple[float | None, float | None]] = []  # CPU s per item, peak MB
    use_rates = bool(current.benches[fullname].items)
    for run in history:
        bench = run.benches.get(fullname)
        if bench is None:
            continue
        values = bench.rates() if use_rates else list(bench.data)
        if values:
            q1, q2, q3 = quantiles(values)
        else:
            centre = bench.median_rate() if use_rates else bench.median
            if not centre:
                continue
            q1 = q2 = q3 = centre
        points.append((run.name, q1, q2, q3, run is current))
        labels.append(run_label(run))
        cpu = bench.cpu_samples()
        peak = bench.cost.peak_rss_mb if bench.cost is not None else None
        costs.append((statistics.median(cpu) if cpu else None, peak))
    if not points:
        return None
    with_cost = any(c != (None, None) for c in costs)
    figure = new_figure(min(12.0, max(6.0, 0.25 * len(points) + 4)), 6.5 if with_cost else 4.0)
    axes = figure.add_subplot(2 if with_cost else 1, 1, 1)
    xs = list(range(len(points)))
    medians = [p[2] for p in points]
    low = [p[2] - p[1] for p in points]
    high = [p[3] - p[2] for p in points]
    axes.errorbar(
        xs,
        medians,
        yerr=[low, high],
        fmt="o-",
        color="#457b9d",
        capsize=3,
        label="saved runs (median, IQR)",
    )
    marked = [i for i, p in enumerate(points) if p[4]]
    if marked:
        axes.plot(
            [xs[i] for i in marked],
            [medians[i] for i in marked],
            marker="*",
            markersize=16,
            linestyle="none",
            color="#e63946",
            label="current run",
        )
    _mark_steps(axes, fullname, history, [p[0] for p in points], labels)
    shown = sorted(xs[::-1][:: -(-len(xs) // HISTORY_TICKS)])  # the newest run among them
    unit = current.benches[fullname].unit
    axes.set_ylabel(
        f"{unit}/s (higher is better)" if use_rates else "seconds per call (lower is better)"
    )
    axes.set_title(current.benches[fullname].label, fontsize=9)
    axes.legend(fontsize=7, loc="best")
    axes.grid(alpha=0.3)
    if with_cost:
        axes.tick_params(labelbottom=False)
        axes = _cost_panel(figure.add_subplot(2, 1, 2, sharex=axes), xs, costs, unit)
    axes.set_xticks(shown, [labels[i] for i in shown], fontsize=7)
    axes.set_xlabel("run (date, commit)", fontsize=8)
    return figure


def _cost_panel(
    axes: Any, xs: Sequence[int], costs: Sequence[tuple[float | None, float | None]], unit: str
) -> Any:
    """CPU milliseconds per item (left axis) and peak MB (right axis) under the time plot."""
    cpu = [(x, c[0] * 1000) for x, c in zip(xs, costs, strict=True) if c[0] is not None]
    peak = [(x, c[1]) for x, c in zip(xs, costs, strict=True) if c[1] is not None]
    if cpu:
        axes.plot(*zip(*cpu, strict=True), "o-", color="#2a9d8f", label="CPU per item")
    axes.set_ylabel(f"CPU ms per {unit.rstrip('s') or 'item'}", fontsize=8, color="#2a9d8f")
    axes.grid(alpha=0.3)
    if peak:
        right = axes.twinx()
        right.plot(*zip(*peak, strict=True), "s--", color="#e76f51", label="peak memory")
        right.set_ylabel("peak MB", fontsize=8, color="#e76f51")
    return axes


def _mark_steps(
    axes: Any,
    fullname: str,
    history: Sequence[Run],
    names: list[str],
    labels: Sequence[str] | None = None,
) -> None:
    """A vertical line before each run where the bench's history steps (perfsuite history),
    named in the legend by ``labels`` (the run names where not given)."""
    from perfsuite.verdict.history import bench_series, steps_of

    series = bench_series(history, fullname)
    if series is None:
        return
    for step in steps_of(series):
        if step.after.run not in names:
            continue
        size = f"{step.what} {step.change * 100:+.0f}%" if step.change is not None else step.what
        where = names.index(step.after.run)
        axes.axvline(
            where - 0.5,
            color="#e63946" if step.regression else "#8d99ae",
            linestyle="--",
            label=f"step {size} at {_one_line(labels[where]) if labels else step.after.run}",
        )
