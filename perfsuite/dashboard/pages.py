"""The dashboard's HTML: the shared page frame, the index and one page per group.

Pages link only to files inside the site by relative paths, and load their style
(``assets/dashboard.css``) and plotly.js (``assets/plotly.min.js``, group pages only)
from it, so the site opens offline, from ``file://`` and from any sub-path of a server.
The index's trend lines are inline SVG, drawn here without plotly.js.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from perfsuite.dashboard.figures import PLOTLY_JS, extras_figure, figure_html, history_figure
from perfsuite.dashboard.model import Dashboard, History, RunInfo, number

if TYPE_CHECKING:
    from perfsuite.dashboard.abreports import Report

CSS_PATH = "assets/dashboard.css"
CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px;
       padding: 0 16px 48px; color: #222; }
h1 { font-size: 22px; margin: 18px 0 6px; } h2 { font-size: 17px; margin: 26px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 3px 10px 3px 0; text-align: left;
         vertical-align: middle; }
th { font-weight: 600; color: #555; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 12px; } pre { background: #f6f6f6; padding: 8px; overflow-x: auto; }
.muted { color: #777; } .bad { color: #d62828; } .good { color: #2a7a3b; }
.badge { border-radius: 3px; padding: 1px 6px; font-size: 12px; white-space: nowrap; }
.v-regression { background: #fde2e1; color: #a4161a; }
.v-accepted { background: #fbeccd; color: #8a5a00; }
.v-faster { background: #e1f0e3; color: #2a7a3b; }
.v-steady { background: #eef1f5; color: #445; }
.v-too-few-runs { background: #f2f2f2; color: #777; }
section.bench { border-top: 1px solid #ddd; margin-top: 18px; }
nav a { margin-right: 10px; } figure { margin: 8px 0; } figure img { max-width: 100%; }
.plot { min-height: 200px; }
"""


def page(title: str, body: str, root: str, plots: bool = False) -> str:
    """A whole page; ``root`` is the relative path from it to the site's root (``../``)."""
    script = f'<script src="{root}{PLOTLY_JS}" charset="utf-8"></script>\n' if plots else ""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n"
        f'<link rel="stylesheet" href="{root}{CSS_PATH}">\n{script}</head>\n'
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def slug(text: str) -> str:
    """A file-name-safe form of a group's name.

    >>> slug("tf.data / warm-up")
    'tf.data-warm-up'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80] or "group"


def group_href(group: str) -> str:
    return f"groups/{slug(group)}.html"


def badge(verdict: str) -> str:
    css = "v-" + verdict.replace(" ", "-")
    return f'<span class="badge {css}">{escape(verdict)}</span>'


def sparkline(history: History, width: int = 140, height: int = 30) -> str:
    """The history's medians as an inline SVG line, steps as ticks (red: a regression)."""
    values = [p.centre for p in history.points]
    if not values:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step_x = (width - 4) / max(1, len(values) - 1)

    def x(i: float) -> float:
        return 2 + i * step_x

    def y(v: float) -> float:
        return height - 3 - (v - low) / span * (height - 6)

    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    ticks = "".join(
        f'<line x1="{x(m.index - 0.5):.1f}" x2="{x(m.index - 0.5):.1f}" y1="0" y2="{height}" '
        f'stroke="{"#d62828" if m.regression and not m.accepted else "#aaa"}" '
        'stroke-dasharray="2,2"/>'
        for m in history.marks
    )
    end = f'cx="{x(len(values) - 1):.1f}" cy="{y(values[-1]):.1f}"'
    last = f'<circle {end} r="2.5" fill="#1d5d8c"/>'
    label = escape(f"{history.label}: trend over {len(values)} runs")
    return (
        f'<svg class="spark" width="{width}" height="{height}" role="img" aria-label="{label}">'
        f'{ticks}<polyline fill="none" stroke="#1d5d8c" stroke-width="1.5" points="{line}"/>'
        f"{last}</svg>"
    )


def _figure(history: History) -> str:
    return f"{number(history.points[-1].centre)} {history.unit + '/s' if history.rates else 'ms'}"


def _report_links(reports: Sequence[Report], run: RunInfo, root: str) -> str:
    return " ".join(
        f'<a class="{"bad" if r.failed else ""}" href="{root}{r.href}">{escape(r.kind)}</a>'
        for r in reports
        if r.belongs_to(run)
    )


def index_body(dashboard: Dashboard, reports: Sequence[Report], generated: str) -> str:
    groups = dashboard.groups()
    total = sum(len(runs) for runs in dashboard.runs.values())
    parts = [
        "<h1>perfsuite dashboard</h1>",
        f'<p class="muted">{total} saved runs in {len(dashboard.runs)} machine folder(s) of '
        f"<code>{escape(str(dashboard.root))}</code>; built {escape(generated)}.</p>",
    ]
    if dashboard.skipped:
        parts.append(f'<p class="bad">Unreadable run files skipped: {len(dashboard.skipped)}.</p>')
    nav = " ".join(f'<a href="#g-{slug(g)}">{escape(g)}</a>' for g in groups)
    parts.append(f'<nav>{nav} <a href="#runs">runs</a> <a href="#reports">reports</a></nav>')
    for group, histories in groups.items():
        href = group_href(group)
        bad = sum(h.verdict == "regression" for h in histories)
        note = f' <span class="badge v-regression">{bad} regressed</span>' if bad else ""
        parts.append(f'<h2 id="g-{slug(group)}"><a href="{href}">{escape(group)}</a>{note}</h2>')
        rows = [
            f'<tr><td><a href="{href}#{h.anchor}">{escape(h.label)}</a></td>'
            f'<td class="muted">{escape(h.machine)}</td><td class="num">{_figure(h)}</td>'
            f"<td>{badge(h.verdict)}</td><td>{sparkline(h)}</td></tr>"
            for h in histories
        ]
        head = "<tr><th>bench</th><th>machine</th><th>newest median</th><th>verdict</th>"
        parts.append(f"<table>{head}<th>trend</th></tr>{''.join(rows)}</table>")
    parts.append('<h2 id="runs">Runs</h2>')
    for machine, runs in dashboard.runs.items():
        parts.append(f"<h3>{escape(machine)}</h3>")
        rows = [
            f'<tr id="{escape(r.anchor)}"><td><code>{escape(r.name)}</code></td>'
            f"<td>{escape(r.when)}</td><td><code>{escape(r.short_commit)}</code></td>"
            f"<td>{_report_links(reports, r, '')}</td></tr>"
            for r in reversed(runs)
        ]
        head = "<tr><th>run</th><th>saved</th><th>commit</th><th>reports</th></tr>"
        parts.append(f"<table>{head}{''.join(rows)}</table>")
    parts.append(_reports_section(dashboard, reports, ""))
    return "\n".join(parts)


def _reports_section(dashboard: Dashboard, reports: Sequence[Report], root: str) -> str:
    if not reports:
        return (
            '<section id="reports"><h2>Reports</h2>'
            '<p class="muted">No A/B or nightly report given.</p></section>'
        )
    runs = [r for infos in dashboard.runs.values() for r in infos]
    items = []
    for report in reports:
        owners = [r for r in runs if report.belongs_to(r)]
        where = ", ".join(
            f'<a href="{root}index.html#{escape(r.anchor)}">{escape(r.name)}</a>' for r in owners
        )
        css = "bad" if report.failed else "good"
        items.append(
            f'<li><a href="{root}{report.href}">{escape(report.title)}</a>: '
            f'<span class="{css}">{escape(report.conclusion)}</span>'
            + (f" (run {where})" if where else "")
            + "</li>"
        )
    return f'<section id="reports"><h2>Reports</h2><ul>{"".join(items)}</ul></section>'


def _steps(history: History, reports: Sequence[Report]) -> str:
    if not history.marks:
        return ""
    items = []
    for mark in history.marks:
        run = history.points[mark.index].run if mark.index < len(history.points) else None
        word = "accepted" if mark.accepted else ("regression" if mark.regression else "faster")
        css = "bad" if word == "regression" else ("muted" if word == "accepted" else "good")
        links = _report_links(reports, run, "../") if run is not None else ""
        anchor = f' <a href="../index.html#{escape(run.anchor)}">run</a>' if run else ""
        named = [r.culprit for r in reports if r.culprit and run is not None and r.belongs_to(run)]
        items.append(
            f'<li><span class="{css}">{escape(word)}</span>: {escape(mark.text)}{anchor}'
            + "".join(f" · {escape(culprit)}" for culprit in named)
            + (f" · reports: {links}" if links else "")
            + "</li>"
        )
    return f'<ul class="steps">{"".join(items)}</ul>'


def group_body(
    group: str, histories: Sequence[History], groups: Sequence[str], reports: Sequence[Report]
) -> str:
    nav = " ".join(
        f'<a href="{slug(g)}.html">{escape(g)}</a>' if g != group else f"<b>{escape(g)}</b>"
        for g in groups
    )
    parts = [
        f'<nav><a href="../index.html">&larr; index</a> {nav}</nav>',
        f"<h1>{escape(group)}</h1>",
        '<p class="muted">Each bench: the median per run with its interquartile range, x the '
        "runs in order (date, commit); hover a point for its run. Dashed lines: steps found by "
        "perfsuite history (red a regression, amber an accepted one, grey faster).</p>",
    ]
    for history in histories:
        parts.append(f'<section class="bench" id="{history.anchor}">')
        parts.append(f"<h2>{escape(history.label)} {badge(history.verdict)}</h2>")
        parts.append(
            f'<p class="muted">{escape(history.machine)} · {len(history.points)} runs · '
            f"newest median {_figure(history)} · <code>{escape(history.fullname)}</code></p>"
        )
        parts.append(_steps(history, reports))
        div = f"plot-{history.anchor}"
        parts.append(f'<div class="plot">{figure_html(history_figure(history), div)}</div>')
        extras = extras_figure(history)
        if extras is not None:
            parts.append(f'<div class="plot">{figure_html(extras, div + "-extras")}</div>')
        parts.append("</section>")
    return "\n".join(parts)
