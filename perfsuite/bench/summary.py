"""The terminal summary pytest-benchmark's table lacks: per group, device, items/s and speedup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite.bench.measure import BenchRecord
from perfsuite.verdict.cost import COST_HEADER, cost_cells
from perfsuite.verdict.result import BenchResult
from perfsuite.verdict.textable import format_table as format_table  # re-exported


def _fmt_rate(rate: float | None) -> str:
    if rate is None:
        return "-"
    return f"{rate:,.1f}" if rate < 1000 else f"{rate:,.0f}"


def _fmt_ratio(value: float | None, suffix: str = "x") -> str:
    return "-" if value is None else f"{value:.2f}{suffix}"


def _fmt_pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _fmt_device(result: BenchResult) -> str:
    """``cpu``, ``gpu``, or ``gpu`` with the flags its clocks raised: ``gpu (throttled)``."""
    device = result.device or "-"
    flags = result.gpu_flags
    return f"{device} ({', '.join(flags)})" if flags else device


def summary_rows(records: Sequence[BenchRecord]) -> dict[str, list[list[str]]]:
    """Per group (in first-seen order), one row per variant: variant, device, items/s, ..."""
    groups: dict[str, list[list[str]]] = {}
    for rec in records:
        tag = " (baseline)" if rec.baseline else " (roofline)" if rec.roofline else ""
        traces = rec.result.counters.get("traces")
        groups.setdefault(rec.group, []).append(
            [
                rec.variant + tag,
                _fmt_device(rec.result),
                f"{_fmt_rate(rec.rate)} {rec.unit}/s" if rec.rate is not None else "-",
                *cost_cells(rec.result.cost, rec.result.items, rec.unit),
                _fmt_ratio(rec.speedup),
                _fmt_pct(rec.efficiency),
                "-" if traces is None else str(traces),
                _fmt_notes(rec.result.notes),
            ]
        )
    return groups


def _fmt_notes(notes: Mapping[str, Any]) -> str:
    """``name=value`` for each figure a bench noted with ``perf.note`` (dataset keys hidden)."""
    parts = []
    for name, value in notes.items():
        if name.startswith("dataset"):
            continue
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        parts.append(f"{name}={text}")
    return " ".join(parts)


HEADER = [
    "variant",
    "device",
    "throughput",
    *COST_HEADER,
    "speedup",
    "efficiency",
    "traces",
    "notes",
]


def summary_lines(records: Sequence[BenchRecord]) -> list[str]:
    """The whole summary: a titled table per group; empty when nothing was measured."""
    lines: list[str] = []
    for group, rows in summary_rows(records).items():
        lines.append(f"group {group}:")
        lines.extend("  " + row for row in format_table(rows, HEADER))
        lines.append("")
    return lines
