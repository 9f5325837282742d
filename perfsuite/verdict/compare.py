"""Comparing two runs: every bench of the current run judged against the baseline's,
the benches added and removed, the machines' differences, and the gate's decision.

Judging one bench is :mod:`perfsuite.verdict.judge`; what makes two machines the same
is :mod:`perfsuite.verdict.machine`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from perfsuite.verdict.judge import (
    DEFAULT_THRESHOLD,
    HISTORY_RUNS,
    BenchVerdict,
    CounterChange,
    history_medians,
    judge_bench,
    noise_band,
)
from perfsuite.verdict.machine import Difference, machine_mismatch
from perfsuite.verdict.runs import Bench, Run
from perfsuite.verdict.stats import Verdict

__all__ = [
    "DEFAULT_THRESHOLD",
    "HISTORY_RUNS",
    "BenchVerdict",
    "CounterChange",
    "Difference",
    "GateDecision",
    "Outcome",
    "RunComparison",
    "compare_runs",
    "gate_decision",
    "machine_mismatch",
    "noise_band",
    "pairs",
]


@dataclass(frozen=True)
class RunComparison:
    """Every bench of ``current`` judged against ``baseline``."""

    baseline: Run
    current: Run
    verdicts: list[BenchVerdict]
    added: list[str]
    removed: list[str]
    mismatch: list[Difference] = field(default_factory=list)

    @property
    def regressions(self) -> list[BenchVerdict]:
        return [v for v in self.verdicts if v.regressed]

    @property
    def not_comparable(self) -> list[BenchVerdict]:
        return [v for v in self.verdicts if v.not_comparable]

    def counts(self) -> dict[str, int]:
        """How many benches got each verdict (plus ``not comparable``)."""
        tally = {v.value: 0 for v in Verdict}
        tally["not comparable"] = 0
        for item in self.verdicts:
            key = item.verdict.value if item.verdict is not None else "not comparable"
            tally[key] += 1
        return tally


def pairs(baseline: Run, current: Run) -> Iterator[tuple[Bench, Bench]]:
    """Benches present in both runs, in the current run's order."""
    for name, bench in current.benches.items():
        if name in baseline.benches:
            yield baseline.benches[name], bench


def compare_runs(
    baseline: Run,
    current: Run,
    default_threshold: float = DEFAULT_THRESHOLD,
    history: Sequence[Run] = (),
) -> RunComparison:
    """Judge every bench of ``current`` present in ``baseline``; list added and removed ones.

    ``history`` is the earlier runs saved on this machine, oldest first (the baseline
    among them): the run-to-run noise they show can widen a bench's threshold.
    """
    comparable = [run for run in history if not machine_mismatch(run, current)]
    verdicts = [
        judge_bench(b, c, default_threshold, history_medians(comparable, c))
        for b, c in pairs(baseline, current)
    ]
    added = [n for n in current.benches if n not in baseline.benches]
    removed = [n for n in baseline.benches if n not in current.benches]
    return RunComparison(
        baseline, current, verdicts, added, removed, machine_mismatch(baseline, current)
    )


class Outcome(enum.Enum):
    """What a gate concludes from a comparison."""

    PASS = "pass"
    REGRESSION = "regression"
    MISMATCH = "machine mismatch"


@dataclass(frozen=True)
class GateDecision:
    """The gate's outcome and the one line that explains it."""

    outcome: Outcome
    message: str

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASS


def gate_decision(
    comparison: RunComparison,
    allow_mismatch: bool,
    allow_flag: str = "--perf-allow-machine-mismatch",
) -> GateDecision:
    """Regression if any bench is slower or a counter rose; refused on a machine mismatch."""
    if comparison.mismatch and not allow_mismatch:
        what = "; ".join(str(d) for d in comparison.mismatch)
        return GateDecision(
            Outcome.MISMATCH,
            f"cannot judge: the baseline is from a different machine or stack "
            f"({what}); pass {allow_flag} to gate anyway",
        )
    judged = [v for v in comparison.verdicts if not v.not_comparable]
    if comparison.removed and not judged:
        return GateDecision(
            Outcome.MISMATCH,
            f"cannot judge: none of the baseline's {len(comparison.removed)} benches ran "
            "comparably in this run (skipped, failed or renamed?); a gate with nothing "
            "compared does not pass",
        )
    regressions = comparison.regressions
    if regressions:
        parts = []
        for item in regressions:
            why = [item.verdict.value] if item.verdict is Verdict.SLOWER else []
            why.extend(str(c) for c in item.counters_rose)
            parts.append(f"{item.label} ({', '.join(why)})")
        return GateDecision(
            Outcome.REGRESSION,
            f"{len(regressions)} regression{'s' if len(regressions) > 1 else ''}: "
            + "; ".join(parts),
        )
    return GateDecision(Outcome.PASS, "no bench slower, no exact counter rose")
