"""The nightly verdict as Markdown, fit for ``$GITHUB_STEP_SUMMARY``, and the
confirmation it reports."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfsuite.exitcodes import ExitCode
from perfsuite.nightly.screen import MIN_NIGHTLY_HISTORY, Screening, Suspect
from perfsuite.outcomes import AbRun, decide, row_of
from perfsuite.verdict.commits import short_sha
from perfsuite.verdict.judge import CLEARED, CONFIRMED, MACHINE, UNCONFIRMED, Confirmed
from perfsuite.verdict.stats import MIN_BOUND_SAMPLES
from perfsuite.verdict.table import (
    CONFIRMED_WORDS,
    PASSED_WORDS,
    bound_text,
    code_span,
    markdown_table,
    pct,
)

if TYPE_CHECKING:
    from perfsuite.bisect.command import Outcome as BisectOutcome

#: the first line of a nightly's summary.md, by which its report folder is known
HEADING = "# perfsuite nightly"


@dataclass(frozen=True)
class Confirmation:
    """How the suspects whose A/B starts at one run (``base``) were confirmed: the A/B
    that ran (with its report's ``summary.md``), or why none ran (``machine``: both runs
    are of one commit on a clean tree, or none of the suspects' code or data differs
    between their commits, so a move is the machine's)."""

    ab: AbRun | None = None
    summary: str = ""
    skipped: str | None = None
    machine: bool = False
    base: str = ""
    suspects: tuple[str, ...] = ()  # their labels
    #: what a bisection of a confirmed regression needs: the base run's commit, the
    #: revision measured as tonight's, and the pytest arguments selecting the suspects
    base_sha: str | None = None
    candidate: str | None = None
    selection: tuple[str, ...] = ()
    #: what it made of each suspect, by label (:func:`suspect_outcome`)
    outcomes: tuple[tuple[str, Confirmed], ...] = ()

    @property
    def confirmed(self) -> bool:
        """The A/B failed (a suspect, or a bench ``-k`` selected beside them), or a
        suspect's row confirmed it."""
        if self.ab is not None and self.ab.status == ExitCode.REGRESSION:
            return True
        return any(found.outcome == CONFIRMED for _, found in self.outcomes)

    @property
    def fault(self) -> bool:
        """The A/B could not start, or ended with a fault's status."""
        return self.ab is not None and not self.ab.concluded

    @property
    def unconfirmed(self) -> bool:
        """The suspects stay undecided: no A/B could run (other than on one commit), or
        it judged nothing."""
        if self.ab is None:
            return not self.machine
        if self.ab.status == ExitCode.NOT_JUDGED:
            return True
        return any(found.outcome == UNCONFIRMED for _, found in self.outcomes)


@dataclass(frozen=True)
class Confirmations:
    """Tonight's confirmations: one per run its suspects were screened against."""

    parts: tuple[Confirmation, ...]

    @property
    def confirmed(self) -> bool:
        return any(part.confirmed for part in self.parts)

    @property
    def fault(self) -> bool:
        return any(part.fault for part in self.parts)

    @property
    def unconfirmed(self) -> bool:
        return any(part.unconfirmed for part in self.parts)

    @property
    def skipped(self) -> str | None:
        """Why no A/B ran, where one did not (each reason once), else None."""
        why = dict.fromkeys(part.skipped for part in self.parts if part.skipped is not None)
        return "; ".join(why) or None

    @property
    def why_unconfirmed(self) -> str:
        """Why suspects stay unconfirmed (each reason once)."""
        why = dict.fromkeys(
            part.skipped or "perfsuite ab could not decide"
            for part in self.parts
            if part.unconfirmed
        )
        return "; ".join(why)

    def outcome_of(self, label: str) -> Confirmed | None:
        """What its confirmation made of the suspect ``label``."""
        found = (dict(part.outcomes).get(label) for part in self.parts)
        return next((outcome for outcome in found if outcome is not None), None)


#: what a suspect's outcome makes of its row: the gate's table's words for a screen's
#: `slower` (:data:`perfsuite.verdict.table.CONFIRMED_WORDS`, ``PASSED_WORDS``)
OUTCOME_WORDS = {
    **{outcome: f"slower? {word}" for outcome, word in PASSED_WORDS.items()},
    **CONFIRMED_WORDS,
}
#: the A/B's measure for each metric a suspect is screened by
METRIC_WHATS = {"time": "time", "cpu/item": "cpu", "memory": "memory"}
#: a suspect the A/B has no row for, by the A/B's exit status
STATUS_OUTCOMES = {
    ExitCode.OK: (CLEARED, "perfsuite ab found no regression"),
    ExitCode.REGRESSION: (CONFIRMED, "perfsuite ab found a regression"),
    ExitCode.NOT_JUDGED: (UNCONFIRMED, "perfsuite ab could not decide"),
}


def suspect_outcome(suspect: Suspect, part: Confirmation) -> Confirmed:
    """What ``part``, the confirmation of a group of suspects, made of ``suspect``: the
    A/B's row for it by the measure that made it a suspect
    (:func:`perfsuite.outcomes.decide`), else (no row) the A/B's exit status; the
    machine's move (one commit, or no code or data changed); unconfirmed where no A/B ran."""
    ab = part.ab
    if ab is None:
        if part.machine:
            return Confirmed(MACHINE, part.skipped or "the machine's move")
        return Confirmed(UNCONFIRMED, f"not confirmed: {part.skipped}")
    if ab.status is not None and ab.concluded and row_of(ab, suspect.series.fullname) is None:
        outcome, text = STATUS_OUTCOMES[ExitCode(ab.status)]
        return Confirmed(outcome, text)
    return decide(suspect.series.fullname, ab, METRIC_WHATS[suspect.metric])


def bench_rows(screening: Screening, confirmation: Confirmations | None) -> list[list[str]]:
    """Every screened bench's row: bench, threshold, tonight's change, what it says.
    A suspect says what its confirmation made of it, a risen counter is a regression,
    and every other bench its bound (:class:`~perfsuite.nightly.screen.Bound`)."""
    suspects = {s.series.fullname for s in screening.suspects}
    counters = {s.series.fullname for s in screening.counters}
    rows = []
    for bound in screening.bounds:
        word = bound.word
        if bound.fullname in counters:
            word = "REGRESSION: counter rose"
        elif bound.fullname in suspects:
            found = None if confirmation is None else confirmation.outcome_of(bound.label)
            word = "SLOWER? unconfirmed: --no-confirm"
            if found is not None:
                word = f"{OUTCOME_WORDS[found.outcome]}: {found.text}"
        rows.append([bound.label, f"{bound.threshold * 100:.3g}%", pct(bound.change), word])
    return rows


def _bounds_line(screening: Screening) -> str:
    """How many benches that are no suspect were judged at their threshold, and the
    others with their bound (those without one counted)."""
    flagged = {s.series.fullname for s in screening.suspects + screening.counters}
    rest = [b for b in screening.bounds if b.fullname not in flagged]
    judged = sum(b.judged for b in rest)
    bounded = [b for b in rest if b.bound is not None and not b.judged and not b.too_noisy]
    unbounded = sum(b.bound is None for b in rest)
    parts = [f"{judged} bench(es) judged at their threshold"]
    if bounded:
        named = ", ".join(f"{b.label}: {bound_text(b.bound)}" for b in bounded)
        parts.append(f"{len(bounded)} with a bound under twice their threshold ({named})")
    if unbounded:
        parts.append(
            f"{unbounded} without a bound yet (fewer than {MIN_NIGHTLY_HISTORY} earlier runs "
            f"since their last step, and fewer than {MIN_BOUND_SAMPLES} saved rounds a side)"
        )
    return "; ".join(parts)


def _series_cell(suspect: Suspect, last: int = 6) -> str:
    points = suspect.series.points[-last:]
    return " ".join(f"{p.median * 1000:.3g}" for p in points) + " ms"


def _suspect_rows(suspects: Sequence[Suspect]) -> list[list[str]]:
    return [[s.label, f"{s.change * 100:+.1f}%", s.reason, _series_cell(s)] for s in suspects]


def verdict_line(screening: Screening, confirmation: Confirmations | None, status: int) -> str:
    if status == ExitCode.REGRESSION:
        parts = []
        if screening.counters:
            parts.append(f"exact counters rose in {len(screening.counters)}")
        if confirmation is not None and confirmation.confirmed:
            parts.append("perfsuite ab confirmed a regression")
        return "**FAILED**: " + "; ".join(parts)
    if status == ExitCode.NOT_JUDGED and screening.screened == 0:
        return "**NOTHING JUDGED**: tonight's run screened no bench"
    if status == ExitCode.NOT_JUDGED:
        why = "--no-confirm" if confirmation is None else confirmation.why_unconfirmed
        return (
            f"**UNCONFIRMED**: {len(screening.suspects)} suspect(s) could not be confirmed ({why})"
        )
    if status != ExitCode.OK:
        return "**ERROR**: the suspects could not be confirmed (perfsuite ab failed)"
    judged = _bounds_line(screening)
    if not screening.suspects:
        return f"passed: no suspect among {screening.screened} benches; {judged}"
    count = f"{len(screening.suspects)} suspect{'s' if len(screening.suspects) != 1 else ''}"
    skipped = confirmation.skipped if confirmation is not None else None
    ran = confirmation is not None and any(part.ab for part in confirmation.parts)
    if skipped and not ran:
        return f"passed: {count}, not confirmed: {skipped}; {judged}"
    if skipped:
        return (
            f"passed: {count}, perfsuite ab found no regression; the rest not confirmed: "
            f"{skipped}; {judged}"
        )
    return f"passed: {count}, perfsuite ab found no regression; {judged}"


def _outcome(ab: AbRun) -> str:
    """What the A/B's exit status says: a verdict, or its fault."""
    words = {
        ExitCode.OK: "no regression",
        ExitCode.REGRESSION: "regression confirmed",
        ExitCode.NOT_JUDGED: "nothing judged",
    }
    if ab.status is None:
        return f"fault ({ab.why_not})"
    return words[ExitCode(ab.status)] if ab.concluded else f"fault (exit {ab.status})"


def _part_lines(part: Confirmation) -> list[str]:
    """What one confirmation did, and its A/B's summary."""
    if part.ab is None:
        return [f"Not run: {part.skipped}.", ""]
    lines = [f"{code_span(shlex.join(part.ab.command))}: {_outcome(part.ab)}."]
    if part.summary:
        lines.extend(["", part.summary.replace("\n# ", "\n### ")])
    return [*lines, ""]


def culprit_words(bisection: BisectOutcome | str | None) -> str:
    """What the verdict line says of the bisection: the culprit(s), or the range."""
    if bisection is None or isinstance(bisection, str):
        return ""
    result = bisection.result
    if result.culprits:
        named = ", ".join(
            f"{bisection.infos[c.commit].short} {bisection.infos[c.commit].subject!r}"
            for c in result.culprits
        )
        return f"; culprit{'s' if len(result.culprits) > 1 else ''}: {named}"
    if result.range is not None:
        return f"; the first bad commit lies in {result.range[0][:10]}..{result.range[1][:10]}"
    return ""


def _bisection_lines(bisection: BisectOutcome | str) -> list[str]:
    """The ``## Culprit`` section: every step and the conclusion, or why none ran."""
    from perfsuite.bisect.command import markdown

    if isinstance(bisection, str):
        return ["## Culprit", "", f"Not bisected: {bisection}.", ""]
    text = markdown(bisection.result, bisection.infos, bisection.lines)
    return ["## Culprit", "", text.replace("## perfsuite bisect\n", "").strip(), ""]


def nightly_markdown(
    screening: Screening,
    confirmation: Confirmations | None,
    status: int,
    bisection: BisectOutcome | str | None = None,
) -> str:
    tonight = screening.tonight
    commit = short_sha(tonight.commit_info.get("id"))
    lines = [HEADING, ""]
    lines.append(
        f"Tonight: {code_span(tonight.name)} (commit {code_span(commit)}, "
        f"{tonight.datetime or '?'}), "
        f"{screening.screened} benches screened"
        + (
            f" against {code_span(screening.previous.name)} and earlier runs."
            if screening.previous
            else "."
        )
    )
    if screening.unscreened:
        lines.append(
            f"{len(screening.unscreened)} benches of tonight have no earlier comparable run "
            "(new, renamed, or saved on another machine or stack) and were not screened."
        )
    if screening.short_history:
        lines.append(
            f"{len(screening.short_history)} benches have too little history for a noise band "
            "and were screened against the previous run only: their bound is the interval "
            "of tonight's rounds against that run's."
        )
    verdict = verdict_line(screening, confirmation, status) + culprit_words(bisection)
    lines.extend(["", "Verdict: " + verdict, ""])
    header = ["bench", "change", "why", "recent medians"]
    if screening.counters:
        lines.extend(["## Exact counters that rose (regressions)", ""])
        lines.extend(markdown_table(_suspect_rows(screening.counters), header))
        lines.append("")
    lines.extend(["## Suspects", ""])
    if screening.suspects:
        lines.extend(markdown_table(_suspect_rows(screening.suspects), header))
    else:
        lines.append("None.")
    lines.extend(["", "## Every bench", ""])
    lines.extend(
        markdown_table(
            bench_rows(screening, confirmation), ["bench", "threshold", "tonight", "verdict"]
        )
    )
    lines.append("")
    if screening.suspects:
        lines.extend(["## Confirmation", ""])
        if confirmation is None:
            lines.extend(["Not run (--no-confirm).", ""])
        else:
            for part in confirmation.parts:
                if len(confirmation.parts) > 1:
                    names = ", ".join(part.suspects)
                    lines.extend([f"From {code_span(part.base)}: {names}.", ""])
                lines.extend(_part_lines(part))
    if bisection is not None:
        lines.extend(_bisection_lines(bisection))
    return "\n".join(lines)
