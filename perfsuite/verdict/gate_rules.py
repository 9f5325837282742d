"""The gate's rules: what a comparison of two runs concludes, and why.

* **regression**: a bench slower by a test of significance, or an exact counter rose;
* **machine mismatch**: the baseline comes from another machine or stack (refused
  unless allowed);
* **nothing judged**: no bench could be compared, because the baseline was saved at
  another ``--perf-scale`` or on another ``--perf-images`` folder, holds no benches, has
  timings all zero, or none of its benches ran: a gate that judged nothing does not pass;
* **pass** otherwise. Benches with too few samples for the rank test are shown with
  their median move but never fail on their own (the history and ``perfsuite ab``
  judge them).

:mod:`perfsuite.verdict.compare` re-exports :class:`Outcome`, :class:`GateDecision`
and :func:`gate_decision`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfsuite.verdict.stats import Verdict

if TYPE_CHECKING:
    from perfsuite.verdict.compare import RunComparison


class Outcome(enum.Enum):
    """What a gate concludes from a comparison."""

    PASS = "pass"
    REGRESSION = "regression"
    MISMATCH = "machine mismatch"
    NOTHING_JUDGED = "nothing judged"


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
    nothing = nothing_judged(comparison)
    if nothing is not None:
        return GateDecision(
            Outcome.NOTHING_JUDGED,
            f"cannot judge: {nothing}; a gate that judged nothing does not pass",
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
    unjudged = [v.label for v in comparison.verdicts if v.too_few_samples]
    message = "no bench slower, no exact counter rose"
    if unjudged:
        message += (
            f" ({len(unjudged)} with too few samples to judge, left to perfsuite history "
            "and perfsuite ab)"
        )
    return GateDecision(Outcome.PASS, message)


def nothing_judged(comparison: RunComparison) -> str | None:
    """Why no bench of ``comparison`` could be judged, or ``None`` when one was."""
    if any(not v.not_comparable for v in comparison.verdicts):
        return None
    baseline, current = comparison.baseline, comparison.current
    if not baseline.benches:
        return f"the baseline {baseline.name} holds no benches (an empty benchmark list)"
    if not current.benches:
        return "this run measured no benches"
    removed = ""
    if comparison.removed:
        removed = (
            f"none of the baseline's {len(comparison.removed)} benches ran comparably in this "
            "run (skipped, failed or renamed?)"
        )
    if not comparison.verdicts:
        return removed
    reasons: dict[str, int] = {}
    for item in comparison.verdicts:
        reason = item.not_comparable or ""
        reasons[reason] = reasons.get(reason, 0) + 1
    listed = "; ".join(f"{n} x {why}" for why, n in reasons.items())
    hint = ""
    if any("scale" in why for why in reasons):
        hint += "; compare runs saved at the same --perf-scale"
    if any("dataset_hash" in why for why in reasons):
        hint += "; compare runs on the same --perf-images folder"
    found = f"none of the {len(comparison.verdicts)} benches was comparable ({listed}){hint}"
    return f"{removed}; {found}" if removed else found
