"""Reports: a Markdown summary (fit for ``$GITHUB_STEP_SUMMARY``) and PNG plots.

``write_report(out, current, comparison, history)`` writes into ``out``:

* ``summary.md``: the verdict table (when a baseline was compared), then per group
  each variant's median items/s, its spread and its speedup over the group's baseline;
* ``throughput-<group>.png``: per group, each variant's per-round items/s as a box plot
  (seconds per call for benches that declare no items);
* ``memory-<group>.png``: per group whose benches recorded a cost, each variant's
  resident memory over its measured rounds (a cache that fills shows as a ramp);
* ``history/<bench>.png``: per bench, its median items/s (or time) across the saved
  runs, with the interquartile range as error bars, the current run marked, and a
  dashed line where ``perfsuite history`` finds a step (red for a regression).

The plots are drawn by :mod:`perfsuite.verdict.plots`. The folder is written as a unit:
into a temporary folder swapped into place.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfsuite.data.fsutil import atomic_write_bytes, atomic_write_text, made_dir, replace_dir
from perfsuite.data.fsutil import check_replaceable as replaceable
from perfsuite.verdict.cost import COST_HEADER, cost_cells
from perfsuite.verdict.plots import (
    history_png,
    is_baseline,
    is_roofline,
    memory_png,
    quantiles,
    throughput_png,
    variant_of,
)

if TYPE_CHECKING:
    from perfsuite.verdict.compare import RunComparison
    from perfsuite.verdict.runs import Bench, Run

SUMMARY_NAME = "summary.md"


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


def groups(run: Run) -> dict[str, list[Bench]]:
    """The run's benches by group, in first-seen order."""
    found: dict[str, list[Bench]] = {}
    for bench in run.benches.values():
        found.setdefault(_group_of(bench), []).append(bench)
    return found


def group_rows(benches: Sequence[Bench]) -> list[list[str]]:
    """variant, median items/s, spread (IQR of per-round items/s), speedup, rounds."""
    from perfsuite.verdict.table import code_span

    baseline_rate = next((b.median_rate() for b in benches if is_baseline(b)), None)
    rows = []
    for bench in benches:
        rate = bench.median_rate()
        rates = bench.rates()
        tag = " (baseline)" if is_baseline(bench) else (" (roofline)" if is_roofline(bench) else "")
        spread = "-"
        if len(rates) >= 2:
            q1, _, q3 = quantiles(rates)
            spread = f"{_fmt_rate(q1)} - {_fmt_rate(q3)}"
        speedup = f"{rate / baseline_rate:.2f}x" if rate and baseline_rate else "-"
        rows.append(
            [
                code_span(variant_of(bench)) + tag,
                f"{_fmt_rate(rate)} {bench.unit}/s"
                if rate
                else (f"{bench.median * 1000:.3f} ms/call" if bench.median else "-"),
                spread,
                *cost_cells(bench.cost, bench.items, bench.unit),
                speedup,
                str(bench.rounds) if bench.rounds else "-",
            ]
        )
    return rows


GROUP_HEADER = [
    "variant",
    "median throughput (or time per call)",
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
    from perfsuite.verdict.table import code_span, markdown_lines, markdown_table

    lines = ["# perfsuite report", ""]
    stamp = f" ({current.datetime})" if current.datetime else ""
    lines.append(f"Run: {code_span(current.source)}{stamp}, {len(current.benches)} benches.")
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
        lines.extend(f"- {code_span(str(p.relative_to(out)))}" for p in plots)
        lines.append("")
    return "\n".join(lines)


#: the folder of a report that holds a gate's confirming A/B
CONFIRMATION = "confirmation"
#: folders a report holds: its history plots, a gate's confirming A/B
REPORT_FOLDERS = ("history", CONFIRMATION)
#: the output of a gate's confirming A/B, beside its folder
CONFIRMATION_LOG = f"{CONFIRMATION}.log"
#: the kinds of per-group plot a report writes, as ``<kind>-<group>.png``
PLOT_KINDS = ("throughput", "memory")


def report_entry(entry: Path) -> bool:
    """Whether a top-level entry of a report folder is one a report writes, of its kind
    (a file named ``history`` is not the report's folder of plots)."""
    name = entry.name
    if name in REPORT_FOLDERS:
        return entry.is_dir() and not entry.is_symlink()
    is_file = entry.is_file() and not entry.is_symlink()
    plot = name.endswith(".png") and any(name.startswith(f"{kind}-") for kind in PLOT_KINDS)
    return is_file and (name in (SUMMARY_NAME, CONFIRMATION_LOG) or plot)


def check_replaceable(out: Path) -> None:
    """Refuse to replace anything but an earlier report, or a folder that cannot be
    created; the error starts with ``out``."""
    replaceable(out, report_entry, "choose a new or empty folder, or an earlier report")


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
    staging = made_dir(f".{out.name}.new-", out.parent)
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
        for kind, data in (
            (PLOT_KINDS[0], throughput_png(group, benches)),
            (PLOT_KINDS[1], memory_png(group, benches)),
        ):
            if data is not None:
                path = out / f"{kind}-{safe_name(group)}.png"
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
