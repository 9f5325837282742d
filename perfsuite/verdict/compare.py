"""Comparing two runs: every bench of the current run judged against the baseline's,
the benches added and removed, and the machines' differences.

Judging one bench is :mod:`perfsuite.verdict.judge`; what makes two machines the same
is :mod:`perfsuite.verdict.machine`; what the gate concludes from a comparison is
:mod:`perfsuite.verdict.gate_rules`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from perfsuite.verdict.judge import (
    DEFAULT_THRESHOLD,
    HISTORY_RUNS,
    BenchVerdict,
    CounterChange,
    history_medians,
    history_peaks,
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
    "within_selection",
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
    #: baseline benches this run did not select (``-k``, ``-m``, narrower paths)
    unselected: list[str] = field(default_factory=list)

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
        judge_bench(
            b,
            c,
            default_threshold,
            history_medians(comparable, c),
            threshold_override,
            history_peaks(comparable, c),
        )
        for b, c in pairs(baseline, current)
    ]
    added = [n for n in current.benches if n not in baseline.benches]
    removed = [n for n in baseline.benches if n not in current.benches]
    return RunComparison(
        baseline, current, verdicts, added, removed, machine_mismatch(baseline, current)
    )


def _covers(where: Path, prefix: str, file: Path, test: str) -> bool:
    """Whether the argument ``where::prefix`` (``prefix`` may be empty) selects the test
    ``test`` of ``file``."""
    if not prefix:
        return file == where or where in file.parents
    return file == where and (test == prefix or test.startswith((f"{prefix}[", f"{prefix}::")))


def within_selection(
    comparison: RunComparison,
    args: Sequence[str],
    invocation_dir: Path,
    rootpath: Path,
    deselected: Collection[str],
) -> RunComparison:
    """``comparison`` with the baseline benches a session did not select moved from
    ``removed`` to ``unselected``: those it deselected (``-k``, ``-m``) and those outside
    the paths and node ids it was given (``args``, from ``invocation_dir``; bench names
    are node ids relative to ``rootpath``). A bench inside the selection and absent
    from the run stays removed."""
    wanted = [((invocation_dir / p).resolve(), t) for p, _, t in (a.partition("::") for a in args)]
    root = rootpath.resolve()

    def selected(name: str) -> bool:
        path, _, test = name.partition("::")
        file = (root / path).resolve()  # as the arguments are: symlinks and .. alike
        covered = any(_covers(where, prefix, file, test) for where, prefix in wanted)
        return name not in deselected and (covered or not wanted)

    chosen = {name: selected(name) for name in comparison.removed}
    keep = [name for name, inside in chosen.items() if inside]
    others = [name for name, inside in chosen.items() if not inside]
    return replace(comparison, removed=keep, unselected=[*comparison.unselected, *others])
