"""The dashboard's interactive plots (Plotly), as HTML fragments without plotly.js.

Each bench's history is one figure: the median per run with its interquartile range
as a band, x the runs in order labelled by date and short commit, a hover naming the
run, commit, date and figures, and a dashed line before each step ``perfsuite history``
finds (red: a regression, grey: faster; an accepted regression is labelled so). The
exact counters and the resource figures are a second figure, one row per series.
The page loads plotly.js once (:data:`PLOTLY_JS`); plotly is imported here only.
"""

from __future__ import annotations

import math
from typing import Any

from perfsuite.dashboard.model import RESOURCE_KEYS, History, number

#: where the site keeps plotly.js, relative to its root
PLOTLY_JS = "assets/plotly.min.js"
#: the most x tick labels a figure shows
MAX_TICKS = 8
REGRESSION = "#d62828"
FASTER = "#6c757d"
ACCEPTED = "#e09f3e"
LINE = "#1d5d8c"
BAND = "rgba(29, 93, 140, 0.18)"
_CONFIG = {"displaylogo": False, "responsive": True}


def tick_positions(count: int, most: int = MAX_TICKS) -> list[int]:
    """Evenly spread indexes of ``count`` points, the newest always among them.

    >>> tick_positions(30, 8)
    [1, 5, 9, 13, 17, 21, 25, 29]
    >>> tick_positions(3)
    [0, 1, 2]
    """
    if count <= most:
        return list(range(count))
    stride = math.ceil(count / most)
    return sorted(range(count - 1, -1, -stride))


def _axis(history: History) -> dict[str, Any]:
    ticks = tick_positions(len(history.points))
    labels = [f"{p.run.day}<br>{p.run.short_commit}" for p in history.points]
    return {
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [labels[i] for i in ticks],
        "range": [-0.6, len(history.points) - 0.4],
        "zeroline": False,
        "showgrid": False,
    }


def _hover(history: History) -> tuple[list[list[str]], str]:
    unit = f"{history.unit}/s" if history.rates else "ms"
    data = []
    for p in history.points:
        counters = ", ".join(f"{k} {v}" for k, v in p.counters.items()) or "-"
        data.append(
            [
                p.run.name,
                p.run.commit or "?",
                p.run.when,
                f"{number(p.centre)} {unit}",
                f"{number(p.low)} - {number(p.high)}",
                f"{number(p.median_s * 1000)} ms",
                counters,
            ]
        )
    template = (
        "<b>%{customdata[0]}</b><br>commit %{customdata[1]}<br>%{customdata[2]}<br>"
        "median %{customdata[3]} (IQR %{customdata[4]})<br>call %{customdata[5]}<br>"
        "counters: %{customdata[6]}<extra></extra>"
    )
    return data, template


def _marks(history: History) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    shapes, notes = [], []
    for count, mark in enumerate(history.marks):
        colour = (ACCEPTED if mark.accepted else REGRESSION) if mark.regression else FASTER
        x = mark.index - 0.5
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "line": {"color": colour, "width": 2, "dash": "dash"},
            }
        )
        word = "accepted" if mark.accepted else ("regression" if mark.regression else "faster")
        notes.append(
            {
                "x": x,
                "xref": "x",
                "y": 1.0 - 0.12 * (count % 3),
                "yref": "paper",
                "text": f"step {mark.size} ({word})",
                "hovertext": mark.text,
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
                "font": {"color": colour, "size": 11},
                "bgcolor": "rgba(255, 255, 255, 0.8)",
            }
        )
    return shapes, notes


def history_figure(history: History) -> dict[str, Any]:
    """The bench's history: median with its IQR band, the steps marked."""
    xs = list(range(len(history.points)))
    customdata, template = _hover(history)
    shapes, notes = _marks(history)
    traces = [
        {
            "type": "scatter",
            "x": xs + xs[::-1],
            "y": [p.high for p in history.points] + [p.low for p in history.points][::-1],
            "fill": "toself",
            "fillcolor": BAND,
            "line": {"width": 0},
            "hoverinfo": "skip",
            "name": "interquartile range",
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "x": xs,
            "y": [p.centre for p in history.points],
            "customdata": customdata,
            "hovertemplate": template,
            "line": {"color": LINE, "width": 2},
            "marker": {"size": 6},
            "name": "median",
        },
    ]
    layout = {
        "template": "none",
        "height": 340,
        "margin": {"l": 70, "r": 20, "t": 30, "b": 60},
        "xaxis": _axis(history),
        "yaxis": {"title": {"text": history.axis_title}, "gridcolor": "#eee", "zeroline": False},
        "shapes": shapes,
        "annotations": notes,
        "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "y": -0.22, "font": {"size": 11}},
        "hovermode": "closest",
    }
    return {"data": traces, "layout": layout}


def extra_series(history: History) -> dict[str, str]:
    """The counters and resource figures this history has: name -> axis title."""
    names: dict[str, str] = {}
    for point in history.points:
        names.update((f"counter:{k}", k) for k in point.counters)
    for point in history.points:
        names.update((f"resource:{k}", RESOURCE_KEYS[k]) for k in point.resources)
    return names


def extras_figure(history: History) -> dict[str, Any] | None:
    """The exact counters (steps) and resource figures, one row each; ``None`` if none."""
    series = extra_series(history)
    if not series:
        return None
    xs = list(range(len(history.points)))
    names = [p.run.name for p in history.points]
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {}
    rows = len(series)
    gap = 0.08
    height = (1 - gap * (rows - 1)) / rows
    for row, (key, title) in enumerate(series.items()):
        kind, _, name = key.partition(":")
        values: list[float | None] = [
            (p.counters.get(name) if kind == "counter" else p.resources.get(name))
            for p in history.points
        ]
        axis = "" if row == 0 else str(row + 1)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": xs,
                "y": values,
                "text": names,
                "xaxis": "x",
                "yaxis": f"y{axis}",
                "line": {"shape": "hv" if kind == "counter" else "linear", "width": 1.5},
                "marker": {"size": 4},
                "name": title,
                "hovertemplate": f"%{{text}}<br>{title}: %{{y}}<extra></extra>",
            }
        )
        top = 1 - row * (height + gap)
        layout[f"yaxis{axis}"] = {
            "domain": [max(0.0, top - height), top],
            "title": {"text": title, "font": {"size": 10}},
            "gridcolor": "#eee",
            "zeroline": False,
            "rangemode": "tozero",
        }
    layout.update(
        {
            "template": "none",
            "height": 110 * rows + 90,
            "margin": {"l": 70, "r": 20, "t": 20, "b": 60},
            "xaxis": {**_axis(history), "anchor": f"y{'' if rows == 1 else rows}"},
            "showlegend": False,
            "hovermode": "closest",
        }
    )
    return {"data": traces, "layout": layout}


def figure_html(figure: dict[str, Any], div_id: str) -> str:
    """A ``<div>`` and its ``Plotly.newPlot`` call; plotly.js comes from the page."""
    import plotly.io

    html: str = plotly.io.to_html(
        figure,
        include_plotlyjs=False,
        full_html=False,
        div_id=div_id,
        config=_CONFIG,
        validate=True,
    )
    return html


def plotly_js() -> str:
    """plotly.js as shipped with the plotly package: written once into the site."""
    import plotly.offline

    text: str = plotly.offline.get_plotlyjs()
    return text
