"""One A/B's verdicts: every bench's row, who the sides were, and the verdict table.

:class:`Verdicts` is built from what one pair of processes measured (its
:data:`~perfsuite.ab.outcome.Outcome`), merged over the sessions of bench files,
pooled over fresh pairs of processes and updated with the rows of a confirmation;
:meth:`Verdicts.text_lines` and :meth:`Verdicts.markdown_lines` are its table (the report
folder is :mod:`perfsuite.ab.report`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfsuite.ab.outcome import BenchRun, Outcome
from perfsuite.ab.rows import HEADER, Row, against
from perfsuite.ab.sidespec import SideSpec
from perfsuite.bench.summary import format_table
from perfsuite.envs.build import changes_text
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.judge import counter_changes
from perfsuite.verdict.paired import PAIRED_ALPHA, PairedResult, judge_processes
from perfsuite.verdict.runs import Run, load_run
from perfsuite.verdict.stats import Verdict
from perfsuite.verdict.table import code_span, markdown_table, pct

#: the status of a bench only one side has: listed, never run (nothing to compare it with)
REMOVED, ADDED = "removed (base only), not run", "added (candidate only), not run"
#: a confirmation that pointed the other way from the estimate that made the suspect
OTHER_WAY = "the other way: not confirmed"


def _held_to(lead: PairedResult, check: PairedResult | None) -> PairedResult | None:
    """``check``, made inconclusive where it is :func:`against` ``lead``, the suspect's estimate."""
    if check is None or not against(lead, check):
        return check
    return replace(check, verdict=Verdict.INCONCLUSIVE)


def _load(path: Path) -> Run | None:
    try:
        return load_run(path)
    except (PerfsuiteError, OSError):
        return None


@dataclass
class Verdicts:
    """Every row of one A/B, with who the sides were."""

    rows: list[Row]
    specs: list[SideSpec]
    seed: int

    @property
    def runs(self) -> list[BenchRun]:
        """The measured rows' runs (skipped ones too), in order."""
        return [row.run for row in self.rows if row.run is not None]

    @classmethod
    def build(
        cls, outcome: Outcome, seed: int, a_json: Path, b_json: Path, specs: Sequence[SideSpec]
    ) -> Verdicts:
        benches, removed, added = outcome
        run_a, run_b = _load(a_json), _load(b_json)
        rows = []
        for bench in benches:
            a = run_a.benches.get(bench.nodeid) if run_a else None
            b = run_b.benches.get(bench.nodeid) if run_b else None
            saved = b or a
            unit = saved.unit if saved is not None else "calls"
            status = f"skipped ({bench.skipped})" if bench.skipped else None
            rows.append(Row(bench.nodeid, bench, unit, counter_changes(a, b), status))
        rows += [Row(n, None, status=REMOVED) for n in removed]
        rows += [Row(n, None, status=ADDED) for n in added]
        return cls(rows, list(specs), seed)

    @classmethod
    def merge(cls, parts: Sequence[Verdicts]) -> Verdicts:
        """One A/B's verdicts from its sessions (one per bench file, at least one): every
        session's measured benches first, in order, then the added and removed ones."""
        rows = [r for part in parts for r in part.rows if r.run is not None]
        rows += [r for part in parts for r in part.rows if r.run is None]
        return cls(rows, parts[0].specs, parts[0].seed)

    def confirmed(
        self,
        checks: Sequence[Verdicts],
        memory: Collection[str] = (),
        either_way: Collection[str] = (),
    ) -> Verdicts:
        """These verdicts with each row that ``checks`` measured (the suspects, run
        again) replaced by its check's row, its status saying in how many pairs and the
        first estimate (and a rechecked `same`'s second), neither ever pooled in. A check
        whose time, or CPU per call, says slower or faster the other way from the
        estimate that made the bench a suspect (:attr:`Row.suspicion`, or the first
        pair's CPU for a suspect by its CPU; :func:`against`) makes that measure
        inconclusive, unless the bench is in ``either_way``
        (:attr:`perfsuite.ab.confirm.Suspects.either`): a CPU that rose in the fresh
        pairs of a bench its first pair read faster is as unconfirmed as its time. A
        row in ``memory`` (:attr:`perfsuite.ab.confirm.Suspects.memory`) keeps its own time
        verdict and takes only the check's peak memory (:attr:`BenchRun.memory`)."""
        again = {r.nodeid: r for part in checks for r in part.rows if r.run is not None}
        rows = []
        for row in self.rows:
            new, before = again.get(row.nodeid), row.run
            if new is None or new.run is None or before is None or before.result is None:
                rows.append(row)
                continue
            if row.nodeid in memory:  # no peaks from the check (unmeasured): as it was
                peaks = new.run.peaks_by_pair()
                run = replace(before, pair_peaks=peaks)
                pairs = "1 pair" if len(peaks) == 1 else f"{len(peaks)} pairs"
                status = f"peak memory measured again in {pairs} of processes"
                rows.append(replace(row, run=run, status=status) if peaks else row)
                continue
            first, second = before.result, before.second
            lead = second or first  # Row.suspicion: what made it a suspect
            status = f"confirmation in {len(new.run.sessions) or 1} pairs of processes; first pair "
            status += pct(first.change) + (f", second pair {pct(second.change)}" if second else "")
            run = replace(new.run, first=first, second=second)
            # a CPU suspect's question is its CPU's first estimate; any other's, its time's
            cpu_lead = before.cpu if row.cpu_slower and before.cpu else lead
            result, cpu = _held_to(lead, run.result), _held_to(cpu_lead, run.cpu)
            if (result is not run.result or cpu is not run.cpu) and row.nodeid not in either_way:
                run = replace(run, result=result, cpu=cpu)
                status += f", {OTHER_WAY}"
            elif run.result and run.result.futile:
                status += ", stopped early: more could not decide"
            rows.append(replace(row, run=run, status=status))
        return Verdicts(rows, self.specs, self.seed)

    @classmethod
    def pool(cls, sessions: Sequence[Verdicts], alpha: float = PAIRED_ALPHA) -> Verdicts:
        """One file's verdicts from several fresh pairs of processes:
        a bench measured in every pair is judged across the pairs
        (:func:`~perfsuite.verdict.paired.judge_processes`), its blocks kept in order;
        any other bench keeps its first row (skipped, added, removed)."""
        if len(sessions) == 1:
            return sessions[0]
        rows: list[Row] = []
        for nodeid in dict.fromkeys(r.nodeid for part in sessions for r in part.rows):
            found = [r for part in sessions for r in part.rows if r.nodeid == nodeid]
            measured = [r.run for r in found if r.run is not None and r.run.result is not None]
            if len(measured) < len(sessions):
                rows.append(next(r for r in found if r.run is None or r.run.result is None))
            else:
                rows.append(replace(found[0], run=_pool_runs(measured, alpha), status=None))
        return cls(rows, sessions[0].specs, sessions[0].seed)

    def limited(self, nodeids: Collection[str]) -> Verdicts:
        """These verdicts with only the rows of ``nodeids``."""
        return Verdicts([row for row in self.rows if row.nodeid in nodeids], self.specs, self.seed)

    @property
    def regressed(self) -> bool:
        return any(row.regressed for row in self.rows)

    def not_judged(self) -> str | None:
        """Why the A/B cannot pass (one line, naming the benches at fault and what would
        decide them), or ``None``: nothing was measured on both sides, or a bench is
        too noisy to have caught a regression of twice its threshold."""
        if self.regressed:
            return None
        if not self.rows:
            return "no bench in the selection (check the pytest arguments after --)"
        noisy = [row for row in self.rows if row.too_noisy]
        if noisy:
            listed = "; ".join(_with_bound(row) for row in noisy)
            hints = []
            if any(row.run and row.run.pool for row in noisy):
                hints.append(
                    "a benchmark.pedantic bench with setup= alternates only the rounds= it "
                    "asks for: more of them would decide"
                )
            if any(not (row.run and row.run.pool) for row in noisy):
                hints.append(
                    "more pairs (--max-seconds, --max-pairs) or a quieter machine would decide"
                )
            return (
                f"{len(noisy)} bench(es) too noisy to have caught a regression of twice "
                f"their threshold: {listed}; " + "; ".join(hints)
            )
        if any(row.verdict is not None for row in self.rows):  # measured on both sides
            return None
        reasons = Counter(row.status or "not measured" for row in self.rows)
        listed = "; ".join(f"{n} {why}" for why, n in reasons.items())
        hints = []
        if REMOVED in reasons or ADDED in reasons:
            hints.append(
                "benches found on one side only: their node ids differ between A and B "
                "(renamed or moved?)"
            )
        if any("without measuring" in why for why in reasons):
            hints.append(
                "a bench that passed without measuring used neither the perf nor the "
                "benchmark fixture"
            )
        return listed + "".join(f"; {hint}" for hint in hints)

    def resolution_lines(self, across: bool = False) -> list[str]:
        """For each bench left inconclusive, what its evidence resolved and about how
        much more ``±threshold`` would take here at that pace (a half-width shrinks as
        one over the square root of the pairs). Of the first pairs of processes (their
        seconds): ``x.py::t resolves ±7.0% in 60 s here; ±5% needs about 118 s
        (--max-seconds)``; ``across`` pairs of processes, for a bench the fresh pairs
        left inconclusive: ``x.py::t resolves ±9.0% across 12 pairs of processes here;
        ±5% needs about 39 pairs (--confirm)``. Only where the interval is wider than
        ±threshold, and not for a confirmation that pointed the other way."""
        lines = []
        for row in self.rows:
            result, run = (row.run.result, row.run) if row.run else (None, None)
            if result is None or run is None or result.decisive or result.ci is None:
                continue
            half = (result.ci[1] - result.ci[0]) / 2
            share = (half / result.threshold) ** 2
            pairs = len(run.sessions)
            other_way = row.status is not None and OTHER_WAY in row.status
            if share <= 1 or other_way or bool(pairs) != across or not (across or run.seconds):
                continue
            have, need = f"in {run.seconds:.0f} s", f"{run.seconds * share:.0f} s (--max-seconds)"
            if across:
                have = f"across {pairs} pairs of processes"
                need = f"{math.ceil(pairs * share)} pairs (--confirm)"
            lines.append(
                f"{row.nodeid} resolves ±{half * 100:.1f}% {have} here; "
                f"±{result.threshold * 100:g}% needs about {need}"
            )
        return lines

    def title(self) -> str:
        a, b = self.specs
        title = f"A = {a.revision.label}, B = {b.revision.label}"
        return f"{title} ({changes_text(b.upgrade)})" if b.upgrade else title

    def conclusion(self) -> str:
        """The headline: a regression, nothing decided (and why), or no regression,
        with how many benches were judged at their threshold and each other one's
        bound."""
        bad = [row.nodeid for row in self.rows if row.regressed]
        if bad:
            return f"REGRESSION in {len(bad)} bench(es): {', '.join(bad)}"
        why = self.not_judged()
        if why is not None:
            word = "UNDECIDED" if any(row.too_noisy for row in self.rows) else "NOTHING JUDGED"
            return f"{word}: {why}"
        judged = sum(row.judged for row in self.rows)
        message = f"no regression: {judged} bench(es) judged at their threshold"
        bounded = [row for row in self.rows if row.bounded]
        if bounded:
            message += f"; {len(bounded)} with a bound under twice their threshold: "
            message += "; ".join(_with_bound(row) for row in bounded)
        left = len(self.rows) - judged - len(bounded)
        return message + (f"; {left} not measured (see their rows)" if left else "")

    def text_lines(self) -> list[str]:
        lines = [f"perfsuite ab: {self.title()} (B against A; seed {self.seed})"]
        if self.rows:  # else the conclusion says there was no bench
            lines += format_table([row.cells() for row in self.rows], HEADER)
        lines.append(f"perfsuite ab: {self.conclusion()}")
        return lines

    def markdown_lines(self) -> list[str]:
        """The table as ``summary.md`` shows it, its numbers right-aligned."""
        rows = [[code_span(row.nodeid), *row.cells()[1:]] for row in self.rows]
        table = markdown_table(rows, HEADER, right=(2, 3, 4))
        heading = f"{self.title()}, blocks alternated in one session (seed {self.seed})."
        return ["## perfsuite ab", "", heading, "", *table, "", f"**{self.conclusion()}**", ""]


def _with_bound(row: Row) -> str:
    """``bench: no regression above +6.1% (threshold 5%)``: a row's bound."""
    result = row.run.result if row.run else None
    if result is None:
        return row.nodeid
    return f"{row.nodeid}: {result.bound_text()} (threshold {result.threshold * 100:g}%)"


def _pool_runs(runs: Sequence[BenchRun], alpha: float) -> BenchRun:
    """Several pairs of processes' runs of one bench as one, judged across the pairs."""
    first = runs[0]
    pooled = BenchRun(first.nodeid, first.threshold, warmup=dict(first.warmup))
    for run in runs:
        pooled.a_blocks += run.a_blocks
        pooled.b_blocks += run.b_blocks
        pooled.order += run.order
        pooled.drained += run.drained
        pooled.started += run.started
        pooled.a_cpu += run.a_cpu
        pooled.b_cpu += run.b_cpu
        pooled.seconds += run.seconds
        pooled.unsettled += run.unsettled
        pooled.sessions.append(math.expm1(statistics.median(run.ratios)))
        pooled.session_pairs.append(len(run.ratios))
        pooled.cpu_missing |= run.cpu_missing or len(run.a_cpu) != len(run.a_blocks)
        for side, calls in run.calls.items():
            pooled.calls.setdefault(side, calls)
        for side, peak in run.peak_mb.items():
            pooled.peak_mb[side] = max(peak, pooled.peak_mb.get(side, 0.0))
        pooled.pair_peaks += run.peaks_by_pair()
    pooled.memory_threshold = first.memory_threshold
    cpu = [run.cpu_ratios() for run in runs]
    if all(r is not None for r in cpu):  # across the pairs, as the time: layout moves CPU too
        pooled.cpu = judge_processes([r for r in cpu if r is not None], first.threshold, alpha)
    higher = first.result.higher_is_better if first.result else False
    pooled.result = judge_processes(
        [run.ratios for run in runs], first.threshold, alpha, higher_is_better=higher
    )
    return pooled
