"""The A/B's verdict table (terminal and Markdown) and its report folder.

``--report DIR`` writes ``summary.md`` (fit for ``$GITHUB_STEP_SUMMARY``), one PNG per
bench of its paired ratios in order, ``A.json``/``B.json`` (each side's pytest-benchmark
run, which ``pytest-benchmark compare`` reads), ``A.log``/``B.log`` (each side's pytest
output), ``pairs.json`` (every block, and each bench's verdict, change and interval)
and ``machine.json`` (:mod:`perfsuite.ab.load`). The folder is written next to DIR and
renamed into place, so it is whole or absent.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfsuite.ab.outcome import BenchRun, Outcome
from perfsuite.ab.sides import SideSpec
from perfsuite.bench.summary import format_table
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.compare import CounterChange
from perfsuite.verdict.paired import ALPHA, PairedResult, judge_processes
from perfsuite.verdict.runs import Bench, Run, load_run
from perfsuite.verdict.stats import Verdict

#: an inconclusive first estimate beyond the threshold is a suspect only when its pairs
#: lean that way at least this much (two-sided sign test; 3 pairs of 3 give 0.25)
SUSPECT_SIGN_P = 0.25

HEADER = ["bench", "verdict", "time change [CI]", "throughput", "pairs", "counters"]


def against(first: PairedResult, check: PairedResult) -> bool:
    """Whether a confirmation's ``slower`` or ``faster`` points the other way from the
    first estimate that made the bench a suspect.

    A confirmation tests the suspicion: a bench whose first pair of processes read it
    faster is not confirmed slower by fresh pairs that read it slower (nor the reverse).
    Both stages must err, in the same direction, for a false alarm; in a whole-suite
    A/A at smoke scale, two benches whose first pair read -6.4% and -5.7% were called
    slower (+6.7%, +6.8%) by 3 fresh pairs each.
    """
    if check.verdict not in (Verdict.SLOWER, Verdict.FASTER) or first.change == 0:
        return False
    worse = (first.change > 0) != first.higher_is_better  # the first estimate leans slower
    return (check.verdict is Verdict.SLOWER) != worse


def _pct(value: float) -> str:
    return f"{value * 100:+.1f}%"


@dataclass(frozen=True)
class Row:
    """One bench's line: the alternation and what each side's JSON recorded."""

    nodeid: str
    run: BenchRun | None
    unit: str = "items"
    counters: tuple[CounterChange, ...] = ()
    status: str | None = None  # added / removed / skipped; or how a verdict was reached

    @property
    def suspect(self) -> bool:
        """Judged slower or faster, or inconclusive with an estimate beyond the
        threshold either way and pairs that lean that way (sign test p at most
        ``SUSPECT_SIGN_P``): what ``--confirm`` measures again in fresh pairs of
        processes (a claimed speedup deserves the same trust as a slowdown).

        The lean keeps out a bench whose few pairs say nothing: one pair of a
        one-round cold-start bench (its estimate a single ratio), or pairs split
        evenly between slower and faster whose median happens to fall beyond the
        threshold. In a whole-suite A/A at smoke scale, 13 one-pair torch.compile
        benches were suspects, and 3 fresh pairs of processes decided none of them
        (one pair each again). Leaving a bench out only ever removes a chance of a
        false alarm; it costs power only where the first stage measured fewer than 3
        pairs, or pairs with no lean.
        """
        result = self.run.result if self.run else None
        if result is None:
            return False
        if result.verdict in (Verdict.SLOWER, Verdict.FASTER):
            return True
        # a `same` estimate lies inside its interval, so inside the threshold
        leans = result.sign_p is None or result.sign_p <= SUSPECT_SIGN_P
        return abs(result.change) > result.threshold and leans

    @property
    def undecided(self) -> bool:
        """Inconclusive, its estimate on the slower side and its interval reaching past
        the threshold there: a regression of at least the threshold that the first pair
        of processes could not rule out. What ``--suspects undecided`` also measures
        again; its confirmation stands on the fresh pairs alone, at the first stage's
        error rate, and must point the way the estimate leaned (:func:`against`).

        A bench with no interval (too few pairs) says nothing and is left out; so is an
        inconclusive bench leaning faster: an unproven speedup fails no gate.
        """
        result = self.run.result if self.run else None
        if result is None or result.verdict is not Verdict.INCONCLUSIVE or result.ci is None:
            return False
        if result.higher_is_better:
            return result.change < 0 and result.ci[0] < -result.threshold
        return result.change > 0 and result.ci[1] > result.threshold

    @property
    def verdict(self) -> Verdict | None:
        return self.run.result.verdict if self.run and self.run.result else None

    @property
    def regressed(self) -> bool:
        return self.verdict is Verdict.SLOWER or any(c.rose for c in self.counters)

    def cells(self) -> list[str]:
        result = self.run.result if self.run else None
        if result is None:
            return [self.nodeid, self.status or "not measured", "-", "-", "-", self._counters()]
        word = result.verdict.value
        word = word.upper() if result.verdict is Verdict.SLOWER else word
        if any(c.rose for c in self.counters):
            word += " (counter rose)"
        if self.status:
            word += f" ({self.status})"
        elif result.futile:
            word += " (stopped early: its budget could not decide)"
        time = f"{_pct(result.change)}"
        if result.ci is not None:
            time += f" [{_pct(result.ci[0])}, {_pct(result.ci[1])}]"
        rate = f"{self.unit}/s {_pct(result.rate_change)}"
        return [self.nodeid, word, time, rate, str(result.pairs), self._counters()]

    def _counters(self) -> str:
        parts = []
        for change in self.counters:
            mark = " ROSE" if change.rose else " fell" if change.fell else ""
            parts.append(f"{change}{mark}")
        return ", ".join(parts) or "-"


def _load(path: Path) -> Run | None:
    try:
        return load_run(path)
    except (PerfsuiteError, OSError):
        return None


def _counters(a: Bench | None, b: Bench | None) -> tuple[CounterChange, ...]:
    old = a.counters() if a else {}
    new = b.counters() if b else {}
    return tuple(CounterChange(n, old.get(n), new.get(n)) for n in dict.fromkeys([*old, *new]))


@dataclass
class Verdicts:
    """Every row of one A/B, with who the sides were."""

    rows: list[Row]
    specs: list[SideSpec]
    seed: int
    runs: list[BenchRun] = field(default_factory=list)

    @classmethod
    def build(
        cls, outcome: Outcome, a_json: Path, b_json: Path, specs: Sequence[SideSpec]
    ) -> Verdicts:
        run_a, run_b = _load(a_json), _load(b_json)
        rows = []
        for bench in outcome.benches:
            a = run_a.benches.get(bench.nodeid) if run_a else None
            b = run_b.benches.get(bench.nodeid) if run_b else None
            saved = b or a
            unit = saved.unit if saved is not None else "items"
            status = f"skipped ({bench.skipped})" if bench.skipped else None
            rows.append(Row(bench.nodeid, bench, unit, _counters(a, b), status))
        rows += [Row(n, None, status="removed (base only)") for n in outcome.removed]
        rows += [Row(n, None, status="added (candidate only)") for n in outcome.added]
        return cls(rows, list(specs), outcome.seed, list(outcome.benches))

    @classmethod
    def merge(cls, parts: Sequence[Verdicts]) -> Verdicts:
        """One A/B's verdicts from its sessions (one per bench file): every session's
        measured benches first, in order, then the added and removed ones."""
        if not parts:
            raise ValueError("no session to merge")
        rows = [r for part in parts for r in part.rows if r.run is not None]
        rows += [r for part in parts for r in part.rows if r.run is None]
        runs = [run for part in parts for run in part.runs]
        return cls(rows, parts[0].specs, parts[0].seed, runs)

    def confirmed(self, checks: Sequence[Verdicts], how: str) -> Verdicts:
        """These verdicts with each row that ``checks`` measured (the suspects, run
        again) replaced by its check's row, its status saying ``how`` and the first
        estimate; the first estimate is never pooled in, as it was chosen for being
        high. A check that says slower or faster the other way from the first estimate
        (:func:`against`) makes the row inconclusive."""
        again = {r.nodeid: r for part in checks for r in part.rows if r.run is not None}
        rows = []
        for row in self.rows:
            new = again.get(row.nodeid)
            first = row.run.result if row.run else None
            if new is None or first is None:
                rows.append(row)
                continue
            said = how.format(pairs=len(new.run.sessions) or 1) if new.run else how
            status = f"{said}; first pair {_pct(first.change)}"
            run = replace(new.run, first=first) if new.run else None
            if run and run.result and against(first, run.result):
                run = replace(run, result=replace(run.result, verdict=Verdict.INCONCLUSIVE))
                status += ", the other way: not confirmed"
            elif run and run.result and run.result.futile:
                status += ", stopped early: more could not decide"
            rows.append(Row(row.nodeid, run, row.unit, row.counters, status))
        runs = [r.run for r in rows if r.run is not None]
        return Verdicts(rows, self.specs, self.seed, runs)

    @classmethod
    def pool(cls, sessions: Sequence[Verdicts], alpha: float = ALPHA) -> Verdicts:
        """One file's verdicts from several fresh pairs of processes (``--processes``):
        a bench measured in every pair is judged across the pairs
        (:func:`~perfsuite.verdict.paired.judge_processes`), its blocks kept in order;
        any other bench keeps its first row (skipped, added, removed)."""
        if len(sessions) == 1:
            return sessions[0]
        rows: list[Row] = []
        runs: list[BenchRun] = []
        nodeids = list(dict.fromkeys(r.nodeid for part in sessions for r in part.rows))
        for nodeid in nodeids:
            found = [r for part in sessions for r in part.rows if r.nodeid == nodeid]
            measured = [r.run for r in found if r.run is not None and r.run.result is not None]
            if len(measured) < len(sessions):
                kept = next(r for r in found if r.run is None or r.run.result is None)
                rows.append(kept)
                runs += [kept.run] if kept.run is not None else []
                continue
            pooled = _pool_runs(measured, alpha)
            rows.append(Row(nodeid, pooled, found[0].unit, found[0].counters, None))
            runs.append(pooled)
        return cls(rows, sessions[0].specs, sessions[0].seed, runs)

    @property
    def regressed(self) -> bool:
        return any(row.regressed for row in self.rows)

    def title(self) -> str:
        a, b = self.specs
        return f"A = {a.revision.label}, B = {b.revision.label}"

    def conclusion(self) -> str:
        bad = [row.nodeid for row in self.rows if row.regressed]
        if bad:
            return f"REGRESSION in {len(bad)} bench(es): {', '.join(bad)}"
        return "no regression"

    def text_lines(self) -> list[str]:
        lines = [f"perfsuite ab: {self.title()} (B against A; seed {self.seed})"]
        if self.rows:
            lines += format_table([row.cells() for row in self.rows], HEADER)
        else:
            lines.append("no bench in the selection")
        lines.append(f"perfsuite ab: {self.conclusion()}")
        return lines

    def markdown_lines(self) -> list[str]:
        lines = [
            "## perfsuite ab",
            "",
            f"{self.title()}, blocks alternated in one session (seed {self.seed}).",
            "",
            "| " + " | ".join(HEADER) + " |",
            "|" + "|".join(["---", "---", "---:", "---:", "---:", "---"]) + "|",
        ]
        for row in self.rows:
            cells = [c.replace("|", "\\|") for c in row.cells()]
            cells[0] = f"`{cells[0]}`"
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", f"**{self.conclusion()}**", ""]
        return lines


def _pool_runs(runs: Sequence[BenchRun], alpha: float) -> BenchRun:
    """Several pairs of processes' runs of one bench as one, judged across the pairs."""
    first = runs[0]
    pooled = BenchRun(first.nodeid, first.threshold, warmup=dict(first.warmup))
    for run in runs:
        pooled.a_blocks += run.a_blocks
        pooled.b_blocks += run.b_blocks
        pooled.order += run.order
        pooled.drained += run.drained
        pooled.seconds += run.seconds
        pooled.unsettled += run.unsettled
        pooled.sessions.append(math.expm1(statistics.median(run.ratios)))
        pooled.session_pairs.append(len(run.ratios))
        pooled.started += run.started
    higher = first.result.higher_is_better if first.result else False
    pooled.result = judge_processes(
        [run.ratios for run in runs], first.threshold, alpha, higher_is_better=higher
    )
    return pooled


def _result(result: PairedResult | None) -> dict[str, Any]:
    """The verdict fields of one bench (or of a confirmed bench's first pair of
    processes, under ``first``), as pairs.json keeps them."""
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
    }


def _slug(nodeid: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in nodeid)
    return keep.strip("_")[:120] or "bench"


def plot_ratios(run: BenchRun, path: Path) -> None:
    """A PNG of one bench's paired changes in order, with the threshold band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    changes = [math.expm1(d) * 100 for d in run.ratios]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    try:
        ax.axhspan(-run.threshold * 100, run.threshold * 100, color="0.92", label="threshold")
        ax.axhline(0, color="0.5", linewidth=0.8)
        ax.plot(range(1, len(changes) + 1), changes, "o-", markersize=3, label="pair B/A")
        if run.result is not None:
            ax.axhline(run.result.change * 100, color="C3", linewidth=1, label="median")
        ax.set_xlabel("pair")
        ax.set_ylabel("time change B vs A [%]")
        ax.set_title(run.nodeid[-80:], fontsize=8)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)


def write_report(
    out: Path,
    verdicts: Verdicts,
    side_json: Sequence[Path],
    side_logs: Sequence[Path] = (),
    notes: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the report folder atomically (a temporary sibling renamed into place):
    ``notes`` end ``summary.md``, ``files`` (name: text) are written beside it."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        summary = [*verdicts.markdown_lines(), *(f"{note}\n" for note in notes)]
        (tmp / "summary.md").write_text("\n".join(summary))
        for name, text in (files or {}).items():
            (tmp / name).write_text(text)
        for name, path in zip("AB", side_json, strict=True):
            if path.is_file():
                shutil.copyfile(path, tmp / f"{name}.json")
        for name, path in zip("AB", side_logs, strict=False):
            if path.is_file():
                shutil.copyfile(path, tmp / f"{name}.log")
        pairs: list[dict[str, Any]] = []
        for run in verdicts.runs:
            pairs.append(
                {"nodeid": run.nodeid, "order": run.order, "a_blocks": run.a_blocks,
                 "b_blocks": run.b_blocks, "drained": run.drained, "warmup": run.warmup,
                 "unsettled": run.unsettled, "threshold": run.threshold,
                 "skipped": run.skipped, "seconds": round(run.seconds, 3),
                 "sessions": run.sessions, "session_pairs": run.session_pairs,
                 "started": run.started, **_result(run.result),
                 **({"first": _result(run.first)} if run.first else {})}
            )  # fmt: skip
            if run.a_blocks and run.b_blocks:
                plot_ratios(run, tmp / f"{_slug(run.nodeid)}.png")
        (tmp / "pairs.json").write_text(json.dumps(pairs, indent=1))
        old = out.with_name(f".{out.name}.old")
        if out.exists():
            shutil.rmtree(old, ignore_errors=True)
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(out.iterdir())
