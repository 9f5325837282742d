"""The gate's rules: what a comparison of two runs concludes, and why.

* **regression**: a bench slower, or taking more CPU per item, by a test of
  significance (under ``--perf-gate``, and confirmed by a same-session A/B:
  :mod:`perfsuite.suspects`), an exact counter that rose, or a peak memory that rose
  past the bench's memory threshold;
* **unconfirmed**: a suspect whose confirmation could not run or decide;
* **machine mismatch**: the baseline comes from another machine or stack (refused
  unless allowed);
* **nothing judged**: no exact counter rose and no bench could be compared, because
  the baseline was saved at another ``--perf-scale`` or on another ``--perf-images``
  folder, holds no benches, has timings all zero, none of its benches ran, or none
  could be decided (too few raw samples, every one inconclusive): a verdict that
  judged nothing does not pass;
* **pass** otherwise: at least one bench judged, none regressed. Benches with too few
  samples for the rank test are shown with their median move but never judged.

Each outcome has one exit status (``EXIT_STATUS``), shared by every command.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfsuite.exitcodes import ExitCode
from perfsuite.verdict.commits import machine_reason
from perfsuite.verdict.compare import RunComparison
from perfsuite.verdict.judge import MACHINE, NOT_SHOWN, BenchVerdict, Confirmed
from perfsuite.verdict.table import bound_text


class GateOutcome(enum.Enum):
    """What a gate concludes from a comparison."""

    PASS = "pass"
    REGRESSION = "regression"
    MISMATCH = "machine mismatch"
    NOTHING_JUDGED = "nothing judged"
    UNCONFIRMED = "unconfirmed"


#: each outcome's exit status, the same for every command
EXIT_STATUS = {
    GateOutcome.PASS: ExitCode.OK,
    GateOutcome.REGRESSION: ExitCode.REGRESSION,
    GateOutcome.MISMATCH: ExitCode.NOT_JUDGED,
    GateOutcome.NOTHING_JUDGED: ExitCode.NOT_JUDGED,
    GateOutcome.UNCONFIRMED: ExitCode.NOT_JUDGED,
}


@dataclass(frozen=True)
class GateDecision:
    """The gate's outcome and the one line that explains it."""

    outcome: GateOutcome
    message: str

    @property
    def passed(self) -> bool:
        return self.outcome is GateOutcome.PASS

    @property
    def exit_status(self) -> ExitCode:
        return EXIT_STATUS[self.outcome]


def no_baseline(saving: bool) -> GateDecision:
    """A gate's outcome with no baseline to compare with: nothing judged. ``saving``: this
    run is saved, so the next gate has one."""
    then = (
        "this run is saved: gate the next one against it"
        if saving
        else "save a run with --benchmark-autosave, then gate the next"
    )
    return GateDecision(
        GateOutcome.NOTHING_JUDGED,
        f"cannot judge: no baseline to compare with; a gate that judged nothing does not "
        f"pass ({then})",
    )


def _named(items: Sequence[BenchVerdict]) -> str:
    """Each of ``items`` with why it failed or stayed undecided; benches that share one
    reason (the suspects that followed one same-code sample) are named together before it,
    and the command that would decide them follows them all, so the line says each reason
    and each command once."""
    labels: dict[str, list[str]] = {}
    for item in items:
        labels.setdefault(_why(item), []).append(item.label)
    named = "; ".join(f"{', '.join(names)} ({why})" for why, names in labels.items())
    return named + _commands(items)


def _commands(items: Sequence[BenchVerdict]) -> str:
    """``; to confirm: COMMAND`` for each command that would decide one of ``items``
    (:attr:`Confirmed.to_confirm`), each once."""
    found = (item.confirmation.to_confirm for item in items if item.confirmation is not None)
    return "".join(f"; {words}" for words in dict.fromkeys(found) if words)


def _why(item: BenchVerdict) -> str:
    """Why ``item`` failed or stayed undecided."""
    why = [item.verdict.value] if item.suspect and item.verdict is not None else []
    if item.confirmation is not None and item.suspect:
        why = [item.confirmation.text]
    elif item.suspected:
        why = [item.suspected]
    if item.cpu_slower and item.cpu is not None and item.confirmation is None:
        why.append(f"CPU per item {item.cpu.change * 100:+.1f}%")
    why.extend(str(c) for c in item.counters_rose)
    if item.memory_rose and item.confirmation is None:
        why.append(str(item.memory))
    return ", ".join(why)


def gate_decision(
    comparison: RunComparison,
    allow_mismatch: bool,
    allow_flag: str = "--perf-allow-machine-mismatch",
    who: str = "a gate",
    bounds: bool = False,
) -> GateDecision:
    """Regression if a bench is slower (and, where confirmed, the confirmation agreed) or
    a counter rose; unconfirmed when a suspect's confirmation could not decide; refused
    on a machine mismatch or when nothing was judged (``who``, the command, names itself
    in that line); pass otherwise. A risen exact counter is judged whatever the time's
    verdict: it fails even where no time could be. With ``bounds`` (the gate), a
    comparable bench that is neither judged nor bounded (:attr:`BenchVerdict.too_noisy`)
    is unconfirmed too, named with its bound: it could not have caught a regression of
    twice its threshold."""
    if comparison.mismatch and not allow_mismatch:
        what = "; ".join(str(d) for d in comparison.mismatch)
        return GateDecision(
            GateOutcome.MISMATCH,
            f"cannot judge: the baseline is from a different machine or stack "
            f"({what}); pass {allow_flag} to judge anyway",
        )
    nothing = nothing_judged(comparison)
    if nothing is not None:
        return GateDecision(
            GateOutcome.NOTHING_JUDGED,
            f"cannot judge: {nothing}; {who} that judged nothing does not pass",
        )
    regressions = [v for v in comparison.regressions if not v.unconfirmed or v.counters_rose]
    failed = {v.fullname for v in regressions}
    unconfirmed = [v for v in comparison.verdicts if v.unconfirmed and v.fullname not in failed]
    undecided = (
        f"{len(unconfirmed)} suspect(s) could be neither confirmed nor cleared: "
        + _named(unconfirmed)
        if unconfirmed
        else ""
    )
    if regressions:
        count = len(regressions)
        return GateDecision(
            GateOutcome.REGRESSION,
            f"{count} regression{'s' if count > 1 else ''}: "
            + _named(regressions)
            + (f"; besides, {undecided}" if undecided else ""),
        )
    if unconfirmed:
        return GateDecision(GateOutcome.UNCONFIRMED, undecided)
    noisy = [v for v in comparison.verdicts if v.too_noisy] if bounds else []
    if noisy:
        return GateDecision(
            GateOutcome.UNCONFIRMED,
            f"{len(noisy)} bench(es) too noisy to have caught a regression of twice their "
            "threshold: "
            + "; ".join(
                f"{v.label} ({bound_text(v.bound)}, threshold {v.time.threshold * 100:g}%)"
                for v in noisy
                if v.time is not None
            )
            + "; more rounds (--perf-rounds) or a quieter machine would decide",
        )
    judged = sum(1 for v in comparison.verdicts if v.judged)
    message = f"no regression in {judged} judged bench{'es' if judged != 1 else ''}"
    screened = [v for v in comparison.verdicts if v.bounded and v.confirmation is None]
    if screened:
        message += (
            f"; {len(screened)} with a bound under twice their threshold ("
            + ", ".join(f"{v.label}: {bound_text(v.bound)}" for v in screened)
            + ")"
        )
    passed = [v for v in comparison.verdicts if v.suspect and v.confirmation is not None]
    kinds: dict[str, list[str]] = {}
    for item in passed:
        if item.confirmation is not None and item.confirmation.measured:
            kinds.setdefault(_passed_as(item.confirmation), []).append(_passed_name(item))
    for what in sorted(kinds, key=lambda what: (what != "cleared", what.startswith("not"))):
        message += f"; {len(kinds[what])} suspect(s) {what} ({', '.join(kinds[what])})"
    sampled = [
        v.label for v in passed if v.confirmation is not None and not v.confirmation.measured
    ]
    if sampled:
        message += (
            f"; {len(sampled)} suspect(s) of unchanged code passed with those the A/B "
            f"measured ({', '.join(sampled)})"
        )
    named = {v.label for v in passed}
    unjudged = [
        v.label
        for v in comparison.verdicts
        if not (v.judged or v.bounded or v.not_comparable or v.label in named)
    ]
    if unjudged:
        message += f"; {len(unjudged)} not judged (see their rows)"
    return GateDecision(GateOutcome.PASS, message)


def _passed_as(found: Confirmed) -> str:
    """How the closing line names a passed suspect's kind."""
    if found.outcome == NOT_SHOWN:
        return "not shown slower by their A/B"
    if found.outcome != MACHINE:
        return "cleared"
    return f"the machine's, {machine_reason(found)}"


def _passed_name(item: BenchVerdict) -> str:
    """A passed suspect's name, with its screen's bound where no A/B measured it (the
    machine's move): the largest regression the run itself did not rule out."""
    machine = item.confirmation is not None and item.confirmation.outcome == MACHINE
    if not (machine and item.bound is not None):
        return item.label
    return f"{item.label}: {bound_text(item.bound)}"


def nothing_judged(comparison: RunComparison) -> str | None:
    """Why no bench of ``comparison`` could be judged, or ``None`` when one was (a
    comparable bench whose exact counter rose is judged: a regression)."""
    if any(
        v.judged or v.bounded or (v.counters_rose and not v.not_comparable)
        for v in comparison.verdicts
    ):
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
        parts = [removed] if removed else []
        if comparison.added:
            parts.append(f"this run's {len(comparison.added)} benches are not in the baseline")
        if comparison.unselected:
            parts.append(
                f"{len(comparison.unselected)} of the baseline's benches are outside this "
                "run's selection (-k, -m or its paths)"
            )
        return "; ".join(parts) or "no bench is in both runs"
    reasons: dict[str, int] = {}
    for item in comparison.verdicts:
        reason = item.not_comparable or ""
        reasons[reason] = reasons.get(reason, 0) + 1
    undecided = [v for v in comparison.verdicts if not v.not_comparable]
    if undecided and len(undecided) == len(comparison.verdicts):
        fallbacks = {v.time.fallback for v in undecided if v.time is not None and v.time.fallback}
        bounds = ", ".join(
            f"{v.label} {bound_text(v.bound)}" for v in undecided if v.bound is not None
        )
        why = "; ".join(sorted(fallbacks)) or "every comparison inconclusive"
        why += f": {bounds}" if bounds and not fallbacks else ""
        tried = [
            v.confirmation.outcome
            for v in undecided
            if v.confirmation is not None and v.confirmation.outcome != MACHINE
        ]
        if tried:
            why += f"; the A/B did not decide them either ({', '.join(sorted(set(tried)))})"
            why += _commands(undecided)
        hint = (
            "" if fallbacks else "; more rounds (--perf-rounds) or a quieter machine would decide"
        )
        return f"none of the {len(undecided)} benches could be decided ({why}){hint}"
    listed = "; ".join(f"{n} x {why}" for why, n in reasons.items())
    hint = ""
    if any("scale" in why for why in reasons):
        hint += "; compare runs saved at the same --perf-scale"
    if any("dataset_hash" in why for why in reasons):
        hint += "; compare runs on the same --perf-images folder"
    found = f"none of the {len(comparison.verdicts)} benches was comparable ({listed}){hint}"
    return f"{removed}; {found}" if removed else found


def unmeasured(option: Callable[[str], Any]) -> str | None:
    """Why a gated session's options leave no bench measured (``option(dest)`` reads
    one), so that ``--perf-gate`` could judge nothing, or None."""
    for flag in ("benchmark_disable", "benchmark_skip"):
        if option(flag):
            name = "--" + flag.replace("_", "-")
            return (
                f"--perf-gate with {name}: no bench is measured, so nothing can be judged; "
                f"drop {name} or --perf-gate"
            )
    dist = option("dist")
    if dist not in (None, "no"):  # pytest-benchmark turns itself off under xdist
        workers = option("numprocesses")
        how = f"-n {workers}" if workers else f"--dist {dist}"
        return (
            f"--perf-gate with {how} (pytest-xdist): pytest-benchmark measures nothing in "
            "xdist's workers, so nothing can be judged; run the gate with -n 0"
        )
    return None
