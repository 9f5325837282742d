"""The Markdown report's history PNGs: short run labels on x, nothing cut off."""

from __future__ import annotations

import itertools
from pathlib import Path

from perfsuite.verdict.plots import HISTORY_TICKS, history_figure, history_png
from perfsuite.verdict.storage import Storage
from tests.dashboard_data import MACHINE, STEPPED, make_suite_history, run_name


def test_history_ticks_are_short_dates_and_commits_and_nothing_is_clipped(
    tmp_path: Path,
) -> None:
    make_suite_history(tmp_path, nights=30, groups=1, per_group=1)
    store = Storage(tmp_path, MACHINE)
    runs = store.load_all(store.runs())
    assert len(run_name(0)) > 60  # pytest-benchmark's autosave names: counter, commit, time
    (fullname,) = runs[-1].benches
    figure = history_figure(fullname, runs, runs[-1])
    axes = figure.axes[0]  # the time panel; a cost panel, where drawn, holds the run labels
    labelled = figure.axes[1] if len(figure.axes) > 1 else axes
    labels = [t.get_text() for t in labelled.get_xticklabels()]
    assert 2 <= len(labels) <= HISTORY_TICKS
    assert all(len(label) <= 20 for label in labels), labels
    assert not any(run.name in label for run in runs for label in labels)
    newest = runs[-1]
    assert labels[-1] == "Nov 25\n" + newest.commit_info["id"][:8]  # as the dashboard's
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert any(text.startswith("step time +") for text in legend), legend
    assert not any(run.name in text for run in runs for text in legend)
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    page = figure.bbox
    for text in [*labelled.get_xticklabels(), axes.yaxis.label, labelled.xaxis.label, axes.title]:
        box = text.get_window_extent(renderer)
        inside = page.x0 - 1 <= box.x0 <= box.x1 <= page.x1 + 1
        assert inside, f"{text.get_text()!r} cut off at the side"
        inside = page.y0 - 1 <= box.y0 <= box.y1 <= page.y1 + 1
        assert inside, f"{text.get_text()!r} cut off at the top or bottom"
    boxes = [t.get_window_extent(renderer) for t in labelled.get_xticklabels()]
    for left, right in itertools.pairwise(boxes):
        assert left.x1 < right.x0, "two run labels overlap"
    assert figure.get_size_inches()[0] <= 12
    png = history_png(fullname, runs, runs[-1])
    assert png is not None
    assert png.startswith(b"\x89PNG")
    assert "/".join(STEPPED) == runs[-1].benches[fullname].label
