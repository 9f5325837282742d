"""A/B and nightly report folders in the site: read, matched to runs, copied, shown.

An A/B report is the folder ``perfsuite ab --report DIR`` writes (``summary.md``,
``pairs.json``, ``A.json``/``B.json``, the logs and PNGs). It belongs to the run of its
candidate's commit (``B.json``'s ``commit_info.id``), a run of uncommitted changes
where the candidate was the working tree. A nightly report is the folder
``perfsuite nightly --report DIR`` writes: its ``summary.md`` (tonight's run and commit,
the suspects and the verdict) and, when suspects were confirmed, the A/B in ``ab/``.
It belongs to tonight's run alone. Each report is copied whole into ``ab/<slug>/`` of the
site, beside an ``index.html`` that shows it.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from perfsuite.dashboard.model import RunInfo
from perfsuite.errors import PerfsuiteError
from perfsuite.nightly.summary import HEADING

#: the first line of an A/B report's summary.md (a nightly's: :data:`HEADING`)
AB_HEADING = "## perfsuite ab"
_TONIGHT = re.compile(r"^Tonight: `(?P<run>[^`]+)` \(commit `(?P<commit>[^`]+)`", re.M)
_VERDICT = re.compile(r"^Verdict: (?P<verdict>.+)$", re.M)
#: what a nightly's verdict line says its bisection named (perfsuite.nightly.summary)
_CULPRIT = re.compile(r"; (?P<culprit>(?:culprits?: |the first bad commit lies in ).+)$")
_CONCLUSION = re.compile(r"^\*\*(?P<text>[^*].*)\*\*$", re.M)
_TITLE = re.compile(r"^(?P<title>A = .+), blocks alternated", re.M)


@dataclass(frozen=True)
class Report:
    """One report folder: what it concluded and which run it belongs to."""

    kind: str  # "ab" or "nightly"
    source: Path
    slug: str
    title: str
    conclusion: str
    commit: str | None  # the candidate's (ab) or tonight's (nightly) commit, maybe a prefix
    run: str | None = None  # tonight's run (nightly)
    dirty: bool = False  # the candidate was a working tree with uncommitted changes (ab)
    rows: list[dict[str, Any]] = field(default_factory=list)
    inner: Report | None = None  # a nightly's confirming A/B
    culprit: str | None = None  # the commit(s) a nightly's bisection named

    @property
    def failed(self) -> bool:
        text = self.conclusion.upper()
        return "REGRESSION" in text or "FAILED" in text

    @property
    def href(self) -> str:
        """The report's page, relative to the site's root."""
        return f"ab/{self.slug}/index.html"

    def belongs_to(self, run: RunInfo) -> bool:
        """Whether the report is shown with ``run``: a nightly's with tonight's run; an
        A/B's with the runs of its candidate's commit, clean or not as the candidate was."""
        if self.run is not None:
            return self.run == run.name
        if not (self.commit and run.commit and run.commit.startswith(self.commit)):
            return False
        return run.dirty == self.dirty


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PerfsuiteError(f"{path}: cannot be read ({exc})") from None


def _commit_of(side: Path) -> tuple[str | None, bool]:
    """The commit a side's pytest-benchmark run records (``None`` without one), and
    whether it had uncommitted changes."""
    try:
        document = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None, False
    info = document.get("commit_info") if isinstance(document, dict) else None
    commit = info.get("id") if isinstance(info, dict) else None
    dirty = bool(info.get("dirty")) if isinstance(info, dict) else False
    return (commit if isinstance(commit, str) and commit else None), dirty


def _folder(path: Path, option: str, what: str) -> Path:
    if not path.is_dir():
        state = "is a file" if path.exists() else "no such folder"
        raise PerfsuiteError(f"{path}: {state}; {option} names the folder {what} wrote")
    return path


def read_ab_report(path: Path, slug: str) -> Report:
    """The A/B report folder ``path`` (``perfsuite ab --report``)."""
    _folder(path, "--ab-report", "perfsuite ab --report")
    from perfsuite.ab.report import PAIRS, read_pairs

    summary = path / "summary.md"
    text = _text(summary) if summary.is_file() else ""
    if not (path / PAIRS).is_file() and not text.startswith(AB_HEADING):
        raise PerfsuiteError(
            f"{path}: not a perfsuite ab report (no pairs.json, and no summary.md of an "
            "A/B); --ab-report names the folder perfsuite ab --report wrote"
        )
    rows = read_pairs(path)
    title = _TITLE.search(text)
    conclusion = _CONCLUSION.search(text)
    commit, dirty = _commit_of(path / "B.json")
    return Report(
        kind="ab",
        source=path,
        slug=slug,
        title=title.group("title") if title else f"A/B {path.name}",
        conclusion=conclusion.group("text") if conclusion else "no conclusion recorded",
        commit=commit,
        dirty=dirty,
        rows=rows,
    )


def read_nightly_report(path: Path, slug: str) -> Report:
    """The nightly report folder ``path`` (``perfsuite nightly --report``)."""
    _folder(path, "--nightly-report", "perfsuite nightly --report")
    summary = path / "summary.md"
    text = _text(summary) if summary.is_file() else ""
    if not text.startswith(HEADING):
        raise PerfsuiteError(
            f"{path}: not a perfsuite nightly report (no summary.md starting "
            f"{HEADING!r}); --nightly-report names the folder perfsuite nightly "
            "--report wrote"
        )
    tonight, verdict = _TONIGHT.search(text), _VERDICT.search(text)
    inner = None
    if (path / "ab").is_dir():
        inner = read_ab_report(path / "ab", f"{slug}/ab")
    return Report(
        kind="nightly",
        source=path,
        slug=slug,
        title=f"nightly {tonight.group('run')}" if tonight else f"nightly {path.name}",
        conclusion=verdict.group("verdict").replace("**", "") if verdict else "no verdict",
        commit=tonight.group("commit") if tonight else None,
        run=tonight.group("run") if tonight else None,
        inner=inner,
        culprit=culprit.group("culprit")
        if verdict and (culprit := _CULPRIT.search(verdict.group("verdict")))
        else None,
    )


def slug_for(kind: str, number: int, path: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", path.resolve().name).strip("-.") or "report"
    return f"{kind}-{number:02d}-{name[:40]}"


# -- copied into the site, with a page ---------------------------------------------------


def _copy_files(source: Path, target: Path) -> list[str]:
    """The regular files at the top of ``source``, copied; their names, sorted."""
    target.mkdir(parents=True, exist_ok=True)
    names = []
    for entry in sorted(source.iterdir()):
        if entry.is_file() and not entry.is_symlink() and entry.name != "index.html":
            shutil.copyfile(entry, target / entry.name)
            names.append(entry.name)
    return names


def _cell(value: Any, percent: bool = False) -> str:
    if value is None:
        return "-"
    if percent and isinstance(value, int | float):
        return f"{value * 100:+.1f}%"
    if isinstance(value, list) and percent:
        return "[" + ", ".join(_cell(v, True) for v in value) + "]"
    return escape(str(value))


def _rows_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>No bench measured.</p>"
    head = "<tr><th>bench</th><th>verdict</th><th>time change B/A</th><th>interval</th>"
    head += "<th>pairs</th><th>threshold</th></tr>"
    body = []
    for row in rows:
        verdict = str(row.get("verdict") or row.get("skipped") or "-")
        css = "bad" if verdict == "slower" else ("good" if verdict == "faster" else "")
        body.append(
            f"<tr><td><code>{escape(str(row.get('nodeid', '?')))}</code></td>"
            f'<td class="{css}">{escape(verdict)}</td>'
            f"<td>{_cell(row.get('change'), True)}</td><td>{_cell(row.get('ci'), True)}</td>"
            f"<td>{_cell(row.get('pairs'))}</td><td>{_cell(row.get('threshold'), True)}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _body(report: Report, names: list[str], back: str, runs: list[RunInfo]) -> str:
    css = "bad" if report.failed else "good"
    parts = [
        f'<p><a href="{back}index.html">&larr; dashboard</a></p>',
        f"<h1>{escape(report.title)}</h1>",
        f'<p class="{css}"><strong>{escape(report.conclusion)}</strong></p>',
    ]
    if runs:
        links = ", ".join(
            f'<a href="{back}index.html#{escape(r.anchor)}">{escape(r.name)}</a>' for r in runs
        )
        parts.append(f"<p>Run: {links}</p>")
    elif report.commit:
        parts.append(f"<p>Commit <code>{escape(report.commit[:12])}</code>: no saved run.</p>")
    if report.inner is not None:
        parts.append(
            f'<p>Confirmed by an A/B: <a href="ab/index.html">{escape(report.inner.title)}</a>'
            f" ({escape(report.inner.conclusion)})</p>"
        )
    if report.kind == "ab":
        parts.append(_rows_table(report.rows))
        parts.extend(
            f'<figure><img src="{escape(n)}" alt="{escape(n)}" loading="lazy"></figure>'
            for n in names
            if n.endswith(".png")
        )
    files = " ".join(f'<a href="{escape(n)}">{escape(n)}</a>' for n in names)
    parts.append(f"<p>Files: {files}</p>")
    if "summary.md" in names:
        summary = _text(report.source / "summary.md")
        parts.append(f"<details open><summary>summary.md</summary><pre>{escape(summary)}</pre>")
        parts.append("</details>")
    return "\n".join(parts)


def write_report_pages(site: Path, report: Report, runs: list[RunInfo]) -> list[Path]:
    """Copy ``report`` into ``site/ab/<slug>/`` with an ``index.html``; the files written."""
    from perfsuite.dashboard.pages import page

    target = site / "ab" / report.slug
    names = _copy_files(report.source, target)
    depth = report.slug.count("/") + 2
    back = "../" * depth
    html = page(report.title, _body(report, names, back, runs), back)
    (target / "index.html").write_text(html, encoding="utf-8")
    written = [target / "index.html", *(target / n for n in names)]
    if report.inner is not None:
        written += write_report_pages(site, report.inner, runs)
    return written
