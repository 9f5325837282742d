"""The dashboard written as a static site, whole or not at all.

``build_site(storage, out)`` writes into ``out``::

    index.html              every group: each bench's newest median, verdict, trend;
                            the runs of each machine folder, with their reports
    groups/<group>.html     each bench's history plot, its steps, counters, resources
    ab/<slug>/index.html    each A/B or nightly report given, copied beside its page
    assets/plotly.min.js    plotly.js, once for the whole site
    assets/dashboard.css
    perfsuite-site.json     what was built from what

Nothing is fetched when a page opens: no CDN, no server. The site is written into a
temporary folder beside ``out`` and swapped into place, so a reader (or a failure
half-way) sees the old site whole or the new one whole. ``out`` may hold only an
earlier site (one with ``perfsuite-site.json``); anything else is refused, never deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from perfsuite.dashboard.abreports import (
    Report,
    read_ab_report,
    read_nightly_report,
    slug_for,
    write_report_pages,
)
from perfsuite.dashboard.figures import PLOTLY_JS, plotly_js
from perfsuite.dashboard.model import Dashboard, load_dashboard
from perfsuite.dashboard.pages import CSS, CSS_PATH, group_body, group_href, index_body, page
from perfsuite.data.fsutil import replace_dir, umask
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.storage import Storage

#: the file that marks a folder as a site this module wrote (and may replace)
MARKER = "perfsuite-site.json"


@dataclass(frozen=True)
class Site:
    """What :func:`build_site` wrote."""

    root: Path
    files: list[Path]
    groups: int
    benches: int
    reports: int

    @property
    def size(self) -> int:
        return sum(path.stat().st_size for path in self.files)


def check_target(out: Path) -> None:
    """Refuse a file, or a folder that holds anything but an earlier site."""
    if not out.exists():
        return
    if not out.is_dir():
        raise PerfsuiteError(f"{out}: is a file; --html names a folder for the site")
    entries = list(out.iterdir())
    if entries and not (out / MARKER).is_file():
        names = ", ".join(sorted(e.name for e in entries)[:3])
        raise PerfsuiteError(
            f"{out}: holds {names}{' ...' if len(entries) > 3 else ''} and no {MARKER}, so "
            "it is not an earlier dashboard; choose a new or empty folder"
        )


def read_reports(ab: Sequence[Path], nightly: Sequence[Path]) -> list[Report]:
    """The report folders given, checked before anything is written."""
    reports = [read_ab_report(p, slug_for("ab", i, p)) for i, p in enumerate(ab, 1)]
    reports += [read_nightly_report(p, slug_for("nightly", i, p)) for i, p in enumerate(nightly, 1)]
    return reports


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _write_files(
    root: Path, dashboard: Dashboard, reports: Sequence[Report], generated: str
) -> list[Path]:
    written = [_write(root / PLOTLY_JS, plotly_js()), _write(root / CSS_PATH, CSS)]
    groups = dashboard.groups()
    for group, histories in groups.items():
        body = group_body(group, histories, list(groups), reports)
        written.append(_write(root / group_href(group), page(group, body, "../", plots=True)))
    runs = [run for infos in dashboard.runs.values() for run in infos]
    for report in reports:
        written += write_report_pages(root, report, [r for r in runs if report.belongs_to(r)])
    index = index_body(dashboard, reports, generated)
    written.append(_write(root / "index.html", page("perfsuite dashboard", index, "")))
    facts = {
        "storage": str(dashboard.root),
        "built": generated,
        "machines": {machine: len(infos) for machine, infos in dashboard.runs.items()},
        "groups": len(groups),
        "benches": len(dashboard.histories),
        "reports": [str(r.source) for r in reports],
    }
    written.append(_write(root / MARKER, json.dumps(facts, indent=1) + "\n"))
    return written


def build_site(
    storage: Storage,
    out: Path,
    ab_reports: Sequence[Path] = (),
    nightly_reports: Sequence[Path] = (),
) -> Site:
    """Write the dashboard of ``storage`` (and the reports given) into ``out``.

    Usage::

        site = build_site(Storage.from_option(".benchmarks"), Path("site"),
                          ab_reports=[Path("reports/ab")])
        site.root / "index.html"
    """
    out = Path(os.path.abspath(out))
    check_target(out)
    reports = read_reports(ab_reports, nightly_reports)
    dashboard = load_dashboard(storage)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        os.chmod(staging, 0o755 & ~umask())
        generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        written = _write_files(staging, dashboard, reports, generated)
        replace_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Site(
        root=out,
        files=[out / path.relative_to(staging) for path in written],
        groups=len(dashboard.groups()),
        benches=len(dashboard.histories),
        reports=len(reports),
    )
