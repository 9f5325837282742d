"""Comparing two runs: every bench of the current run judged against the baseline's,
the benches added and removed, and the machines' differences.

Judging one bench is :mod:`perfsuite.verdict.judge`; what makes two machines the same
is :mod:`perfsuite.verdict.machine`; what the gate concludes from a comparison is
:mod:`perfsuite.verdict.gate_rules`.
"""

from __future__ import annotations

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
    "RunComparison",
    "compare_runs",
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
    threshold_override: float | None = None,
) -> RunComparison:
    """Judge every bench of ``current`` present in ``baseline``; list added and removed ones.

    ``history`` is the earlier runs saved on this machine, oldest first (the baseline
    among them): the run-to-run noise they show can widen a bench's threshold.
    ``threshold_override`` (``perfsuite compare --threshold``) replaces the thresholds
    the benches recorded.
    """
    comparable = [run for run in history if not machine_mismatch(run, current)]
    verdicts = [
        judge_bench(b, c, default_threshold, history_medians(comparable, c), threshold_override)
        for b, c in pairs(baseline, current)
    ]
    added = [n for n in current.benches if n not in baseline.benches]
    removed = [n for n in baseline.benches if n not in current.benches]
    return RunComparison(
        baseline, current, verdicts, added, removed, machine_mismatch(baseline, current)
    )
