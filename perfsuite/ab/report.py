"""The A/B's report folder (its verdicts and their table: :mod:`perfsuite.ab.verdicts`).

``--report DIR`` writes ``summary.md`` (fit for ``$GITHUB_STEP_SUMMARY``), one PNG per
bench of its paired ratios in order, ``A.json``/``B.json`` (each side's pytest-benchmark
run, which ``pytest-benchmark compare`` reads), ``A.log``/``B.log`` (each side's pytest
output), ``pairs.json`` (every block, and each bench's verdict, change and interval)
and ``machine.json`` (:mod:`perfsuite.ab.load`). The folder is written next to DIR and
swapped into place, so it is whole or absent. Since it replaces DIR whole, DIR must be
absent, empty, or an earlier A/B report (:func:`check_report_dir`, before any bench
runs): never a folder of anything else.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from perfsuite.ab.load import MACHINE_JSON
from perfsuite.ab.outcome import BenchRun
from perfsuite.ab.verdicts import Verdicts
from perfsuite.data.fsutil import check_replaceable, made_dir, replace_dir
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.cost import MemoryChange
from perfsuite.verdict.paired import PairedResult


def _memory(change: MemoryChange) -> dict[str, Any]:
    """A bench's peak memory, A against B, as pairs.json keeps it."""
    return {
        "a_mb": change.baseline_mb,
        "b_mb": change.current_mb,
        "rose": change.rose,
        "pairs": change.pairs,
        "pairs_rose": change.pairs_rose,
    }


def _result(result: PairedResult | None) -> dict[str, Any]:
    """The verdict fields of one bench (or of a confirmed bench's first pair of
    processes, under ``first``, or a rechecked `same`'s second, under ``second``), as
    pairs.json keeps them."""
    if result is None:
        return {"verdict": None}
    return {
        "verdict": result.verdict.value,
        "change": result.change,
        "ci": list(result.ci) if result.ci is not None else None,
        "rate_change": result.rate_change,
        "pairs": result.pairs,
        "alpha_per_look": result.alpha,
        "futile": result.futile,
        "sign_p": result.sign_p,
    }


#: every block, and each bench's verdict, change and interval, one entry per bench
PAIRS = "pairs.json"
#: how the ``status`` of a suspect that the confirmation did not measure again begins
LEFT_OUT = "not measured again"
#: the fields of a :class:`BenchRun` that pairs.json writes in a form of their own, or not
OWN_FORM = {"result", "first", "second", "cpu", "seconds", "pool", "pair_peaks", "cpu_missing"}
#: the files an A/B report holds beside its PNGs
REPORT_FILES = ("summary.md", PAIRS, MACHINE_JSON, "A.json", "B.json", "A.log", "B.log")


def read_pairs(folder: Path) -> list[dict[str, Any]]:
    """The bench entries (each with its ``nodeid``) of the ``pairs.json`` an A/B report
    folder holds, as :func:`write_report` wrote them; [] where the folder has none. A
    file that is not JSON raises one line naming it."""
    path = folder / PAIRS
    if not path.is_file():
        return []
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PerfsuiteError(f"{path}: not an A/B's pairs.json ({exc})") from None
    entries = loaded if isinstance(loaded, list) else []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("nodeid"), str)]


def _report_entry(entry: Path) -> bool:
    """Whether ``entry`` is a file an A/B report writes."""
    is_file = entry.is_file() and not entry.is_symlink()
    return is_file and (entry.name in REPORT_FILES or entry.name.endswith(".png"))


def check_report_dir(out: Path) -> None:
    """Refuse ``--report out`` unless the report can replace it: absent, or a folder
    holding only an earlier A/B report's files; and the nearest existing folder above it
    takes a new folder. Raises :class:`PerfsuiteError` (one line) naming ``out``."""
    try:
        check_replaceable(
            out, _report_entry, "name a new or empty folder, or an earlier A/B report"
        )
    except PerfsuiteError as exc:
        raise PerfsuiteError(f"--report {exc}") from None


def _slug(nodeid: str, taken: set[str]) -> str:
    """A file name for ``nodeid``'s plot, unlike those ``taken`` (then taken too)."""
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in nodeid)
    name = keep.strip("_")[:120] or "bench"
    if name in taken:
        name = f"{name[:111]}-{hashlib.sha1(nodeid.encode()).hexdigest()[:8]}"
    taken.add(name)
    return name


def plot_ratios(run: BenchRun, path: Path) -> None:
    """A PNG of one bench's paired changes in order, with the threshold band."""
    from perfsuite.verdict.plots import new_figure, png_of

    changes = [math.expm1(d) * 100 for d in run.ratios]
    fig = new_figure(7, 3.2)
    ax = fig.subplots()
    ax.axhspan(-run.threshold * 100, run.threshold * 100, color="0.92", label="threshold")
    ax.axhline(0, color="0.5", linewidth=0.8)
    ax.plot(range(1, len(changes) + 1), changes, "o-", markersize=3, label="pair B/A")
    if run.result is not None:
        ax.axhline(run.result.change * 100, color="C3", linewidth=1, label="median")
    ax.set_xlabel("pair")
    ax.set_ylabel("time change B vs A [%]")
    ax.set_title(run.nodeid[-80:], fontsize=8)
    ax.legend(fontsize=7, loc="best")
    path.write_bytes(png_of(fig))


def write_report(
    out: Path,
    verdicts: Verdicts,
    side_json: Mapping[str, Sequence[Path]],
    side_logs: Mapping[str, Sequence[Path]],
    notes: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the report folder atomically (a temporary sibling swapped in by
    :func:`perfsuite.data.fsutil.replace_dir`): each side's JSON files (by side name,
    one per session) merged into one (:func:`perfsuite.ab.isolate.merge_json`) and its
    logs joined; ``notes`` end ``summary.md``, ``files`` (name: text) are written
    beside it."""
    from perfsuite.ab.isolate import merge_json  # imports pytest: not for the dashboard

    out = out.resolve()
    check_report_dir(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = made_dir(f".{out.name}-", out.parent)
    try:
        summary = [*verdicts.markdown_lines(), *(f"{note}\n" for note in notes)]
        (tmp / "summary.md").write_text("\n".join(summary))
        for name, text in (files or {}).items():
            (tmp / name).write_text(text)
        for name in "AB":
            merge_json(side_json.get(name, ()), tmp / f"{name}.json")
            logs = [p.read_bytes() for p in side_logs.get(name, ()) if p.is_file()]
            if logs:
                (tmp / f"{name}.log").write_bytes(b"".join(logs))
        pairs: list[dict[str, Any]] = []
        taken: set[str] = set()
        for row in verdicts.rows:
            run = row.run
            if run is None:
                continue
            kept = {f.name: getattr(run, f.name) for f in fields(run) if f.name not in OWN_FORM}
            pairs.append(
                {
                    **kept,
                    "seconds": round(run.seconds, 3),
                    **_result(run.result),
                    **({"first": _result(run.first)} if run.first else {}),
                    **({"second": _result(run.second)} if run.second else {}),
                    **({"cpu": _result(run.cpu)} if run.cpu else {}),
                    **({"memory": _memory(run.memory)} if run.memory else {}),
                    **({"status": row.status} if row.status else {}),
                }
            )
            if run.a_blocks and run.b_blocks:
                plot_ratios(run, tmp / f"{_slug(run.nodeid, taken)}.png")
        (tmp / PAIRS).write_text(json.dumps(pairs, indent=1))
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(out.iterdir())
