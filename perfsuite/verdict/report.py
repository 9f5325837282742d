"""Reports: a Markdown summary (fit for ``$GITHUB_STEP_SUMMARY``) and PNG plots.

``write_report(out, current, comparison, history)`` writes into ``out``:

* ``summary.md``: the verdict table (when a baseline was compared), then per group
  each variant's median items/s, its spread and its speedup over the group's baseline;
* ``throughput-<group>.png``: per group, each variant's per-round items/s as a box plot
  (seconds per call for benches that declare no items);
* ``history/<bench>.png``: per bench, its median items/s (or time) across the saved
  runs, with the interquartile range as error bars, the current run marked, and a
  dashed line where ``perfsuite history`` finds a step (red for a regression).

matplotlib is imported only here, inside the plotting functions, with the Agg canvas
(no display needed, no global pyplot state). The folder is written as a unit: into a
temporary folder swapped into place.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfsuite.data.fsutil import atomic_write_bytes, atomic_write_text, replace_dir
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.cost import COST_HEADER, cost_cells

if TYPE_CHECKING:
    from perfsuite.verdict.compare import RunComparison
    from perfsuite.verdict.runs import Bench, Run

SUMMARY_NAME = "summary.md"


def _quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    import numpy as np

    q1, q2, q3 = np.quantile(np.asarray(values, dtype=float), [0.25, 0.5, 0.75])
    return float(q1), float(q2), float(q3)


def _fmt_rate(rate: float) -> str:
    return f"{rate:,.1f}" if rate < 1000 else f"{rate:,.0f}"


def safe_name(text: str, key: str | None = None) -> str:
    """A file-name-safe stem for ``text``, made unique by a short hash of ``key`` (or text)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_.")[:80] or "bench"
    digest = hashlib.sha1((key or text).encode("utf-8")).hexdigest()[:8]
    return f"{stem}-{digest}"


def _group_of(bench: Bench) -> str:
    if bench.result is not None:
        return bench.result.group
    return bench.group or "ungrouped"


def _variant_of(bench: Bench) -> str:
    return bench.result.variant if bench.result is not None else bench.name


def _is_baseline(bench: Bench) -> bool:
    return bench.result is not None and bench.result.baseline


def _is_roofline(bench: Bench) -> bool:
    return bench.result is not None and bench.result.roofline


def groups(run: Run) -> dict[str, list[Bench]]:
    """The run's benches by group, in first-seen order."""
    found: dict[str, list[Bench]] = {}
    for bench in run.benches.values():
        found.setdefault(_group_of(bench), []).append(bench)
    return found


def group_rows(benches: Sequence[Bench]) -> list[list[str]]:
    """variant, median items/s, spread (IQR of per-round items/s), speedup, rounds."""
    baseline_rate = next((b.median_rate() for b in benches if _is_baseline(b)), None)
    rows = []
    for bench in benches:
        rate = bench.median_rate()
        rates = bench.rates()
        tag = (
            " (baseline)" if _is_baseline(bench) else (" (roofline)" if _is_roofline(bench) else "")
        )
        spread = "-"
        if len(rates) >= 2:
            q1, _, q3 = _quantiles(rates)
            spread = f"{_fmt_rate(q1)} - {_fmt_rate(q3)}"
        speedup = f"{rate / baseline_rate:.2f}x" if rate and baseline_rate else "-"
        rows.append(
            [
                _variant_of(bench) + tag,
                f"{_fmt_rate(rate)} {bench.unit}/s"
                if rate
                else (f"{bench.median * 1000:.3f} ms/call" if bench.median else "-"),
                spread,
                *cost_cells(bench.cost, bench.items, bench.unit),
                speedup,
                str(len(bench.data)) if bench.data else "-",
            ]
        )
    return rows


GROUP_HEADER = [
    "variant",
    "median throughput",
    "IQR of per-round throughput",
    *COST_HEADER,
    "speedup over baseline",
    "rounds",
]


def _machine_line(run: Run) -> str:
    facts = run.facts
    if not facts:
        return ""
    parts = [f"{facts.get('cpu_model', '?')}, {facts.get('cpu_count', '?')} CPUs"]
    if facts.get("gpu_name"):
        parts.append(f"{facts.get('gpu_count', 1)}x {facts['gpu_name']}")
    versions = facts.get("versions") or {}
    stack = [f"{k} {v}" for k, v in versions.items() if v and k != "perfsuite"]
    if stack:
        parts.append(", ".join(stack))
    return "Machine: " + "; ".join(parts) + "."


def summary_markdown(
    current: Run,
    comparison: RunComparison | None,
    plots: Sequence[Path],
    out: Path,
    notes: Sequence[str] = (),
) -> str:
    """The text of ``summary.md``."""
    from perfsuite.verdict.table import markdown_lines, markdown_table

    lines = ["# perfsuite report", ""]
    stamp = f" ({current.datetime})" if current.datetime else ""
    lines.append(f"Run: `{current.source}`{stamp}, {len(current.benches)} benches.")
    machine = _machine_line(current)
    if machine:
        lines.append(machine)
    lines.append("")
    lines.extend(["## Verdict", ""])
    lines.extend(f"> {note}" for note in notes)
    if notes:
        lines.append("")
    if comparison is not None:
        lines.extend(markdown_lines(comparison))
    else:
        lines.append("No baseline was compared.")
    lines.extend(["", "## Throughput by group", ""])
    for group, benches in groups(current).items():
        lines.extend([f"### {group}", ""])
        lines.extend(markdown_table(group_rows(benches), GROUP_HEADER))
        lines.append("")
    if plots:
        lines.extend(["## Plots", ""])
        lines.extend(f"- `{p.relative_to(out)}`" for p in plots)
        lines.append("")
    return "\n".join(lines)


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # constrained: labels, titles and legends are fitted inside the figure, none clipped
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png(figure: Any) -> bytes:
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
    figure = _figure(max(5.0, 1.2 * len(series) + 2), 4.0)
    axes = figure.add_subplot(1, 1, 1)
    labels = [_variant_of(b) + ("\n(baseline)" if _is_baseline(b) else "") for b, _ in series]
    boxes = axes.boxplot([values for _, values in series], patch_artist=True)
    axes.set_xticks(range(1, len(labels) + 1), labels, rotation=20, ha="right")
    for patch, (bench, _) in zip(boxes["boxes"], series, strict=True):
        patch.set_facecolor("#f4a261" if _is_baseline(bench) else "#8ecae6")
    unit = series[0][0].unit
    axes.set_ylabel(
        f"{unit}/s per round (higher is better)"
        if use_rates
        else "seconds per call (lower is better)"
    )
    axes.set_title(f"{group}: throughput by variant")
    axes.grid(axis="y", alpha=0.3)
    return _png(figure)


#: the most x tick labels a history plot shows
HISTORY_TICKS = 12


def run_label(run: Run) -> str:
    """A run's name on an axis: its date and short commit, else its counter.

    >>> from perfsuite.verdict.runs import Run
    >>> run_label(Run("0007_eb1eee44f501ef5545_20261125_060117.json", {},
    ...               commit_info={"id": "eb1eee44f501ef5545"}, datetime="2026-11-25T06:01:17"))
    '11-25 eb1eee4'
    >>> run_label(Run("0007_nightly.json", {}))
    '0007'
    """
    parts = []
    stamp = run.datetime or ""
    if re.match(r"\d{4}-\d{2}-\d{2}", stamp):  # ISO, as pytest-benchmark saves it
        parts.append(stamp[5:10])
    commit = run.commit_info.get("id")
    if isinstance(commit, str) and commit:
        parts.append(commit[:7])
    return " ".join(parts) or run.name.split("_")[0][:20]


def history_png(fullname: str, history: Sequence[Run], current: Run) -> bytes | None:
    """One bench's median (with IQR error bars) across ``history``; ``current`` is marked."""
    figure = history_figure(fullname, history, current)
    return None if figure is None else _png(figure)


def history_figure(fullname: str, history: Sequence[Run], current: Run) -> Any:
    """:func:`history_png`'s figure: runs on x by date and short commit (at most
    ``HISTORY_TICKS`` labels), ``None`` when the bench has no figures."""
    points: list[tuple[str, float, float, float, bool]] = []
    labels: list[str] = []
    use_rates = bool(current.benches[fullname].items)
    for run in history:
        bench = run.benches.get(fullname)
        if bench is None:
            continue
        values = bench.rates() if use_rates else list(bench.data)
        if values:
            q1, q2, q3 = _quantiles(values)
        else:
            centre = bench.median_rate() if use_rates else bench.median
            if not centre:
                continue
            q1 = q2 = q3 = centre
        points.append((run.name, q1, q2, q3, run is current))
        labels.append(run_label(run))
    if not points:
        return None
    figure = _figure(min(12.0, max(6.0, 0.25 * len(points) + 4)), 4.0)
    axes = figure.add_subplot(1, 1, 1)
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
    axes.set_xticks(shown, [labels[i] for i in shown], rotation=30, ha="right", fontsize=7)
    axes.set_xlabel("run (date, commit)", fontsize=8)
    unit = current.benches[fullname].unit
    axes.set_ylabel(
        f"{unit}/s (higher is better)" if use_rates else "seconds per call (lower is better)"
    )
    axes.set_title(current.benches[fullname].label, fontsize=9)
    axes.legend(fontsize=7, loc="best")
    axes.grid(alpha=0.3)
    return figure


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
        size = f"{step.change * 100:+.0f}%" if step.change is not None else step.what
        where = names.index(step.after.run)
        axes.axvline(
            where - 0.5,
            color="#e63946" if step.regression else "#8d99ae",
            linestyle="--",
            label=f"step {size} at {labels[where] if labels else step.after.run}",
        )


#: folders a report holds: its history plots, a gate's confirming A/B
REPORT_FOLDERS = ("history", "confirmation")


def report_entry(entry: Path) -> bool:
    """Whether a top-level entry of a report folder is one a report writes, of its kind
    (a file named ``history`` is not the report's folder of plots)."""
    name = entry.name
    if name in REPORT_FOLDERS:
        return entry.is_dir() and not entry.is_symlink()
    is_file = entry.is_file() and not entry.is_symlink()
    return is_file and (
        name == SUMMARY_NAME or (name.startswith("throughput-") and name.endswith(".png"))
    )


def check_replaceable(out: Path) -> None:
    """Refuse to replace a folder that holds anything but an earlier report."""
    if not out.exists():
        return
    if not out.is_dir():
        raise PerfsuiteError(f"{out}: is a file; choose a folder for the report")
    foreign = sorted(entry.name for entry in out.iterdir() if not report_entry(entry))
    if foreign:
        raise PerfsuiteError(
            f"{out}: holds {', '.join(foreign[:3])}"
            f"{' ...' if len(foreign) > 3 else ''}, which a report would replace; "
            "choose a new or empty folder"
        )


def write_report(
    out: Path,
    current: Run,
    comparison: RunComparison | None,
    history: Sequence[Run],
    notes: Sequence[str] = (),
) -> list[Path]:
    """Write ``summary.md`` and the PNGs into ``out`` as a unit; returns the files written.

    ``history`` is every run to plot, oldest first, and should include ``current``
    (matched by identity) so it is marked. The report is written into a temporary
    folder beside ``out`` and swapped into place, so readers (and a failure half-way)
    see the old report whole or the new one whole. ``out`` may hold only an earlier
    report (anything else is refused, never deleted).
    """
    out = Path(os.path.abspath(out))
    check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        written = _write_files(staging, current, comparison, history, notes)
        replace_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / path.relative_to(staging) for path in written]


def _write_files(
    out: Path,
    current: Run,
    comparison: RunComparison | None,
    history: Sequence[Run],
    notes: Sequence[str],
) -> list[Path]:
    written: list[Path] = []
    for group, benches in groups(current).items():
        data = throughput_png(group, benches)
        if data is not None:
            path = out / f"throughput-{safe_name(group)}.png"
            atomic_write_bytes(path, data)
            written.append(path)
    for fullname in current.benches:
        data = history_png(fullname, history, current)
        if data is not None:
            path = out / "history" / f"{safe_name(current.benches[fullname].label, fullname)}.png"
            atomic_write_bytes(path, data)
            written.append(path)
    summary = out / SUMMARY_NAME
    atomic_write_text(summary, summary_markdown(current, comparison, written, out, notes))
    return [summary, *written]
